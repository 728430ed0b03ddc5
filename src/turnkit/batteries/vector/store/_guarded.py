r"""Guarded writes: each write guard stores its records under its own ids.

A record's identity is its key (the hidden ``_key`` column, once a collection
has one): ``"\x1f<id>"`` for a record written without a guard, ``"<scope>\x1f<id>"``
for one a guarded write inserted, the scope being 16 hex digits of the
guard's hash. No id can spell another key: an unscoped key starts with the
separator, a scoped one with its scope's fixed-length prefix. So a tenant
behind a guard stores ``"r1"`` and reads it back whether or not another
tenant holds ``"r1"``: a write tells it nothing about other tenants' ids, and
never touches their rows.

A guarded write updates the record its guard can see under that id (its own
scope's first, else the newest row inside the guard), and inserts one in its
scope otherwise. When its scope's key is held by a row the guard does not
match (a broader guard moved that record out), the new record takes a fresh
key instead, so the merge can never reach a row outside the guard. A
collection gets the column from the first guarded write that reaches it
(the unscoped key of its id for each row already there).

The key lookup and the commit run under the collection's write locks (one
writer per collection in a process, and across processes on a local disk).
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Any, Final

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import MAX_IN_VALUES, condition, evaluate, to_sql
from turnkit.batteries.vector.filters._sql import _sql_string
from turnkit.batteries.vector.store._common import _KEY, recency
from turnkit.batteries.vector.store._lancedb import translate_errors

__all__ = [
    "KEY",
    "add_key_column",
    "check_inside_guard",
    "guarded_keys",
    "scope_of",
    "unscoped_keys",
    "visible_keys",
    "with_keys",
]

KEY: Final = _KEY
_SEP: Final = "\x1f"


def scope_of(guard: FilterNode) -> str:
    """The id scope of a guard: the same guard (the same filter tree) in any process gives the same scope."""
    return hashlib.sha256(repr(guard).encode()).hexdigest()[:16]


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
            raise VectorStoreUsageError(
                f"Record {index} (id {rid!r}) is outside the write guard.",
                code="E_INVALID_VECTOR_RECORD",
                hint="Give it the metadata the guard requires.",
                index=index,
                record_id=rid,
            )


async def add_key_column(table: Any, name: str) -> None:
    """Give a collection its key column, each row's unscoped key (computed: no row is rewritten)."""
    with translate_errors("upsert", name):
        await table.add_columns({KEY: "concat(chr(31), id)"})


def unscoped_keys(ids: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The keys of records written without a guard."""
    return pc.binary_join_element_wise("", ids, _SEP)


def with_keys(data: pa.Table, keys: pa.Array | None = None) -> pa.Table:
    """``data`` with its key column: ``keys``, or the unscoped keys of its ids (a write without a guard)."""
    return data.append_column(pa.field(KEY, pa.string()), unscoped_keys(data["id"]) if keys is None else keys)


def _own_keys(ids: list[str], guard: FilterNode) -> dict[str, str]:
    scope = scope_of(guard)
    return {rid: f"{scope}{_SEP}{rid}" for rid in ids}


async def visible_keys(
    table: Any, name: str, ids: list[str], guard: FilterNode, guard_sql: str
) -> dict[str, str]:
    """The key of the record a guarded write of each id reaches, for the ids the guard sees a row of.

    Its own scope's row first, else the newest row inside the guard; an id
    the guard sees no row of is left out. Call it holding the collection's
    write locks, on a collection that has the key column.
    """
    own = _own_keys(ids, guard)
    chosen: dict[str, tuple[tuple[bool, tuple[bool, Any]], str]] = {}  # id -> (rank, key)
    for start in range(0, len(ids), MAX_IN_VALUES):
        chunk = ids[start : start + MAX_IN_VALUES]
        where = f"({to_sql(condition('id', 'in', chunk))}) AND ({guard_sql})"
        with translate_errors("upsert", name):
            rows = await table.query().where(where).select(["id", KEY, "updated_at"]).to_list()
        for row in rows:
            key = row[KEY] if row[KEY] is not None else _SEP + row["id"]
            rank = (key == own[row["id"]], recency(row["updated_at"]))
            best = chosen.get(row["id"])
            if best is None or rank > best[0]:
                chosen[row["id"]] = (rank, key)
    return {rid: best[1] for rid, best in chosen.items()}


async def guarded_keys(table: Any, name: str, ids: list[str], guard: FilterNode, guard_sql: str) -> pa.Array:
    """The key each id of a guarded write lands on.

    Call it holding the collection's write locks, on the latest version of a
    collection that has the key column. The choice depends only on rows
    inside the guard; a key outside it is only checked for being taken, and
    either way the record is inserted.
    """
    own = _own_keys(ids, guard)
    chosen = await visible_keys(table, name, ids, guard, guard_sql)
    new = [own[rid] for rid in ids if rid not in chosen]
    taken: set[str] = set()
    for start in range(0, len(new), MAX_IN_VALUES):
        listed = ", ".join(_sql_string(k) for k in new[start : start + MAX_IN_VALUES])
        with translate_errors("upsert", name):
            rows = await table.query().where(f"{KEY} IN ({listed})").select([KEY]).to_list()
        taken.update(row[KEY] for row in rows)
    # A scope's key held outside the guard is never merged into: the record takes a fresh key.
    fresh = {key: f"{key}{_SEP}{uuid.uuid4().hex}" for key in taken}
    keys = [chosen[rid] if rid in chosen else fresh.get(own[rid], own[rid]) for rid in ids]
    return pa.array(keys, pa.string())
