"""The memory tier's HNSW graph against the exact pass it replaces, and how it follows writes."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import MemoryCache, VectorStoreUsageError, create_vector_store
from turnkit.batteries.vector.store._memory_graph import Graph, build, follow, graph_bytes
from turnkit.batteries.vector.store._recall import LADDER, RecallCurve

pytest.importorskip("usearch")


def _exact_top(matrix: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    dist = ((matrix - query) ** 2).sum(axis=1)
    return [ids[i] for i in np.lexsort((np.array(ids), dist))[:k]]


def _walk_top(graph: Graph, matrix: np.ndarray, ids: list[str], query: np.ndarray, k: int) -> list[str]:
    rows = graph.candidates(query, k)
    dist = ((matrix[rows] - query) ** 2).sum(axis=1)
    return [ids[i] for i in rows[np.lexsort((np.array(ids)[rows], dist))][:k]]


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(
        st.tuples(st.integers(0, 40), st.integers(0, 40), st.integers(0, 40)),  # added, removed, changed
        min_size=1,
        max_size=5,
    ),
)
def test_a_followed_graph_finds_what_the_exact_pass_finds(seed: int, steps: list[tuple[int, ...]]) -> None:
    """Rows added, removed and changed, in any mix: at an expansion over the row count the walk
    visits every row, so a graph that followed the writes (or was built again) must give the exact
    pass's top 10 of the new rows. A key mapped to the wrong row, a removed row still found, a
    changed vector under its old one or a removed row that comes back unfound would show. (l2: its
    graph holds float32 vectors, so the walk's distances are exact; cosine's int8 codes are
    checked by recall below.)"""
    rng = np.random.default_rng(seed)
    dim = 8
    ids = [f"r{i}" for i in range(120)]
    matrix = rng.normal(size=(120, dim)).astype(np.float32)
    graph = build(matrix, ids, "l2", 1, lambda: True)
    assert graph is not None
    made = 120
    gone: dict[str, np.ndarray] = {}  # removed rows, some of which come back with their old vector
    for added, removed, changed in steps:
        keep = rng.permutation(len(ids))[: max(len(ids) - removed, 1)]
        gone.update((ids[i], matrix[i]) for i in sorted(set(range(len(ids))) - set(keep.tolist())))
        new_ids = [ids[i] for i in keep]
        new = matrix[keep].copy()
        for row in rng.choice(len(new_ids), size=min(changed, len(new_ids)), replace=False):
            new[row] = rng.normal(size=dim)
        back = [i for i in list(gone)[: added // 2] if i not in new_ids]
        new_ids += back + [f"r{made + i}" for i in range(added - len(back))]
        made += added - len(back)
        fresh = rng.normal(size=(added - len(back), dim)).astype(np.float32)
        new = np.concatenate([new, *(gone.pop(i)[None] for i in back), fresh])
        order = rng.permutation(len(new_ids))  # a new version may hold its rows in any order
        new_ids, new = [new_ids[i] for i in order], np.ascontiguousarray(new[order])
        followed = follow(graph, matrix, new, new_ids, 1, lambda: True)
        graph = followed if followed is not None else build(new, new_ids, "l2", 1, lambda: True)
        assert graph is not None
        ids, matrix = new_ids, new
        graph.index.expansion_search = LADDER[-1]
        assert len(graph.index) == len(ids)
        for query in rng.normal(size=(5, dim)).astype(np.float32):
            assert _walk_top(graph, matrix, ids, query, 10) == _exact_top(matrix, ids, query, 10)


def test_a_row_removed_then_added_again_is_in_the_graph() -> None:
    """Removed in one version, the same text under another id last in the next, back in the third:
    it must be added to the graph again, not taken for a row kept since the first."""
    rng = np.random.default_rng(0)
    ids = [f"r{i}" for i in range(400)]
    first = rng.normal(size=(400, 8)).astype(np.float32)
    graph = build(first, ids, "l2", 1, lambda: True)
    assert graph is not None
    second_ids, second = [*ids[1:], "copy"], np.concatenate([first[1:], first[:1]])
    graph = follow(graph, first, second, second_ids, 1, lambda: True)
    assert graph is not None
    third_ids, third = [*second_ids, "r0"], np.concatenate([second, first[:1]])
    graph = follow(graph, second, third, third_ids, 1, lambda: True)
    assert graph is not None and len(graph.index) == 401
    graph.index.expansion_search = LADDER[-1]
    assert 400 in graph.candidates(first[0], 10).tolist()


def test_a_graph_stops_when_its_work_is_no_longer_wanted() -> None:
    matrix = np.random.default_rng(0).normal(size=(5_000, 8)).astype(np.float32)
    looks = []

    def wanted() -> bool:
        looks.append(1)
        return len(looks) < 2

    assert build(matrix, [f"r{i}" for i in range(5_000)], "cosine", 1, wanted) is None
    assert len(looks) == 2  # stopped after its first chunk, not at the end


def _clustered(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    centers = np.random.default_rng(0).normal(size=(40, dim)).astype(np.float32)  # the same for every draw
    return (centers[rng.integers(0, 40, n)] + 0.3 * rng.normal(size=(n, dim))).astype(np.float32)


def _records(ids: list[str], vectors: np.ndarray) -> list[dict[str, Any]]:
    return [{"id": i, "vector": v.tolist(), "document": i} for i, v in zip(ids, vectors, strict=True)]


def _graph_state(vs: Any, prefix: str, timeout: float = 120.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [c.graph for c in vs.cache_stats().collections if c.name == "c"]
        if found and found[0].startswith(prefix):
            return found[0]
        time.sleep(0.1)
    raise AssertionError(f"the graph never reached {prefix!r}: {vs.cache_stats()}")


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
def test_the_graph_answers_where_measured_faster_and_follows_writes(tmp_path: Any, metric: str) -> None:
    rng = np.random.default_rng(3)
    n, dim = 20_000, 64
    matrix = _clustered(rng, n, dim)
    ids = [f"r{i}" for i in range(n)]
    uri = str(tmp_path / "db")
    fast = create_vector_store(
        uri=uri, metric=metric, auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000)
    )
    exact = create_vector_store(
        uri=uri, metric=metric, auto_optimize=None, memory_cache=MemoryCache(graph_rows=None)
    )
    fast("c").upsert_sync(_records(ids, matrix))
    asked = (matrix[rng.integers(0, n, 300)] + 0.2 * rng.normal(size=(300, dim))).astype(np.float32)
    for q in asked[:110]:
        fast("c").near_vector(q).limit(10).search_sync()
    reason = _graph_state(fast, "answers")
    assert "meets recall@10 0.98 on 1" in reason  # measured on the kept queries

    def compare(queries: np.ndarray) -> float:
        hits = 0
        for q in queries:
            walked = fast("c").near_vector(q).select("id").limit(10).search_sync()
            truth = exact("c").near_vector(q).select("id").limit(10).search_sync()
            by_id = {m.id: m.distance for m in truth}
            # Each match at its exact distance, in the exact pass's order (distance, then id).
            distances = [m.distance for m in walked]
            assert distances == sorted(distances)
            for m in walked:
                if m.id in by_id:
                    assert m.distance == pytest.approx(by_id[m.id], rel=1e-6, abs=1e-6)
            hits += len(by_id.keys() & {m.id for m in walked})
        return hits / (10 * len(queries))

    assert compare(asked[110:210]) >= 0.95  # others of the same kind than those it was measured on

    # Writes: new rows, removed rows and moved vectors. The new version answers exactly while the
    # graph follows it; then the graph answers again, with the new rows and without the removed ones.
    new_ids, new_vectors = [f"n{i}" for i in range(200)], _clustered(rng, 200, dim)
    fast("c").upsert_sync(_records(new_ids, new_vectors))
    moved, moved_vectors = [f"r{i}" for i in range(200, 300)], _clustered(rng, 100, dim)
    fast("c").upsert_sync(_records(moved, moved_vectors))
    fast("c").where("id", "in", [f"r{i}" for i in range(100)]).delete_sync()
    fast("c").near_vector(asked[0]).limit(10).search_sync()  # sees the new version, reads its copy
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        stats = [c for c in fast.cache_stats().collections if c.name == "c"]
        if stats and stats[0].rows == n + 100 and stats[0].graph.startswith("answers"):
            break
        fast("c").near_vector(asked[1]).limit(10).search_sync()
        time.sleep(0.1)
    else:
        raise AssertionError(f"the graph never followed the writes: {fast.cache_stats()}")
    for name, query in [
        *zip(new_ids[:20], new_vectors[:20], strict=True),
        *zip(moved[:20], moved_vectors[:20], strict=True),
    ]:
        if metric != "dot":  # under dot a longer vector in the same direction comes first
            assert fast("c").near_vector(query).select("id").limit(1).search_sync()[0].id == name
    assert compare(np.concatenate([new_vectors[:50], moved_vectors[:50]])) >= 0.95  # the new rows are found
    assert compare(asked[210:]) >= 0.95
    found = {m.id for q in asked[:50] for m in fast("c").near_vector(q).select("id").limit(10).search_sync()}
    assert not found & {f"r{i}" for i in range(100)}


def test_a_graph_slower_than_the_exact_pass_is_declined(tmp_path: Any) -> None:
    """At 2,000 rows of 8 floats the exact pass takes microseconds: the graph is built and measured,
    declined, and the exact pass keeps answering (the same matches as LanceDB's)."""
    rng = np.random.default_rng(4)
    matrix = _clustered(rng, 2_000, 8)
    uri = str(tmp_path / "db")
    vs = create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=1_000))
    lance = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    vs("c").upsert_sync(_records([f"r{i}" for i in range(2_000)], matrix))
    queries = rng.normal(size=(130, 8)).astype(np.float32)
    for q in queries[:110]:
        vs("c").near_vector(q).limit(10).search_sync()
    assert _graph_state(vs, "declined").startswith("declined: ")
    for q in queries[110:]:
        got, want = (s("c").near_vector(q).select("id").limit(10).search_sync() for s in (vs, lance))
        assert [m.id for m in got] == [m.id for m in want]


def test_graph_rows_is_checked() -> None:
    for bad in (0, -1, True, 1.5):
        with pytest.raises(VectorStoreUsageError) as caught:
            MemoryCache(graph_rows=bad)  # type: ignore[arg-type]
        assert caught.value.code == "E_INVALID_VECTOR_STORE_CONFIG"
    assert MemoryCache(graph_rows=None).graph_rows is None


def test_a_graph_is_built_only_where_it_fits_the_memory_budget(tmp_path: Any) -> None:
    """A copy that fits `max_bytes` alone keeps its exact pass: a graph beside it would push the copy
    itself out, to be read and its graph built again after every 100 queries."""
    rng = np.random.default_rng(5)
    matrix = _clustered(rng, 12_000, 32)
    uri = str(tmp_path / "db")
    probe = create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=None))
    records = [{**r, "document": "x" * 1_000} for r in _records([f"r{i}" for i in range(12_000)], matrix)]
    probe("c").upsert_sync(records)
    probe("c").near_vector(matrix[0]).limit(10).search_sync()
    size = probe.cache_stats().collections[0].bytes
    admitted = 12_000 * (32 * 4 + 1_024)  # what `MemoryCache.fits` reckons a copy takes
    budget = max(size, admitted) + 100_000
    vs = create_vector_store(
        uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000, max_bytes=budget)
    )
    for q in matrix[:150]:
        vs("c").near_vector(q).limit(10).search_sync()
    reason = _graph_state(vs, "not built")
    assert "would not fit max_bytes" in reason
    assert [c.bytes for c in vs.cache_stats().collections] == [size]  # the copy stayed, without a graph


def test_the_graph_follows_two_quick_writes(tmp_path: Any) -> None:
    """The second write's copy is read while the first one's graph is still being brought to it:
    the newest graph that answered follows on, rather than being lost to a rebuild (which would
    wait for 100 more queries, more than are asked here)."""
    rng = np.random.default_rng(6)
    n, dim = 20_000, 64
    matrix = _clustered(rng, n, dim)
    vs = create_vector_store(
        uri=str(tmp_path / "db"),
        auto_optimize=None,
        memory_cache=MemoryCache(graph_rows=10_000, refresh="inline"),
    )
    vs("c").upsert_sync(_records([f"r{i}" for i in range(n)], matrix))
    asked = (matrix[rng.integers(0, n, 120)] + 0.2 * rng.normal(size=(120, dim))).astype(np.float32)
    for q in asked[:110]:
        vs("c").near_vector(q).limit(10).search_sync()
    _graph_state(vs, "answers")
    added = _clustered(rng, 2_001, dim)
    # 2,000 rows first, which the graph takes a while to add, then one more; each write's copy is
    # read inline by the search right after it.
    for i, part in enumerate((slice(0, 2_000), slice(2_000, 2_001))):
        vs("c").upsert_sync(_records([f"w{j}" for j in range(part.start, part.stop)], added[part]))
        vs("c").near_vector(asked[110 + i]).limit(10).search_sync()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        stats = vs.cache_stats().collections[0]
        if stats.rows == n + 2_001 and stats.graph.startswith("answers"):
            break
        time.sleep(0.1)
    else:
        raise AssertionError(f"the graph did not follow two quick writes: {vs.cache_stats()}")
    for i in (0, 1_999, 2_000):
        assert vs("c").near_vector(added[i]).select("id").limit(1).search_sync()[0].id == f"w{i}"


def _cost_index_at(uri: str, seconds: float) -> None:
    """Record the built index's curve with every search costing ``seconds``."""
    import asyncio

    import lancedb  # noqa: TID251 - the curve is written as a build measured on another machine would

    from turnkit.batteries.vector.store._recall import RecallCurve

    async def write() -> None:
        table = await (await lancedb.connect_async(uri)).open_table("c")
        curve = RecallCurve.of_field((await table.schema()).field("vector").metadata)
        assert curve is not None
        costs = tuple(seconds for _ in curve.points)
        metadata = RecallCurve.field_metadata(RecallCurve(curve.rows, curve.points, costs))
        await table.update_field_metadata({"path": "vector", "metadata": metadata})

    asyncio.run(write())


def _indexed(tmp_path: Any, rng: np.random.Generator, n: int, dim: int) -> tuple[str, np.ndarray, Any]:
    """Collection "c" of ``n`` clustered rows with an HNSW index (and a recall curve with costs)."""
    matrix = _clustered(rng, n, dim)
    uri = str(tmp_path / "db")
    build_store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    build_store("c").upsert_sync(_records([f"r{i}" for i in range(n)], matrix))
    build_store("c").create_index_sync("hnsw_sq")
    return uri, matrix, build_store


def test_the_planner_lets_a_graph_be_measured_and_then_weighs_its_walk(tmp_path: Any) -> None:
    """An index measured cheaper than the exact pass does not stop a graph from being tried: memory
    answers while the graph is measured; then its measured walk is weighed against the index.
    Where copy and graph would not fit the budget, the index answers from the first search."""
    rng = np.random.default_rng(7)
    n, dim = 20_000, 64
    uri, matrix, _ = _indexed(tmp_path, rng, n, dim)
    asked = (matrix[rng.integers(0, n, 120)] + 0.2 * rng.normal(size=(120, dim))).astype(np.float32)

    def plan_of(vs: Any) -> Any:
        return next(p for p in vs.cache_stats().plans if p.collection == "c")

    _cost_index_at(uri, 1e-9)  # the index far faster than any exact pass or walk
    vs = create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000))
    vs("c").near_vector(asked[0]).limit(10).search_sync()
    first = plan_of(vs)
    assert first.path == "memory" and "graph over the copy is built and measured" in first.reason
    for q in asked[1:110]:
        vs("c").near_vector(q).limit(10).search_sync()
    walk = _graph_state(vs, "answers")
    vs("c").near_vector(asked[110]).limit(10).search_sync()
    weighed = plan_of(vs)
    assert "the graph over the copy (measured)" in weighed.reason, weighed
    assert f"{weighed.memory_ms:.2f} ms a search" in walk  # the walk as the graph measured it
    # The index's cost is the build's (recorded above) or, once measured on the kept queries, theirs.
    assert weighed.path == ("index" if weighed.index_ms * 1.25 < weighed.memory_ms else "memory")

    estimate = MemoryCache().fits  # the budget: room for the copy, not for the copy and a graph
    budget = next(b for b in range(n * dim * 4, 2**31, 2**16) if MemoryCache(max_bytes=b).fits(n, dim))
    assert estimate(n, dim) and not MemoryCache(max_bytes=budget).fits(n, dim, graph_bytes(n, dim, "cosine"))
    _cost_index_at(uri, 1e-9)
    vs = create_vector_store(
        uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000, max_bytes=budget)
    )
    vs("c").near_vector(asked[0]).limit(10).search_sync()
    assert plan_of(vs).path == "index"
    assert vs.cache_stats().collections == ()  # no copy read for a graph that could not fit
    # Nor where no queries are kept to measure a graph on.
    vs = create_vector_store(
        uri=uri, auto_optimize=None, recall_from_queries=False, memory_cache=MemoryCache(graph_rows=10_000)
    )
    vs("c").near_vector(asked[0]).limit(10).search_sync()
    assert plan_of(vs).path == "index" and vs.cache_stats().collections == ()

    # Nor for ever where the queries never make a graph's sample: the same 50 asked again and again
    # (so no build starts, and the index's cost stays the recorded one).
    vs = create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000))
    searches = 0
    while not vs.cache_stats().plans or plan_of(vs).path == "memory":
        vs("c").near_vector(asked[searches % 50]).limit(10).search_sync()
        searches += 1
        assert searches < 2_000, plan_of(vs)
    assert searches > 1_000  # it waited as long as a late build could need
    assert "index is estimated" in plan_of(vs).reason
    assert _graph_state(vs, "declined: not measured after 1000 searches")


def test_queries_kept_while_a_first_copy_is_read_start_its_graph_once_it_is(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large first copy is read after the index answers; the queries asked meanwhile are kept, and
    the copy's read starts the graph over them with no further search."""
    import asyncio

    from turnkit._aio import loop
    from turnkit.batteries.vector.store import _memory_index

    rng = np.random.default_rng(11)
    n, dim = 20_000, 64
    uri, matrix, _ = _indexed(tmp_path, rng, n, dim)
    asked = (matrix[rng.integers(0, n, 110)] + 0.2 * rng.normal(size=(110, dim))).astype(np.float32)
    _cost_index_at(uri, 1e-9)
    monkeypatch.setattr(_memory_index, "_READ_INLINE", 0)  # read after the index answers, as at 1M rows
    vs = create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000))
    # Hold the copy's read until every query was asked: all of them are the index's.
    reading = vs._memory._locks.setdefault("c", asyncio.Lock())
    asyncio.run_coroutine_threadsafe(reading.acquire(), loop()).result(timeout=60)
    try:
        for q in asked:
            vs("c").near_vector(q).limit(10).search_sync()
        assert vs.cache_stats().collections == ()
    finally:
        loop().call_soon_threadsafe(reading.release)
    deadline = time.monotonic() + 120  # a guard against a hang, not a timing claim
    while not any(c.graph.startswith(("answers", "declined")) for c in vs.cache_stats().collections):
        assert time.monotonic() < deadline, vs.cache_stats()
        time.sleep(0.1)


def test_a_measured_walk_outlives_its_evicted_copy(tmp_path: Any) -> None:
    """Another collection's copy evicts this one's: the planner keeps weighing the walk it measured
    instead of reading the copy again and building its graph again to learn it."""
    rng = np.random.default_rng(8)
    n, dim = 20_000, 64
    uri, matrix, build_store = _indexed(tmp_path, rng, n, dim)
    other = _clustered(rng, 45_000, dim)  # with long documents: its copy and this one's do not both fit
    build_store("b").upsert_sync(
        [{"id": f"b{i}", "vector": v.tolist(), "document": "x" * 2_000} for i, v in enumerate(other)]
    )
    vs = create_vector_store(
        uri=uri, auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000, max_bytes=110 * 2**20)
    )
    asked = (matrix[rng.integers(0, n, 120)] + 0.2 * rng.normal(size=(120, dim))).astype(np.float32)
    for q in asked[:110]:
        vs("c").near_vector(q).limit(10).search_sync()
    walk = _graph_state(vs, "answers")
    vs("b").near_vector(other[0]).limit(10).search_sync()
    assert [c.name for c in vs.cache_stats().collections] == ["b"]  # c's copy and graph were evicted
    vs("c").near_vector(asked[110]).limit(10).search_sync()
    weighed = next(p for p in vs.cache_stats().plans if p.collection == "c")
    assert "the graph over the copy (measured)" in weighed.reason, weighed
    assert f"{weighed.memory_ms:.2f} ms a search" in walk


def test_searches_a_graph_does_not_answer_go_where_the_exact_pass_would_have_gone() -> None:
    """Where memory answers for its graph's walk but the index beats the exact pass, a search of more
    than 10 results (which no graph answers) goes to the index; where the exact pass beats the index
    too, memory keeps it."""
    from turnkit.batteries.vector.query._spec import QuerySpec
    from turnkit.batteries.vector.store._memory_index import MemoryIndex
    from turnkit.batteries.vector.store._planner import scan_seconds

    rows, dim, threads = 20_000, 64, 1
    exact_ms = scan_seconds(rows, dim, threads) * 1e3
    walk_ms = exact_ms / 20
    for index_ms, wide in ((exact_ms / 5, "index"), (exact_ms * 5, "memory")):
        memory = MemoryIndex(MemoryCache(graph_rows=10_000, threads=threads))
        memory._graph_walks["c"] = (rows, walk_ms)  # a graph measured on this collection's queries
        curve = RecallCurve(rows, ((64, 0.99),), (index_ms / 1e3,))
        chosen = memory.plan("c", rows, dim, "cosine", curve, 0.98)
        assert chosen is not None and chosen.path == "memory", chosen
        assert "the graph over the copy (measured)" in chosen.reason
        assert not memory._declines(QuerySpec(collection="c", limit=10), "c")  # the graph's
        for wider in (QuerySpec(collection="c", limit=20), QuerySpec(collection="c", limit=10, offset=10)):
            assert memory._declines(wider, "c") == (wide == "index"), (index_ms, exact_ms, wider)


def test_the_graph_is_weighed_at_the_collections_rows_not_a_stale_copys(tmp_path: Any) -> None:
    """A copy read at 6,000 rows (under ``graph_rows``) and not read since does not hide a graph
    from the planner once the collection has grown to 26,000 and been indexed again."""
    rng = np.random.default_rng(9)
    matrix = _clustered(rng, 26_000, 64)
    vs = create_vector_store(
        uri=str(tmp_path / "db"), auto_optimize=None, memory_cache=MemoryCache(graph_rows=10_000)
    )
    vs("c").upsert_sync(_records([f"r{i}" for i in range(6_000)], matrix[:6_000]))
    vs("c").create_index_sync("hnsw_sq")

    def plan() -> Any:
        return next(p for p in vs.cache_stats().plans if p.collection == "c")

    vs("c").near_vector(matrix[0]).limit(10).search_sync()
    assert "graph" not in plan().reason  # 6,000 rows: no graph considered
    assert [(c.name, c.rows) for c in vs.cache_stats().collections] == [("c", 6_000)]
    vs("c").upsert_sync(_records([f"r{i}" for i in range(6_000, 26_000)], matrix[6_000:]))
    vs("c").create_index_sync("hnsw_sq")
    vs("c").near_vector(matrix[1]).limit(10).search_sync()
    assert "a graph over the copy is built and measured" in plan().reason, plan()


def test_an_older_copys_failed_graph_leaves_the_current_copys_graph_standing() -> None:
    """A graph task fails for a copy that a newer one has replaced: the failure is the old copy's
    (raised, logged), and the newer copy's answering graph and measured walk stay. The current
    copy's own failure declines the graph."""
    import asyncio
    from unittest import mock

    import pyarrow as pa

    from turnkit.batteries.vector.store._memory_index import MemoryIndex, _Snapshot

    def snapshot(rows: int) -> _Snapshot:
        matrix = np.random.default_rng(rows).normal(size=(rows, 8)).astype(np.float32)
        stamps = pa.array([0] * rows, pa.timestamp("us", tz="UTC"))
        table = pa.table(
            {
                "id": pa.array([f"r{i}" for i in range(rows)]),
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), 8),
                "document": pa.array([None] * rows, pa.string()),
                "metadata": pa.array([None] * rows, pa.string()),
                "created_at": stamps,
                "updated_at": stamps,
            }
        )
        return _Snapshot("c", rows, table, 8, "cosine")

    old, current = snapshot(2_000), snapshot(2_001)
    current.graph = build(current.matrix, current._pylist("id"), "cosine", 1, lambda: True)
    assert current.graph is not None
    memory = MemoryIndex(MemoryCache(graph_rows=1_000))
    memory._snapshots["c"] = memory._answering["c"] = current
    failure = RuntimeError("usearch failed")
    with mock.patch.object(memory, "_graph_work", side_effect=failure):  # the fault, injected
        with pytest.raises(RuntimeError, match="usearch failed"):
            asyncio.run(memory._graph("c", old, None))
        assert memory._answering["c"] is current and "c" not in memory._graph_declined
        assert memory._graph_cost("c", current.rows) == current.graph.walk_ms  # still weighed
        with pytest.raises(RuntimeError, match="usearch failed"):  # the current copy's own failure
            asyncio.run(memory._graph("c", current, None))
    assert "c" not in memory._answering and memory._graph_declined["c"] == current.rows
    assert memory._graph_reasons["c"].startswith("failed: RuntimeError")
