"""Collection maintenance: compaction after writes, repair, automatic fields, and vector indexes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector.store._auto_fields import declare_auto, to_latest
from turnkit.batteries.vector.store._common import log
from turnkit.batteries.vector.store._fields import ensure_field_indexes
from turnkit.batteries.vector.store._hybrid import note_fts_whole
from turnkit.batteries.vector.store._index_policy import auto_index, vector_index
from turnkit.batteries.vector.store._integrity import claim_maintenance, remove_duplicates, retry_conflicts
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._locks import collection_lock, local_root
from turnkit.batteries.vector.store._recall import RecallCurve, measure_recall_curve

__all__ = [
    "after_write",
    "background_optimize",
    "create_index",
    "optimize_if_unindexed",
    "repair",
    "run_optimize",
]


if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore


def after_write(store: VectorStore, coll: _Collection) -> None:
    coll.wrote()
    coll.writes += 1
    policy = store.auto_optimize
    if policy is None or (coll.maintenance is not None and not coll.maintenance.done()):
        return
    if coll.writes >= policy.every_writes:
        task = background_optimize(store, coll)
    elif policy.unindexed_rows is not None and coll.index_type is not None:
        task = optimize_if_unindexed(store, coll, policy.unindexed_rows)
    else:
        return
    # integrity: one maintenance task per collection per process, whichever store wrote.
    coll.maintenance = claim_maintenance((store._db_key, coll.name), task)


async def optimize_if_unindexed(store: VectorStore, coll: _Collection, threshold: int) -> None:
    try:
        indices = await coll.table.list_indices()
        for index in indices:
            stats = await coll.table.index_stats(index.name)
            if stats is not None and stats.num_unindexed_rows >= threshold:
                await run_optimize(store, coll)
                return
    except Exception:  # maintenance must never break the write path
        log.exception("turnkit: checking collection %r for maintenance failed", coll.name)


async def background_optimize(store: VectorStore, coll: _Collection) -> None:
    try:
        await run_optimize(store, coll)
    except Exception:
        log.exception("turnkit: background optimize of collection %r failed", coll.name)


async def run_optimize(store: VectorStore, coll: _Collection, *, repair: bool = False) -> int:
    async with coll.lock:
        removed = 0
        if repair:  # integrity: row ids stay put only while no other process commits
            async with collection_lock(store.uri, coll.name):
                await to_latest(coll, "optimize")
                removed = await remove_duplicates(coll.table, coll.name)
        # integrity: compact the latest version; a commit from another process meanwhile
        # is a conflict to retry, not a failure (compaction can take minutes: no file lock).
        await to_latest(coll, "optimize")
        with translate_errors("optimize", coll.name):
            await retry_conflicts(coll.table.optimize, coll.table.checkout_latest)
        coll.wrote()
        coll.writes = 0
        await store._refresh_fields(coll)
        await ensure_field_indexes(coll.table, coll.name, coll.fields)  # e.g. lost to a race at creation
        # integrity: only where every writer takes the collection's lock (a local disk, or memory):
        # an unlocked writer could land rows without the new column between the read and the mark.
        if store.auto_fields and (local_root(store.uri) is not None or store.uri.startswith("memory://")):
            await declare_auto(store, coll)
        await _set_index(coll, await coll.table.list_indices())
    return removed


async def repair(store: VectorStore, name: str) -> int:
    return await run_optimize(store, await store._collection(name), repair=True)


async def create_index(store: VectorStore, name: str, index_type: str, params: Mapping[str, Any]) -> str:
    from lancedb.index import HnswSq, IvfFlat, IvfPq  # noqa: TID251 - inside the battery, lazily

    coll = await store._collection(name)
    if index_type == "auto":
        index_type, auto_params = auto_index(await coll.table.count_rows())
        params = {**auto_params, **params}
    configs = {"ivf_flat": IvfFlat, "ivf_pq": IvfPq, "hnsw_sq": HnswSq}
    if index_type not in configs:
        raise VectorStoreUsageError(
            f"Unknown index type {index_type!r}; use auto, ivf_flat, ivf_pq or hnsw_sq.",
            code="E_VECTOR_STORE_INVALID_QUERY",
            collection=name,
        )
    try:
        config = configs[index_type](distance_type=coll.metric, **params)
    except TypeError as exc:
        raise VectorStoreUsageError(
            f"Bad parameters for {index_type}: {exc}", code="E_VECTOR_STORE_INVALID_QUERY", collection=name
        ) from exc
    async with coll.lock:
        with translate_errors("create_index", name):
            await coll.table.create_index("vector", config=config, replace=True)
            coll.wrote()
            await _set_index(coll, await coll.table.list_indices())
            if index_type == "hnsw_sq" and coll.index_type is not None:
                curve = await measure_recall_curve(coll.table, coll.metric, coll.index_type, coll.index_rows)
                metadata = RecallCurve.field_metadata(curve)  # replaces the last build's
                await coll.table.update_field_metadata({"path": "vector", "metadata": metadata})
                coll.wrote()
                coll.recorded_curve = curve
                await note_fts_whole(coll)  # the curve's commit is a version of its own
    return index_type


async def _set_index(coll: _Collection, indices: Iterable[Any]) -> None:
    await note_fts_whole(coll)
    index = vector_index(indices)
    coll.index_type = None if index is None else str(index.index_type)
    coll.index_rows = int(await coll.table.count_rows()) if coll.index_type is not None else 0
