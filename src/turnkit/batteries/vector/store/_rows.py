"""Reading a whole collection in pages, in id order, from one version of it.

A page is LanceDB's ``id > cursor ORDER BY id LIMIT n`` on a table handle
pinned to the version current when the iteration began, so writes made
meanwhile neither repeat nor hide rows, and memory holds one page.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import condition, to_sql
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store._bulk_matches import matches_from_arrow
from turnkit.batteries.vector.store._common import _contains_raw, both, newest, read_columns, trim_metadata
from turnkit.batteries.vector.store._lancedb import translate_errors

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["Snapshot", "next_page", "snapshot"]

_GET_DEFAULT = ("id", "document", "metadata", "created_at", "updated_at")


@dataclass(slots=True)
class Snapshot:
    """A collection pinned at one version, and where the iteration has got to."""

    name: str
    table: Any
    fields: dict[str, Any]
    spec: QuerySpec
    cursor: str | None = None
    done: bool = False


async def snapshot(store: VectorStore, spec: QuerySpec) -> Snapshot:
    """Pin ``spec``'s collection at its latest version (a handle of its own: the shared one keeps moving)."""
    coll = await store._collection(spec.collection)
    await store._fresh(coll)
    conn = await store._connection()
    with translate_errors("search", coll.name):
        table = await conn.open_table(coll.name)
        await table.checkout(await table.version())
    return Snapshot(coll.name, table, dict(coll.fields), spec)


async def next_page(snap: Snapshot, page_size: int) -> list[Any]:
    """The next rows by id (at most ``page_size``, one per id); ``[]`` once every row was returned.

    A full page can end inside a run of rows sharing one id (copies left by
    racing writers); that id is left for the next page, which starts at it,
    so each id is returned once, as its newest copy.
    """
    from lancedb.query import ColumnOrdering  # noqa: TID251 - inside the battery, lazily

    if snap.done:
        return []
    spec = snap.spec
    select = spec.select or _GET_DEFAULT
    # updated_at decides which copy of a repeated id is kept, asked for or not.
    columns = list(dict.fromkeys([*read_columns(select), "updated_at"]))
    after = spec.filter if snap.cursor is None else both(condition("id", "gt", snap.cursor), spec.filter)
    rows = await _read(snap, columns, after, page_size, [ColumnOrdering(column_name="id")])
    ids = rows.column("id")
    if rows.num_rows < page_size:
        snap.done = True
    elif ids[0] == ids[-1]:
        # One id fills the page: read all of its copies.
        rows = await _read(
            snap, columns, both(condition("id", "eq", ids[0].as_py()), spec.filter), None, None
        )
    else:
        rows = rows.filter(pc.not_equal(ids, ids[-1]))
    if not rows.num_rows:
        return []
    ids = rows.column("id")
    snap.cursor = ids[-1].as_py()
    if pc.count_distinct(ids).as_py() < rows.num_rows:  # copies of an id: its newest, as every read keeps
        rows = rows.take(newest(ids.to_pylist(), rows.column("updated_at").to_pylist()))
    if "*" not in select and "updated_at" not in select:
        rows = rows.drop_columns(["updated_at"])
    # No distances here, so the metric goes unused.
    return trim_metadata(matches_from_arrow(rows, "cosine"), select)


async def _read(
    snap: Snapshot, columns: list[str], where: FilterNode | None, limit: int | None, order: Any
) -> pa.Table:
    query = snap.table.query()
    if where is not None:
        query = query.where(to_sql(where, snap.fields))
    if order is not None:
        query = query.order_by(order)
    if limit is not None:
        query = query.limit(limit)
    with translate_errors("search", snap.name, raw_filter=_contains_raw(snap.spec.filter)):
        rows: pa.Table = await query.select(columns).to_arrow()
    return rows
