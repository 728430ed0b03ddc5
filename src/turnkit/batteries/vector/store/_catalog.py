"""The store's collections: list, create, drop, describe."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from turnkit._checks import is_int
from turnkit.batteries.vector._errors import CollectionNotFoundError, VectorStoreUsageError
from turnkit.batteries.vector.filters._declared import FieldType
from turnkit.batteries.vector.store._auto_fields import add_fields, deployer_fields, to_latest
from turnkit.batteries.vector.store._common import CollectionInfo
from turnkit.batteries.vector.store._fields import check_same_types, ensure_field_indexes
from turnkit.batteries.vector.store._index_policy import search_knobs
from turnkit.batteries.vector.store._integrity import undo_late_create
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._locks import collection_lock, heals_after_write
from turnkit.batteries.vector.store._maintenance import _set_index
from turnkit.batteries.vector.store._reads import plan, search_ef
from turnkit.batteries.vector.store._records import collection_schema
from turnkit.batteries.vector.store._scores import normalize_metric

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["create", "declare", "drop", "info", "list_"]


async def list_(store: VectorStore) -> list[str]:
    conn = await store._connection()
    names: list[str] = []
    token = None
    with translate_errors("list_collections"):
        while True:
            page = await conn.list_tables(page_token=token)
            names.extend(page.tables)
            token = page.page_token
            if not token:
                break
    return sorted(names)


async def create(
    store: VectorStore,
    name: str,
    dimension: int | None,
    metric: str | None,
    exist_ok: bool,
    fields: Mapping[str, FieldType] | None = None,
) -> None:
    """Create the collection; with ``exist_ok``, an existing one gets ``fields`` declared instead."""
    dim = dimension or (store.encoder.dimension if store.encoder is not None else None)
    if not is_int(dim, 1):
        raise VectorStoreUsageError(
            "create_collection() needs a positive dimension when the store has no encoder.",
            code="E_VECTOR_STORE_INVALID_QUERY",
            collection=name,
        )
    try:
        chosen = normalize_metric(metric) if metric else store.metric
    except ValueError as exc:
        raise VectorStoreUsageError(
            str(exc), code="E_VECTOR_STORE_INVALID_QUERY", hint="metric='cosine'", collection=name
        ) from None
    exists = VectorStoreUsageError(
        f"Collection {name!r} already exists.", code="E_VECTOR_STORE_COLLECTION_EXISTS", collection=name
    )
    async with store._open_lock:
        conn = await store._connection()
        try:
            if name in await list_(store):
                raise exists
            with translate_errors("create_collection", name):
                declared = {**store.fields, **(fields or {})}
                table = await conn.create_table(
                    name, schema=collection_schema(dim, store._new_meta(dim, chosen), declared)
                )
            # integrity: on object storage a create can land on the table another writer just made.
            if heals_after_write(store.uri) and await undo_late_create(table, name):
                raise exists
            await ensure_field_indexes(table, name, declared)
            store._collections[name] = await store._wrap(name, table)
            return
        except VectorStoreUsageError as exc:  # integrity: also when created by another writer meanwhile
            if exc.code != "E_VECTOR_STORE_COLLECTION_EXISTS" or not exist_ok:
                raise
    if fields:
        await declare(store, name, fields)  # exist_ok: an existing collection gets the fields too


async def declare(store: VectorStore, name: str, fields: Mapping[str, FieldType]) -> int:
    """Declare fields on an existing collection: migrate its rows, index the columns; rows filled."""
    coll = await store._collection(name)
    async with coll.lock, collection_lock(store.uri, name):
        await to_latest(coll, "declare fields")
        current = await store._refresh_fields(coll)
        check_same_types(name, current, fields)
        # An automatic field of the same type becomes the deployer's: writes then refuse other types.
        rows = await add_fields(coll.table, name, current, fields, auto=False, promote=coll.auto)
        coll.wrote()
        await store._refresh_fields(coll)
    return rows


async def drop(store: VectorStore, name: str, missing_ok: bool) -> bool:
    async with store._open_lock:
        conn = await store._connection()
        coll = store._collections.pop(name, None)
        store._memory.forget(name)
        tracker = store._tracker(name)
        tracker.generation += 1
        tracker.version += 1
        for task in (coll.maintenance, coll.asked.task) if coll is not None else ():
            if task is not None:
                task.cancel()
        if name not in await list_(store):
            if missing_ok:
                return False
            raise CollectionNotFoundError(f"Collection {name!r} does not exist.", collection=name)
        try:
            with translate_errors("drop_collection", name):
                await conn.drop_table(name)
        finally:
            # Another store's search may have opened the table again while it was dropped: that handle
            # would outlive the drop, and fail every search and write after a recreate.
            tracker.generation += 1
        return True


async def info(store: VectorStore, name: str) -> CollectionInfo:
    coll = await store._collection(name)
    with translate_errors("collection_info", name):
        rows = await coll.table.count_rows()
        version = await coll.table.version()
        indices = await coll.table.list_indices()
        stats = await coll.table.stats()
        unindexed = 0
        for index in indices:
            istats = await coll.table.index_stats(index.name)
            if istats is not None:
                unindexed = max(unindexed, int(istats.num_unindexed_rows))
    await _set_index(coll, indices)
    curve = coll.recall_curve
    return CollectionInfo(
        fields=deployer_fields(coll),
        auto_fields={key: kind for key, kind in coll.fields.items() if key in coll.auto},
        name=name,
        dimension=coll.dimension,
        metric=coll.metric,
        encoder=coll.encoder,
        rows=rows,
        version=version,
        indexes=tuple(f"{i.name}:{i.index_type}" for i in indices),
        unindexed_rows=unindexed,
        fragments=int(stats["fragment_stats"]["num_fragments"]),  # the async API's stats are a dict
        recall_curve=curve.points if curve else (),
        recall_queries=curve.queries if curve else 0,
        search_ef=search_knobs(coll.index_type, coll.index_rows, 10, None, None, search_ef(coll, 10))[2],
        plan=plan(store, coll),
    )
