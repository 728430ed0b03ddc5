"""Metadata-only updates: new metadata on stored records, their vectors and documents kept as they are.

The update reads each record it changes, under the collection's write locks,
and merges it back in one commit that only updates (a missing id is never
inserted). It addresses the same record an upsert of that id would: behind a
guard, the row the guard sees (its own scope's first); without one, the
unscoped record. The query's filter narrows it further.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import pyarrow as pa

from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import MAX_IN_VALUES, condition, evaluate, to_sql
from turnkit.batteries.vector.filters._sql import _sql_string
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store._auto_fields import retire_conflicts, to_latest
from turnkit.batteries.vector.store._common import _contains_raw, newest
from turnkit.batteries.vector.store._fields import with_declared
from turnkit.batteries.vector.store._guarded import (
    KEY,
    add_key_column,
    unscoped_keys,
    visible_keys,
    with_keys,
)
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._locks import collection_lock
from turnkit.batteries.vector.store._maintenance import after_write
from turnkit.batteries.vector.store._records import MAX_ID_LENGTH, collection_schema, metadata_to_json

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["check_updates", "update_metadata"]


def check_updates(updates: Any) -> dict[str, dict[str, Any]]:
    """``{id: metadata}`` checked as an upsert checks records; raises naming the first bad one."""
    if not isinstance(updates, Mapping):
        raise VectorStoreUsageError(
            f"update_metadata() takes a mapping of id to metadata, not {type(updates).__name__}.",
            code="E_VECTOR_STORE_INVALID_QUERY",
            hint='Example: update_metadata({"doc-1": {"reviewed": True}}).',
        )
    checked: dict[str, dict[str, Any]] = {}
    for index, (rid, metadata) in enumerate(updates.items()):
        if not isinstance(rid, str) or not rid:
            raise VectorStoreUsageError(
                f"Record {index}: ids must be non-empty strings, got {rid!r}.",
                code="E_INVALID_VECTOR_RECORD",
                index=index,
            )
        metadata_to_json(index, rid, metadata)
        checked[rid] = dict(metadata)
    return checked


async def update_metadata(
    store: VectorStore,
    spec: QuerySpec,
    updates: dict[str, dict[str, Any]],
    *,
    merge: bool,
    guard: FilterNode | None,
) -> int:
    # An id no record can have (see prepare_records) is simply not found.
    wanted = {rid: meta for rid, meta in updates.items() if len(rid) <= MAX_ID_LENGTH and "\x00" not in rid}
    coll = await store._collection(spec.collection)
    if not wanted:
        return 0
    async with coll.lock, collection_lock(store.uri, coll.name) as across:
        await store._fresh(coll)
        if across:  # integrity: other processes' commits too
            await to_latest(coll, "upsert")
        fields = await store._refresh_fields(coll)
        if guard is not None and not coll.keyed:  # guard: ids are scoped by guard, as upsert does
            await add_key_column(coll.table, coll.name)
            fields = await store._refresh_fields(coll)
        current = await _current_rows(coll, spec, list(wanted), guard, fields)
        if current is None:
            return 0
        data, ids, metadata = _changed(coll, current, wanted, merge=merge, guard=guard)
        fields = await retire_conflicts(store, coll, metadata, "upsert")
        data = with_declared(data, ids, metadata, fields)
        if coll.keyed:
            data = with_keys(data, current[KEY].combine_chunks())
        merge_on = KEY if coll.keyed else "id"
        with translate_errors("upsert", coll.name):
            result = await coll.table.merge_insert(merge_on).when_matched_update_all().execute(data)
    after_write(store, coll)
    return int(result.num_updated_rows)


async def _current_rows(
    coll: _Collection,
    spec: QuerySpec,
    ids: list[str],
    guard: FilterNode | None,
    fields: Mapping[str, Any],
) -> pa.Table | None:
    """The row each id's update reaches (the newest copy of its key), inside the query's filter."""
    columns = ["id", "vector", "document", "metadata", "created_at", "updated_at"]
    if coll.keyed:
        columns.append(KEY)
    narrow = None if spec.filter is None else to_sql(spec.filter, fields)
    parts: list[pa.Table] = []
    for start in range(0, len(ids), MAX_IN_VALUES):
        chunk = ids[start : start + MAX_IN_VALUES]
        if guard is not None:
            keys = await visible_keys(coll.table, coll.name, chunk, guard, to_sql(guard, fields))
            if not keys:
                continue
            where = f"{KEY} IN ({', '.join(_sql_string(k) for k in keys.values())})"
        elif coll.keyed:
            keys_array = unscoped_keys(pa.array(chunk, pa.string()))
            where = f"{KEY} IN ({', '.join(_sql_string(k) for k in keys_array.to_pylist())})"
        else:
            where = to_sql(condition("id", "in", chunk))
        if narrow is not None:
            where = f"({where}) AND ({narrow})"
        with translate_errors("upsert", coll.name, raw_filter=_contains_raw(spec.filter)):
            parts.append(await coll.table.query().where(where).select(columns).to_arrow())
    if not parts:
        return None
    rows = pa.concat_tables(parts)
    keep = newest(rows[KEY if coll.keyed else "id"].to_pylist(), rows["updated_at"].to_pylist())
    return rows.take(keep) if keep else None


def _changed(
    coll: _Collection,
    rows: pa.Table,
    updates: Mapping[str, dict[str, Any]],
    *,
    merge: bool,
    guard: FilterNode | None,
) -> tuple[pa.Table, list[str], list[dict[str, Any]]]:
    """The rows as they will be written: new metadata and ``updated_at``, the rest as stored."""
    ids: list[str] = rows["id"].to_pylist()
    documents = rows["document"].to_pylist()
    metadata: list[dict[str, Any]] = []
    for index, (rid, raw) in enumerate(zip(ids, rows["metadata"].to_pylist(), strict=True)):
        old = orjson.loads(raw) if raw is not None else {}
        new = {**old, **updates[rid]} if merge else dict(updates[rid])
        record = {"id": rid, "document": documents[index], "metadata": new}
        if guard is not None and not evaluate(guard, record):  # guard: a row may not leave it
            raise VectorStoreUsageError(
                f"Record {rid!r}: the new metadata would take it outside the write guard; "
                "nothing was written.",
                code="E_INVALID_VECTOR_RECORD",
                hint="Keep the keys the guard requires.",
                index=index,
                record_id=rid,
            )
        metadata.append(new)
    schema = collection_schema(coll.dimension, {})
    now = pa.array([datetime.now(UTC)] * len(ids), pa.timestamp("us", tz="UTC"))
    data = pa.Table.from_arrays(
        [
            rows["id"],
            rows["vector"].cast(schema.field("vector").type),
            rows["document"],
            pa.array([orjson.dumps(m).decode() for m in metadata], pa.string()).cast(pa.json_()),
            rows["created_at"].cast(schema.field("created_at").type),
            now,
        ],
        schema=schema,
    )
    return data, ids, metadata
