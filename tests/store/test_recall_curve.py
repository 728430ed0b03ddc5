"""The HNSW ef a build measures for the recall target: measured, recorded, read back, and used."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import VectorStoreUsageError, create_vector_store
from turnkit.batteries.vector.store._index_policy import default_ef
from turnkit.batteries.vector.store._recall import LADDER, RecallCurve, _distances, _exact_top


def _gaussian(n: int, dim: int, seed: int) -> np.ndarray:
    # i.i.d. directions: the hard case, where a small ef visibly loses recall.
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    vectors = _gaussian(2000, 32, seed=0)
    uri = str(tmp_path_factory.mktemp("recall"))
    # The build's curve throughout: the queries these tests ask would otherwise be measured too
    # (test_recall_from_queries.py).
    store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None, recall_from_queries=False)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")
    return uri, store, vectors


def _recall(store, vectors: np.ndarray, queries: np.ndarray, ef: int | None = None) -> float:
    hits = 0
    for q in queries:
        truth = set(np.argsort(-(vectors @ q))[:10].astype(str))
        builder = store("v").near_vector(q).select("id").limit(10)
        found = (builder if ef is None else builder.ef(ef)).search_sync()
        hits += len(truth & {m.id for m in found})
    return hits / (10 * len(queries))


def test_the_build_records_a_rising_curve_and_searches_use_its_ef(built):
    _, store, vectors = built
    info = store.collection_info_sync("v")
    efs = [ef for ef, _ in info.recall_curve]
    recalls = [recall for _, recall in info.recall_curve]
    assert efs == sorted(efs) and set(efs) <= set(LADDER)
    assert recalls[-1] >= 0.98 and recalls[0] < recalls[-1]
    assert info.search_ef == next(ef for ef, recall in info.recall_curve if recall >= 0.98)
    assert info.search_ef < default_ef(2000, 10)  # the rule spent more than the target needs
    # Held-out queries (not stored vectors) meet the target within the sample's error.
    queries = _gaussian(100, 32, seed=1)
    assert _recall(store, vectors, queries) >= 0.95
    assert _recall(store, vectors, queries) == _recall(store, vectors, queries, ef=info.search_ef)


def test_the_curve_is_read_back_by_another_store_and_serves_its_own_target(built):
    uri, store, _ = built
    measured = store.collection_info_sync("v").recall_curve
    strict = create_vector_store(uri=uri, memory_cache=None, recall_target=0.999)
    loose = create_vector_store(uri=uri, memory_cache=None, recall_target=0.5)
    assert strict.collection_info_sync("v").recall_curve == measured
    loose_ef, strict_ef = (s.collection_info_sync("v").search_ef for s in (loose, strict))
    assert loose_ef is not None and strict_ef is not None
    assert loose_ef == measured[0][0] and strict_ef >= loose_ef


def test_a_query_ef_and_a_filtered_search_keep_their_own_knobs(built):
    _, store, vectors = built
    q = vectors[7]
    assert store("v").near_vector(q).select("id").limit(1).ef(2048).search_sync()[0].id == "7"
    # The curve is of unfiltered searches; a filter keeps the row-count rule and still finds the row.
    found = store("v").near_vector(q).where("id", "7").select("id").limit(1).search_sync()
    assert [m.id for m in found] == ["7"]


def test_a_rebuild_replaces_the_curve_and_an_ivf_index_has_none(tmp_path):
    vectors = _gaussian(600, 16, seed=2)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")
    assert store.collection_info_sync("v").recall_curve
    store("v").create_index_sync("ivf_flat", num_partitions=2)
    info = store.collection_info_sync("v")
    assert info.recall_curve == () and info.search_ef is None
    fresh = create_vector_store(uri=str(tmp_path), memory_cache=None)
    assert fresh.collection_info_sync("v").recall_curve == ()


@pytest.mark.parametrize("target", [0, -0.1, 1.5, True, "0.9", float("nan")])
def test_a_bad_recall_target_is_refused(target):
    with pytest.raises(VectorStoreUsageError) as caught:
        create_vector_store(uri="memory://", recall_target=target)
    assert caught.value.code == "E_INVALID_VECTOR_STORE_CONFIG" and "recall_target" in caught.value.message


_curves = st.builds(
    lambda rows, recalls: RecallCurve(rows, tuple(zip(LADDER, sorted(recalls), strict=False))),
    st.integers(1, 10**7),
    st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=len(LADDER)),
)


@given(_curves)
def test_the_curve_round_trips_through_field_metadata(curve):
    metadata = {k.encode(): v.encode() for k, v in RecallCurve.field_metadata(curve).items()}
    assert RecallCurve.of_field(metadata) == curve


@given(_curves, st.floats(0.01, 1), st.floats(0.01, 1), st.integers(1, 500))
def test_ef_for_meets_the_target_where_measured_and_grows_with_target_rows_and_limit(curve, a, b, wanted):
    low, high = sorted((a, b))
    rows = curve.rows
    ef = curve.ef_for(low, rows, 10)
    reached = [e for e, recall in curve.points if recall >= low]
    assert ef == (reached[0] if reached else curve.points[-1][0])
    assert curve.ef_for(low, rows, 10) <= curve.ef_for(high, rows, 10)
    assert curve.ef_for(low, rows, 10) <= curve.ef_for(low, rows * 4, 10) <= LADDER[-1]
    assert curve.ef_for(low, rows, 10) <= curve.ef_for(low, rows, max(10, wanted)) <= LADDER[-1]


def test_unreadable_field_metadata_counts_as_no_curve():
    for raw in (b"", b"{", b'{"rows": 5}', b'{"rows": 5, "points": []}', b'{"rows": 5, "points": [[1]]}'):
        assert RecallCurve.of_field({b"turnkit.recall": raw}) is None
    assert RecallCurve.of_field(None) is None


@given(
    rows=st.integers(1, 60),
    dim=st.integers(1, 8),
    k=st.integers(1, 12),
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    scan=st.sampled_from([1, 3, 7, 64]),
    seed=st.integers(0, 2**16),
)
@settings(max_examples=25, deadline=None)
def test_the_batched_exact_pass_finds_lancedbs_brute_force_distances(
    tmp_path_factory, rows, dim, k, metric, scan, seed
):
    rng = np.random.default_rng(seed)
    # Small integers: ties, repeated vectors and zero distances are where a merge can slip.
    vectors = rng.integers(-3, 4, size=(rows, dim)).astype(np.float32)
    vectors[np.all(vectors == 0, axis=1), 0] = 1.0  # cosine has no direction for a zero vector
    queries = np.concatenate([vectors[: min(3, rows)], rng.normal(size=(3, dim)).astype(np.float32)])
    want = min(k, rows)

    async def run():
        import lancedb  # noqa: TID251 - LanceDB's brute-force search on a table built below the store

        db = await lancedb.connect_async(str(tmp_path_factory.mktemp("exact")))
        table = await db.create_table("t", data=[{"vector": v.tolist()} for v in vectors])
        top = await _exact_top(table, metric, queries, k, scan=scan)
        assert top is not None
        best, kept = top
        # Told to stop after the first batch, the pass ends there with no answer.
        asked: list[int] = []

        def once() -> bool:
            asked.append(1)
            return len(asked) == 1

        stopped = await _exact_top(table, metric, queries, k, scan=scan, keep_going=once)
        assert (stopped is None) == (len(asked) == 2) and len(asked) <= 2
        assert stopped is None or rows <= scan
        truths = []
        for q in queries:  # LanceDB's own brute-force search: the path the batched pass replaced
            found = (
                await table.vector_search(q)
                .distance_type(metric)
                .bypass_vector_index()
                .limit(want)
                .to_arrow()
            )
            truths.append(found.column("_distance").to_numpy())
        return best, kept, truths

    best, kept, truths = asyncio.run(run())
    for q, dists, near, truth in zip(queries, best, kept, truths, strict=True):
        np.testing.assert_allclose(dists[:want], truth, rtol=1e-5, atol=1e-5)
        assert np.all(np.isinf(dists[want:]))
        # The vectors kept are the ones at those distances.
        again = _distances(metric, q[None].astype(np.float64), near[:want].astype(np.float64))[0]
        np.testing.assert_allclose(again, dists[:want], rtol=1e-9, atol=1e-9)


def test_ladder_steps_are_at_most_a_third_apart_and_kept_by_ef_for() -> None:
    # ef_for rounds up to a multiple of 16: a step that is not one would never be chosen as measured.
    assert all(ef % 16 == 0 for ef in LADDER)
    assert all(b / a <= 4 / 3 for a, b in zip(LADDER[1:], LADDER[2:], strict=False))
    for ef in LADDER:
        curve = RecallCurve(1_000, ((ef, 0.99),))
        assert curve.ef_for(0.98, 1_000, 10) == ef
