"""Reading a whole collection in pages, in id order, from one version of it.

A page is LanceDB's ``id > cursor ORDER BY id LIMIT n`` on a table handle
pinned to the version current when the iteration began, so writes made
meanwhile neither repeat nor hide rows, and memory holds one page.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from turnkit.batteries.vector.filters._ast import And, FilterNode
from turnkit.batteries.vector.filters._core import condition, to_sql
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store._common import _contains_raw
from turnkit.batteries.vector.store._integrity import dedupe_matches
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._reads import _columns as columns_of
from turnkit.batteries.vector.store._reads import _trim_metadata
from turnkit.batteries.vector.store._records import match_from_row

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
    columns = _columns(select)
    by_id = [ColumnOrdering(column_name="id")]
    rows = await _read(snap, columns, _after(snap.cursor, spec.filter), page_size, by_id)
    if len(rows) < page_size:
        snap.done = True
    elif rows[0]["id"] == rows[-1]["id"]:
        # One id fills the page: read all of its copies.
        rows = await _read(snap, columns, _only(rows[0]["id"], spec.filter), None, None)
    else:
        last = rows[-1]["id"]
        rows = [row for row in rows if row["id"] != last]
    if not rows:
        return []
    snap.cursor = rows[-1]["id"]
    matches = dedupe_matches([match_from_row(row, None) for row in rows])
    return _trim(matches, select)


def _after(cursor: str | None, where: FilterNode | None) -> FilterNode | None:
    if cursor is None:
        return where
    node: FilterNode = condition("id", "gt", cursor)
    return node if where is None else And((node, where))


def _only(record_id: str, where: FilterNode | None) -> FilterNode:
    node: FilterNode = condition("id", "eq", record_id)
    return node if where is None else And((node, where))


async def _read(
    snap: Snapshot, columns: list[str], where: FilterNode | None, limit: int | None, order: Any
) -> list[dict[str, Any]]:
    query = snap.table.query()
    if where is not None:
        query = query.where(to_sql(where, snap.fields))
    if order is not None:
        query = query.order_by(order)
    if limit is not None:
        query = query.limit(limit)
    with translate_errors("search", snap.name, raw_filter=_contains_raw(snap.spec.filter)):
        rows: list[dict[str, Any]] = await query.select(columns).to_list()
    return rows


def _columns(select: tuple[str, ...]) -> list[str]:
    # updated_at decides which copy of a repeated id is kept, asked for or not.
    wanted = columns_of(select)
    return wanted if "updated_at" in wanted else [*wanted, "updated_at"]


def _trim(matches: list[Any], select: tuple[str, ...]) -> list[Any]:
    if "*" not in select and "updated_at" not in select:
        matches = [replace(m, updated_at=None) for m in matches]
    return _trim_metadata(matches, select)
