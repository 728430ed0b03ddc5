"""Searches and reads of a collection: the vector search, the in-memory path, counts and gets."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from turnkit.batteries.vector._errors import VectorStoreRuntimeError, VectorStoreUsageError
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.filters._core import MAX_IN_VALUES, condition, to_sql
from turnkit.batteries.vector.query._spec import NearId, NearVector, QuerySpec
from turnkit.batteries.vector.ranking._mmr import diversify
from turnkit.batteries.vector.store._asked import note
from turnkit.batteries.vector.store._bulk_matches import matches_from_arrow
from turnkit.batteries.vector.store._common import _contains_raw, both, read_columns, trim_metadata
from turnkit.batteries.vector.store._freshness import check_due
from turnkit.batteries.vector.store._hybrid import hybrid_search, query_vector
from turnkit.batteries.vector.store._index_policy import apply_knobs, search_knobs
from turnkit.batteries.vector.store._integrity import dedupe_matches
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._planner import SearchPlan
from turnkit.batteries.vector.store._records import MAX_ID_LENGTH, match_from_row
from turnkit.batteries.vector.store._scores import distance_bound

__all__ = ["count", "get", "knobs", "mmr_search", "plan", "search", "search_now", "search_now_async"]


if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore


async def search(store: VectorStore, spec: QuerySpec, vector: np.ndarray[Any, Any] | None) -> list[Any]:
    # Diversity and hybrid fusion wrap this same search (see ranking/_mmr.py, store/_hybrid.py).
    if spec.mmr is not None:
        return await mmr_search(store, spec, vector)
    coll = await store._collection(spec.collection)
    if spec.hybrid is not None:
        return await hybrid_search(store, coll, spec, vector)
    select = spec.select or ("*",)
    columns = read_columns(select)
    where = None if spec.filter is None else to_sql(spec.filter, coll.fields)
    vector = await query_vector(store, coll, spec, vector)
    if vector is not None:
        if len(vector) != coll.dimension:
            raise VectorStoreUsageError(
                f"The query vector has {len(vector)} dimensions; "
                f"collection {coll.name!r} has {coll.dimension}.",
                code="E_VECTOR_STORE_DIMENSION_MISMATCH",
                collection=coll.name,
                expected=coll.dimension,
            )
        if coll.metric == "cosine" and not np.any(vector):
            # LanceDB answers [] for it; upsert refuses such vectors for the same reason.
            raise VectorStoreUsageError(
                "The query vector is all zeros, which has no direction under the cosine metric.",
                code="E_VECTOR_STORE_INVALID_QUERY",
                hint="Search with a non-zero vector (an encoder never returns a zero vector).",
                collection=coll.name,
            )
        if not isinstance(spec.near, NearId):  # a stored row's vector would overstate recall
            note(store, coll, vector)
        # Small collections, or where the exact pass was measured cheaper than the index (`plan`):
        # an exact search from memory (None: LanceDB answers). The copy is keyed by the tracker's
        # version, which other processes' commits bump too (see _freshness.py).
        plan(store, coll)
        cached = await store._memory.search(
            coll.name, coll.table, coll.seen_version, coll.dimension, coll.metric, spec, vector, columns
        )
        if cached is not None:
            return _finish(cached, spec, select)
        query = _vector_query(store, coll, spec, vector, columns, where)
    else:
        query = coll.table.query()
        if where is not None:
            query = query.where(where)
        query = query.select(columns).limit(spec.limit)
        if spec.offset:
            query = query.offset(spec.offset)
    matches = await _answer(coll, query, _contains_raw(spec.filter))
    store._memory.after_search(coll.name)
    return _finish(matches, spec, select)


async def _answer(coll: _Collection, query: Any, raw: bool) -> list[VectorMatch]:
    """LanceDB's matches for ``query``, on whichever loop awaits them."""
    with translate_errors("search", coll.name, raw_filter=raw):
        result = await query.to_arrow()
    return matches_from_arrow(result, coll.metric)


def _vector_query(
    store: VectorStore,
    coll: _Collection,
    spec: QuerySpec,
    vector: np.ndarray[Any, Any],
    columns: list[str],
    where: str | None,
) -> Any:
    """LanceDB's query for a vector search (not yet run)."""
    query = (
        coll.table.vector_search(np.asarray(vector, dtype=np.float32))
        .column("vector")
        .distance_type(coll.metric)
        .limit(spec.limit)
    )
    if spec.offset:
        query = query.offset(spec.offset)
    query = knobs(query, coll, spec)
    upper = math.inf if spec.max_distance is None else spec.max_distance
    if spec.min_score is not None:
        upper = min(upper, distance_bound(coll.metric, spec.min_score))
    if math.isfinite(upper):
        # distance_range's bound is exclusive and compared in float32, and a score's bound loses bits going
        # back to a distance; widen it a little here, the exact thresholds are re-checked below.
        query = query.distance_range(upper_bound=upper + 1e-5 * (1.0 + abs(upper)))
    if where is not None:
        query = query.where(where)
        if not spec.prefiltered:
            query = query.postfilter()
    return query.select([*columns, "_distance"])


async def search_now_async(store: VectorStore, spec: QuerySpec) -> list[Any] | None:
    """`search_now` for async callers, and LanceDB's answer on their loop when memory has no part in it.

    Memory answers small products inline and larger ones off the caller's
    loop. A search that LanceDB answers with nothing for memory to do after it
    (no copy to read or drop: the cache is off, or the collection is known to
    be too big at this version) runs on the caller's loop too. LanceDB's
    futures complete on whichever loop awaits them, so the hop to turnkit's
    loop and back would only add two thread wake-ups to each search.
    """
    current = _current(store, spec)
    if current is None:
        return None
    coll, vector, select, snapshot = current
    if snapshot is not None:
        found = await store._memory.answer(snapshot, spec, vector, read_columns(select))
        if found is not None:
            note(store, coll, vector)
            return _finish(found, spec, select)
    elif not store._memory.nothing_due(coll.name, coll.table, coll.seen_version, spec):
        return None  # the loop reads the copy (or drops a stale one) around LanceDB's answer
    where = None if spec.filter is None else to_sql(spec.filter, coll.fields)
    query = _vector_query(store, coll, spec, vector, read_columns(select), where)
    try:
        found = await _answer(coll, query, _contains_raw(spec.filter))
    except VectorStoreRuntimeError as exc:
        if exc.code != "E_VECTOR_STORE_SEARCH_FAILED" or store.read_consistency_interval is None:
            raise
        # Perhaps another process replaced the table: the loop's path looks and reads again.
        coll.checked_at = -math.inf
        return None
    note(store, coll, vector)
    return _finish(found, spec, select)


def search_now(store: VectorStore, spec: QuerySpec) -> list[Any] | None:
    """A search answered from memory in the caller's thread, or ``None`` to take the loop path."""
    current = _current(store, spec)
    if current is None:
        return None
    coll, vector, select, snapshot = current
    vector = np.ascontiguousarray(vector, dtype=np.float32)
    found = None if snapshot is None else snapshot.search(spec, vector, read_columns(select))
    if found is None:
        return None
    note(store, coll, vector)
    return _finish(found, spec, select)


def _current(store: VectorStore, spec: QuerySpec) -> tuple[_Collection, Any, tuple[str, ...], Any] | None:
    """The open collection, query vector, selection and loaded copy (if any) when the loop is not needed.

    Only when nothing needs the loop: a vector query on an open, current
    collection, with no look for other processes' commits due (a look is async).
    """
    near = spec.near
    if not isinstance(near, NearVector) or spec.mmr is not None or spec.hybrid is not None:
        return None
    coll = store._collections.get(spec.collection)
    if (
        coll is None
        or check_due(store, coll)
        or coll.generation != coll.tracker.generation
        or coll.seen_version != coll.tracker.version
        or len(near.vector) != coll.dimension
        or (coll.metric == "cosine" and not near.vector.any())  # `_search` explains it
    ):
        return None
    plan(store, coll)
    snapshot = store._memory.loaded(coll.name, coll.table, coll.seen_version, spec)
    return coll, near.vector, spec.select or ("*",), snapshot


def plan(store: VectorStore, coll: _Collection) -> SearchPlan | None:
    """The planner's path for ``coll``'s unfiltered searches (``_planner.py``), kept by the memory tier."""
    return store._memory.plan(
        coll.name,
        coll.index_rows,
        coll.dimension,
        coll.metric,
        coll.recall_curve,
        coll.recall_target,
        store.recall_from_queries,
    )


def search_ef(coll: _Collection, wanted: int, filtered: bool = False) -> int | None:
    """The HNSW ``ef`` the store's recall target needs, from the curve measured at the build (else None).

    The curve is of unfiltered searches; a filtered search walks past the rows
    its filter drops, so it keeps the row-count rule (`search_knobs`).
    """
    if coll.recall_curve is None or filtered:
        return None
    return coll.recall_curve.ef_for(coll.recall_target, coll.index_rows, wanted)


def knobs(query: Any, coll: _Collection, spec: QuerySpec) -> Any:
    # Defaults that hold recall@10 as the collection grows (see _index_policy.py, docs/store.md).
    wanted = spec.limit + spec.offset
    ef = search_ef(coll, wanted, spec.filter is not None) if spec.ef is None else spec.ef
    chosen = search_knobs(coll.index_type, coll.index_rows, wanted, spec.nprobes, spec.refine_factor, ef)
    return apply_knobs(query, chosen)


async def count(store: VectorStore, spec: QuerySpec) -> int:
    coll = await store._collection(spec.collection)
    where = None if spec.filter is None else to_sql(spec.filter, coll.fields)
    with translate_errors("search", coll.name, raw_filter=_contains_raw(spec.filter)):
        return int(await coll.table.count_rows(where))


async def get(store: VectorStore, spec: QuerySpec, ids: list[str]) -> list[Any]:
    if not ids:
        return []
    coll = await store._collection(spec.collection)
    select = spec.select or ("id", "document", "metadata", "created_at", "updated_at")
    # An id no record can have (see prepare_records) is simply not found; a filter would refuse it.
    unique = [i for i in dict.fromkeys(ids) if len(i) <= MAX_ID_LENGTH and "\x00" not in i]
    by_id: dict[str, Any] = {}
    # An IN list is capped (MAX_IN_VALUES); long id lists are read in chunks.
    for start in range(0, len(unique), MAX_IN_VALUES):
        chunk = unique[start : start + MAX_IN_VALUES]
        node = both(condition("id", "in", chunk), spec.filter)
        # integrity: no limit, so an id held twice cannot crowd another out.
        query = coll.table.query().where(to_sql(node, coll.fields)).select(read_columns(select))
        with translate_errors("search", coll.name, raw_filter=_contains_raw(spec.filter)):
            rows = await query.to_list()
        for match in dedupe_matches([match_from_row(row, None) for row in rows]):
            by_id[match.id] = match
    return trim_metadata([by_id[i] for i in unique if i in by_id], select)


def _finish(matches: list[Any], spec: QuerySpec, select: Iterable[str]) -> list[Any]:
    # integrity: one match per id, even on a table that holds duplicates from older writes.
    matches = dedupe_matches(matches)
    # The thresholds are exact here whichever path found the matches.
    if spec.min_score is not None:
        matches = [m for m in matches if m.score is not None and m.score >= spec.min_score]
    if spec.max_distance is not None:
        matches = [m for m in matches if m.distance is not None and m.distance <= spec.max_distance]
    return trim_metadata(matches, select)


async def mmr_search(
    store: VectorStore, spec: QuerySpec, vector: np.ndarray[Any, Any] | None
) -> list[VectorMatch]:
    """Over-fetch ``spec`` (it has ``spec.mmr``) with vectors, diversify, page, drop unasked vectors."""
    mmr = spec.mmr
    assert mmr is not None
    select = spec.select or ("*",)
    wants_vector = "*" in select or "vector" in select
    leg = replace(
        spec,
        mmr=None,
        limit=mmr.pool(spec.limit, spec.offset),
        offset=0,
        select=select if wants_vector else (*select, "vector"),
    )
    candidates = await search(store, leg, vector)
    picked = diversify(candidates, spec.limit + spec.offset, lambda_mult=mmr.lambda_mult)[spec.offset :]
    return picked if wants_vector else [replace(m, vector=None) for m in picked]
