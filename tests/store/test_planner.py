"""The planner: unfiltered searches go to memory or the HNSW index by measured cost, and say so."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from typing import Any

import lancedb  # noqa: TID251 - a curve's costs written as an earlier build (or none) would have
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit._aio import loop
from turnkit.batteries.vector import MemoryCache, create_vector_store
from turnkit.batteries.vector.store import _memory_index, _planner
from turnkit.batteries.vector.store._recall import RecallCurve


def _vectors(n: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


async def _curve(uri: str) -> RecallCurve | None:
    table = await (await lancedb.connect_async(uri)).open_table("v")
    return RecallCurve.of_field((await table.schema()).field("vector").metadata)


def _record_costs(uri: str, seconds: float | None) -> None:
    """Record the built index's curve with every search costing ``seconds`` (``None``: as before costs)."""

    async def write() -> None:
        table = await (await lancedb.connect_async(uri)).open_table("v")
        curve = RecallCurve.of_field((await table.schema()).field("vector").metadata)
        assert curve is not None
        costs = () if seconds is None else tuple(seconds for _ in curve.points)
        metadata = RecallCurve.field_metadata(RecallCurve(curve.rows, curve.points, costs))
        await table.update_field_metadata({"path": "vector", "metadata": metadata})

    asyncio.run(write())


def _build(uri: str, vectors: np.ndarray) -> None:
    store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    vectors = _vectors(800, 16, seed=0)
    uri = str(tmp_path_factory.mktemp("planner"))
    _build(uri, vectors)
    return uri, vectors


def test_the_build_measures_a_cost_for_each_ef_on_its_curve(built):
    uri, _ = built
    curve = asyncio.run(_curve(uri))
    assert curve is not None and len(curve.costs) == len(curve.points)
    assert all(c > 0 for c in curve.costs)
    plan = create_vector_store(uri=uri).collection_info_sync("v").plan
    assert plan is not None and plan.path in ("memory", "index") and plan.reason
    assert plan.memory_ms is not None and plan.memory_ms > 0 and plan.index_ms == curve.cost_at(plan.ef) * 1e3


def test_a_cheaper_index_answers_unfiltered_searches_and_memory_keeps_filtered_ones(built):
    uri, vectors = built
    _record_costs(uri, 1e-9)
    store = create_vector_store(uri=uri)
    store("v").near_vector(vectors[3]).limit(5).search_sync()
    (plan,) = store.cache_stats().plans
    assert (plan.collection, plan.path) == ("v", "index")
    assert "index is estimated" in plan.reason and plan.index_ms is not None and plan.memory_ms is not None
    assert plan.index_ms < plan.memory_ms
    assert store.cache_stats().collections == ()  # the index answered: no copy was read
    assert store.collection_info_sync("v").plan == plan
    found = store("v").near_vector(vectors[3]).where("id", "in", ["3", "4"]).limit(2).search_sync()
    assert [m.id for m in found][0] == "3"
    assert [c.name for c in store.cache_stats().collections] == ["v"]  # a filtered search: memory


def test_a_cheaper_exact_pass_answers_from_memory_with_exact_results(built):
    uri, vectors = built
    _record_costs(uri, 10.0)
    store = create_vector_store(uri=uri)
    query = _vectors(1, 16, seed=5)[0]
    found = store("v").near_vector(query).select("id").limit(10).search_sync()
    (plan,) = store.cache_stats().plans
    assert plan.path == "memory" and plan.memory_ms is not None and plan.memory_ms < plan.index_ms == 1e4
    assert [c.name for c in store.cache_stats().collections] == ["v"]
    assert [m.id for m in found] == [str(i) for i in np.argsort(-(vectors @ query), kind="stable")[:10]]


def test_an_index_only_a_little_faster_leaves_the_exact_pass_in_place(built):
    uri, _ = built
    _record_costs(uri, 10.0)
    memory_ms = create_vector_store(uri=uri).collection_info_sync("v").plan.memory_ms  # type: ignore[union-attr]
    assert memory_ms is not None  # one calibration per process: the next plans see the same estimate
    paths = {}
    for speedup in (1.1, 1.5):
        _record_costs(uri, memory_ms / 1e3 / speedup)
        plan = create_vector_store(uri=uri).collection_info_sync("v").plan
        assert plan is not None and plan.memory_ms == memory_ms
        paths[speedup] = plan.path
        assert f"{speedup:.2f}x faster" in plan.reason
    # Within the estimates' error the exact answer wins; clearly faster, the index does.
    assert paths == {1.1: "memory", 1.5: "index"}


def test_a_curve_without_costs_leaves_the_size_limits_to_decide(built):
    uri, vectors = built
    _record_costs(uri, None)
    assert asyncio.run(_curve(uri)).costs == ()  # type: ignore[union-attr]
    store = create_vector_store(uri=uri)
    assert store.collection_info_sync("v").search_ef is not None  # the old curve still gives the ef
    store("v").near_vector(vectors[0]).limit(3).search_sync()
    assert store.cache_stats().plans == () and [c.name for c in store.cache_stats().collections] == ["v"]
    assert store.collection_info_sync("v").plan is None


def test_the_planner_lifts_the_size_cap_only_where_memory_was_measured_cheaper(built):
    uri, vectors = built
    capped = {"max_rows": 10, "max_vector_bytes": 1024}  # 800 x 16 floats is over both
    for seconds, path, held in ((10.0, "memory", ["v"]), (1e-9, "index", [])):
        _record_costs(uri, seconds)
        store = create_vector_store(uri=uri, memory_cache=MemoryCache(**capped))
        store("v").near_vector(vectors[1]).limit(3).search_sync()
        assert store.cache_stats().plans[0].path == path
        assert [c.name for c in store.cache_stats().collections] == held
        # Filtered searches keep the cap: over it, LanceDB answers them.
        store("v").near_vector(vectors[1]).where("id", "1").limit(1).search_sync()
        assert [c.name for c in store.cache_stats().collections] == held


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.integers(200, 600),
    dim=st.integers(4, 24),
    seed=st.integers(0, 2**16),
    index_cheaper=st.booleans(),
)
def test_either_path_meets_the_recall_target_against_the_exact_answer(
    tmp_path_factory, rows, dim, seed, index_cheaper
):
    uri = str(tmp_path_factory.mktemp("plan"))
    vectors = _vectors(rows, dim, seed)
    _build(uri, vectors)
    _record_costs(uri, 1e-9 if index_cheaper else 10.0)
    target = 0.98
    store = create_vector_store(uri=uri, recall_target=target)
    queries = _vectors(20, dim, seed + 1)
    hits = 0
    for q in queries:
        found = store("v").near_vector(q).select("id").limit(10).search_sync()
        dist = 1 - vectors @ q
        exact = np.lexsort((np.argsort(np.argsort(np.arange(rows).astype(str))), dist))[:10]
        tenth = dist[exact[-1]]
        got = [int(m.id) for m in found]
        if not index_cheaper:  # the exact pass: the exact answer, in order
            # By distance: the store's float32 arithmetic and this one's may order a near tie apart.
            assert len(set(got)) == 10
            np.testing.assert_allclose(dist[got], dist[exact], rtol=0, atol=1e-5)
        hits += sum(1 for i in got if dist[i] <= tenth + 1e-5)
    (plan,) = store.cache_stats().plans
    assert plan.path == ("index" if index_cheaper else "memory")
    assert [c.name for c in store.cache_stats().collections] == ([] if index_cheaper else ["v"])
    assert hits / (10 * len(queries)) >= target


def test_a_graph_still_to_measure_keeps_memory_and_a_measured_one_is_weighed_by_its_walk():
    """The graph's own figures decide once it answers: pending, the copy answers (so the graph can
    be measured at all); measured, its walk is what the index's cost is compared with."""
    curve = RecallCurve(10_000, ((64, 0.99), (128, 1.0)), (0.004, 0.006))  # the index: 4 ms at ef 64
    pending = _planner.plan("c", 10_000, 64, curve, 0.98, True, 1, "pending")
    assert pending is not None and pending.path == "memory" and "graph" in pending.reason
    assert pending.index_ms == pytest.approx(4.0)
    quick = _planner.plan("c", 10_000, 64, curve, 0.98, True, 1, 0.5)
    assert quick is not None and quick.path == "memory" and quick.memory_ms == 0.5
    assert "the graph over the copy (measured) is estimated 8.00x" in quick.reason
    slow = _planner.plan("c", 10_000, 64, curve, 0.98, True, 1, 9.0)
    assert slow is not None and slow.path == "index" and slow.memory_ms == 9.0
    assert "faster than the graph over the copy" in slow.reason
    near = _planner.plan("c", 10_000, 64, curve, 0.98, True, 1, 4.5)  # within the margin: memory stays
    assert near is not None and near.path == "memory"
    unfit = _planner.plan("c", 10_000, 64, curve, 0.98, False, 1, "pending")
    assert unfit is not None and unfit.path == "index"


def test_the_exact_pass_is_estimated_per_row_and_per_multiply_add():
    """Linear in rows at one width, never cheaper for a wider row (the two calibrated costs)."""
    for threads in (1, 2):
        one = _planner.scan_seconds(100_000, 256, threads)
        assert one > 0
        assert _planner.scan_seconds(300_000, 256, threads) == pytest.approx(3 * one)
        assert _planner.scan_seconds(100_000, 64, threads) <= one


def test_a_large_first_copy_the_planner_chose_is_read_after_the_index_answers(built, monkeypatch):
    """Over `_READ_INLINE` floats, the first search of a collection planned for memory is the index's
    (at the recall target) and the copy is read off its path; inline, or a small copy, first."""
    uri, vectors = built
    _record_costs(uri, 10.0)  # the exact pass is measured cheaper: memory is planned
    query = _vectors(1, 16, seed=5)[0]
    exact = [str(i) for i in np.argsort(-(vectors @ query), kind="stable")[:10]]

    def first_search(store: Any) -> tuple[str, ...]:
        """Names held right after the first search, asked on turnkit's loop: a copy read after the
        search is only scheduled then, not read yet."""

        async def probe() -> tuple[str, ...]:
            await store("v").near_vector(query).select("id").limit(10).search()
            return tuple(c.name for c in store.cache_stats().collections)

        return asyncio.run_coroutine_threadsafe(probe(), loop()).result(timeout=60)

    assert first_search(create_vector_store(uri=uri)) == ("v",)  # 800 x 16 floats: read inline
    monkeypatch.setattr(_memory_index, "_READ_INLINE", 0)  # now as large as a million rows
    behind = create_vector_store(uri=uri)
    assert first_search(behind) == ()  # the index answered; the copy is on its way
    assert behind.cache_stats().plans[0].path == "memory"
    deadline = time.monotonic() + 60  # a guard against a hang, not a timing claim
    while not behind.cache_stats().collections:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert [m.id for m in behind("v").near_vector(query).select("id").limit(10).search_sync()] == exact
    inline = create_vector_store(uri=uri, memory_cache=MemoryCache(refresh="inline"))
    assert first_search(inline) == ("v",)


def test_a_process_that_exits_right_after_the_index_answered_its_first_search_exits_cleanly(built):
    """The copy's read is still under way at exit (its rows held back by a second): exit cancels it,
    and the process ends with 0, having answered from the index."""
    uri, _ = built
    _record_costs(uri, 10.0)
    script = f"""
import time
from turnkit.batteries.vector import create_vector_store
from turnkit.batteries.vector.store import _memory_index
_memory_index._READ_INLINE = 0
read = _memory_index._read
_memory_index._read = lambda *args: (time.sleep(1.0), read(*args))[1]
vs = create_vector_store(uri={uri!r})
print(len(vs("v").near_vector([0.1] * 16).limit(3).search_sync()), vs.cache_stats().plans[0].path)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3", "memory"]
