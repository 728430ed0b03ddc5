"""Guarded writes: a writer behind a guard touches only rows the guard matches.

The check and the commit run under the collection's write locks (one writer
per collection in a process, and across processes on a local disk), so no
other turnkit writer can slip a row in between. A record whose id is held by
a row outside the guard is left out and reported like any other write: the
writer cannot tell whether some other tenant holds that id.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from turnkit.batteries.vector._errors import InvalidVectorRecordError
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import MAX_IN_VALUES, condition, evaluate, to_sql
from turnkit.batteries.vector.store._lancedb import translate_errors

__all__ = ["check_inside_guard", "drop_outside_guard"]


def check_inside_guard(batch: Any, guard: FilterNode) -> None:
    """Refuse a batch holding a record the guard would not match (it could never read it back)."""
    for index, rid in enumerate(batch.ids):
        raw = batch.metadata_json[index]
        record = {
            "id": rid,
            "document": batch.documents[index],
            "metadata": orjson.loads(raw) if raw is not None else None,
        }
        if not evaluate(guard, record):
            raise InvalidVectorRecordError(
                f"Record {index} (id {rid!r}) is outside the write guard.",
                hint="Give it the metadata the guard requires.",
                index=index,
                record_id=rid,
            )


async def drop_outside_guard(table: Any, name: str, data: pa.Table, guard_sql: str) -> tuple[pa.Table, int]:
    """``data`` without records whose id a row outside the guard holds, and how many went.

    Call it holding the collection's write locks, on the latest version.
    """
    ids = data["id"].to_pylist()
    taken: set[str] = set()
    for start in range(0, len(ids), MAX_IN_VALUES):
        chunk = ids[start : start + MAX_IN_VALUES]
        where = f"({to_sql(condition('id', 'in', chunk))}) AND NOT ({guard_sql})"
        with translate_errors("upsert", name):
            rows = await table.query().where(where).select(["id"]).to_list()
        taken.update(row["id"] for row in rows)
    if not taken:
        return data, 0
    keep = pc.invert(pc.is_in(data["id"], value_set=pa.array(sorted(taken), pa.string())))
    return data.filter(keep), len(taken)
