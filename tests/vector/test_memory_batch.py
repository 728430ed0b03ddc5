"""Concurrent in-memory searches served by one batched product give the lone search's answers, to the bit."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from unittest import mock

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    MemoryCache,
    VectorStoreUsageError,
    create_vector_store,
)
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store import _memory_batch, _memory_index
from turnkit.batteries.vector.store._memory_batch import BatchedProduct, _Job, dot_tolerance, kth_smallest
from turnkit.batteries.vector.store._memory_index import MemoryIndex, _Snapshot
from turnkit.batteries.vector.store._memory_int8 import Int8Copy, pays


def _table(matrix: np.ndarray, ids: list[str]) -> pa.Table:
    n, dim = matrix.shape
    stamps = pa.array([0] * n, pa.timestamp("us", tz="UTC"))
    return pa.table(
        {
            "id": pa.array(ids, pa.string()),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), dim),
            "document": pa.array([None] * n, pa.string()),
            "metadata": pa.array([None] * n, pa.string()),
            "created_at": stamps,
            "updated_at": stamps,
        }
    )


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 60),
    dim=st.integers(1, 40),
    copies=st.integers(0, 20),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    limit=st.integers(1, 15),
    offset=st.integers(0, 5),
)
def test_batched_dots_within_their_bound_give_the_lone_answer(
    metric: str, seed: int, rows: int, dim: int, copies: int, scale: float, limit: int, offset: int
) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    matrix[rng.integers(0, rows, size=rows // 3)] *= np.float32(scale)  # norms far apart
    # Copies of some rows (and of the query) make exact ties, broken by id.
    picks = rng.integers(0, rows, size=copies)
    matrix = np.concatenate([matrix, matrix[picks]])
    ids = [f"r{i}" for i in rng.permutation(len(matrix))]
    snapshot = _Snapshot("c", 1, _table(matrix, ids), dim, metric)  # type: ignore[arg-type]
    query = matrix[int(rng.integers(0, len(matrix)))] if rng.random() < 0.5 else rng.normal(size=dim)
    query = np.ascontiguousarray(query, dtype=np.float32)
    spec = QuerySpec(collection="c", limit=limit, offset=offset)
    lone = snapshot.top(spec, query, None)
    exact = np.einsum("ij,j->i", matrix, query)
    # Another order of summation: off by up to the documented bound, either way, row by row.
    bound = dot_tolerance(dim) * np.sqrt(snapshot.sq_norms) * float(np.linalg.norm(query))
    noisy = (exact + rng.uniform(-1, 1, size=len(exact)) * bound).astype(np.float32)
    batched = snapshot.top(spec, query, None, noisy, spread=0.0)
    assert lone[0].tolist() == batched[0].tolist()
    assert lone[1].tobytes() == batched[1].tobytes()


def _gated(product: BatchedProduct) -> tuple[threading.Event, list[int], Any]:
    """A product whose first pass waits for the gate, and the sizes of the passes made."""
    gate, real, sizes = threading.Event(), product._product, []

    def gated(queries: list[np.ndarray]) -> list[np.ndarray]:
        sizes.append(len(queries))
        if len(sizes) == 1:
            gate.wait(30)
        return real(queries)

    return gate, sizes, gated


def _wait_for(condition: Any) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.001)


def test_queued_queries_share_one_product_and_get_their_own_rows() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(1000, 16)).astype(np.float32)
    product = BatchedProduct(matrix, workers=1)
    gate, sizes, gated = _gated(product)

    def run(q: np.ndarray) -> tuple[np.ndarray, float | None]:
        return product.run(q, lambda dots, spread: (dots, spread))

    queries = rng.normal(size=(6, 16)).astype(np.float32)
    with mock.patch.object(product, "_product", gated), ThreadPoolExecutor(6) as pool:
        first = pool.submit(run, queries[0])
        _wait_for(lambda: sizes)
        rest = [pool.submit(run, q) for q in queries[1:]]
        _wait_for(lambda: len(product._queue) == 5)  # all five wait behind the first pass
        gate.set()
        results = [first.result(30), *(f.result(30) for f in rest)]
    assert sizes == [1, 5]
    assert [spread for _, spread in results] == [None] + [0.0] * 5  # einsum's own values, then BLAS's
    for q, (dots, _) in zip(queries, results, strict=True):
        assert dots.tolist() == pytest.approx((matrix @ q).tolist(), rel=1e-5, abs=1e-5)
    assert product._busy == 0


def test_async_searches_queue_without_a_thread_each_and_cancelled_ones_are_dropped() -> None:
    rng = np.random.default_rng(1)
    matrix = rng.normal(size=(500, 8)).astype(np.float32)
    product = BatchedProduct(matrix, workers=1)
    gate, sizes, gated = _gated(product)
    queries = rng.normal(size=(5, 8)).astype(np.float32)

    async def main() -> list[Any]:
        tasks = [asyncio.ensure_future(product.run_async(queries[0], lambda d, a: (d, a)))]
        await asyncio.to_thread(_wait_for, lambda: sizes)
        tasks += [asyncio.ensure_future(product.run_async(q, lambda d, a: (d, a))) for q in queries[1:]]
        await asyncio.to_thread(_wait_for, lambda: len(product._queue) == 4)
        tasks[2].cancel()
        await asyncio.sleep(0)
        gate.set()
        return await asyncio.gather(*tasks, return_exceptions=True)

    threads = threading.active_count()
    with mock.patch.object(product, "_product", gated):
        results = asyncio.run(main())
    assert threading.active_count() <= threads + 1  # the one worker, finishing
    assert sizes == [1, 3]  # the cancelled search was not computed
    assert isinstance(results[2], asyncio.CancelledError)
    for i in (0, 1, 3, 4):
        dots, spread = results[i]
        assert spread == (None if i == 0 else 0.0)
        assert dots.tolist() == pytest.approx((matrix @ queries[i]).tolist(), rel=1e-5, abs=1e-5)
    _wait_for(lambda: product._busy == 0)


def test_a_failed_product_fails_every_search_of_its_batch_and_a_failed_finish_only_its_own() -> None:
    product = BatchedProduct(np.ones((4, 2), np.float32), workers=1)
    with (
        mock.patch.object(product, "_product", side_effect=MemoryError("boom")),
        pytest.raises(MemoryError),
    ):
        product.run(np.ones(2, np.float32), lambda d, a: d)
    assert product._busy == 0 and product._queue == []

    def bad(dots: np.ndarray, spread: float | None) -> Any:
        raise ValueError("finish")

    with pytest.raises(ValueError, match="finish"):
        product.run(np.ones(2, np.float32), bad)
    assert product.run(np.ones(2, np.float32), lambda d, a: d.tolist()) == [2.0] * 4  # and serves the next


def test_concurrent_searches_of_a_store_match_sequential_ones(tmp_path: Any) -> None:
    # 4,100 rows x 256 floats: past INLINE_WORK, so unfiltered searches go through the batched product.
    rng = np.random.default_rng(3)
    dim, rows = 256, 4_100
    vs = create_vector_store(uri=str(tmp_path / "db"), auto_optimize=None, memory_cache=MemoryCache())
    vectors = rng.normal(size=(rows, dim)).astype(np.float32)
    vs("c").upsert_sync([{"id": f"r{i}", "vector": v} for i, v in enumerate(vectors)])
    queries = rng.normal(size=(48, dim)).astype(np.float32)

    def search(q: np.ndarray) -> list[tuple[str, float | None]]:
        return [(m.id, m.distance) for m in vs("c").near_vector(q).select("id").limit(7).search_sync()]

    sequential = [search(q) for q in queries]
    assert vs.cache_stats().collections[0].rows == rows
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(search, queries)) == sequential

    async def search_async(q: np.ndarray) -> list[tuple[str, float | None]]:
        return [(m.id, m.distance) for m in await vs("c").near_vector(q).select("id").limit(7)]

    async def gathered() -> list[Any]:
        return await asyncio.gather(*(search_async(q) for q in queries))

    assert asyncio.run(gathered()) == sequential


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 50),
    dim=st.integers(1, 20),
    filtered=st.booleans(),
)
def test_in_place_distances_are_the_textbook_formulas_to_the_bit(
    metric: str, seed: int, rows: int, dim: int, filtered: bool
) -> None:
    rng = np.random.default_rng(seed)
    matrix = (rng.normal(size=(rows, dim)) * rng.uniform(0.01, 100, size=(rows, 1))).astype(np.float32)
    snapshot = _Snapshot("c", 1, _table(matrix, [f"r{i}" for i in range(rows)]), dim, metric)  # type: ignore[arg-type]
    query = rng.normal(size=dim).astype(np.float32)
    picked = np.flatnonzero(rng.random(rows) < 0.5) if filtered else None
    sub = slice(None) if picked is None else picked
    dots = np.einsum("ij,j->i", matrix[sub], query)
    one = np.float32(1.0)
    if metric == "cosine":
        qnorm = float(np.linalg.norm(query))
        want = one - dots * snapshot.inv_norms[sub] * np.float32(1.0 / qnorm if qnorm else 0.0)
    elif metric == "dot":
        want = one - dots
    else:
        sq = snapshot.sq_norms[sub]
        want = np.maximum(sq - np.float32(2.0) * dots + np.float32(query @ query), np.float32(0.0))
    assert snapshot.distances(picked, query).tobytes() == want.tobytes()


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 400),
    dim=st.integers(1, 48),
    queries=st.integers(1, 6),
    threads=st.integers(2, 4),
    part_work=st.sampled_from([1, 7, 64, 1000]),
)
def test_a_pass_split_across_threads_gives_the_one_thread_bits(
    seed: int, rows: int, dim: int, queries: int, threads: int, part_work: int
) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    qs = list(rng.normal(size=(queries, dim)).astype(np.float32))
    one, _ = BatchedProduct(matrix, threads=1)._product(qs)
    # Small parts, so that these small matrices are split as a large one is.
    with mock.patch.object(_memory_batch, "_MIN_PART_WORK", part_work):
        ranges = _memory_batch._split(rows, dim, threads)
        split, _ = BatchedProduct(matrix, threads=threads)._product(qs)
    assert ranges[0][0] == 0 and ranges[-1][1] == rows
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:], strict=False))
    assert 1 <= len(ranges) <= min(threads, max(1, rows * dim // part_work))
    assert all(stop > start for start, stop in ranges)
    assert [d.tobytes() for d in split] == [d.tobytes() for d in one]
    if queries == 1:  # the lone search's values are einsum's over the whole matrix
        assert split[0].tobytes() == np.einsum("ij,j->i", matrix, qs[0]).tobytes()


def test_a_split_pass_finishes_on_the_callers_thread_when_every_helper_is_busy() -> None:
    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(9_000, 256)).astype(np.float32)  # 2.3M multiply-adds: split in 4
    query = rng.normal(size=256).astype(np.float32)
    assert len(_memory_batch._split(9_000, 256, 4)) == 4
    product = BatchedProduct(matrix, threads=4)
    release = threading.Event()
    pool = _memory_batch._pool()
    blockers = [pool.submit(release.wait, 30) for _ in range(_memory_batch.MAX_SCAN_THREADS - 1)]
    caller = ThreadPoolExecutor(1)
    try:
        dots, _ = caller.submit(product._product, [query]).result(timeout=10)  # not stuck behind the helpers
        assert not any(b.done() for b in blockers)
    finally:
        release.set()
        caller.shutdown(wait=False)
    assert dots[0].tobytes() == np.einsum("ij,j->i", matrix, query).tobytes()


@pytest.mark.parametrize("threads", [0, 17, 2.5, "2", True])
def test_memory_cache_threads_must_be_a_count(threads: Any) -> None:
    with pytest.raises(VectorStoreUsageError) as caught:
        MemoryCache(threads=threads)
    assert caught.value.code == "E_INVALID_VECTOR_STORE_CONFIG" and "threads" in str(caught.value)
    assert "from 1 to 16" in str(caught.value.hint)


def test_any_thread_count_gives_a_store_the_same_answers(tmp_path: Any) -> None:
    rng = np.random.default_rng(6)
    vectors = rng.normal(size=(5_000, 256)).astype(np.float32)  # 1.3M multiply-adds: split in two
    uri = str(tmp_path / "db")
    create_vector_store(uri=uri, auto_optimize=None)("c").upsert_sync(
        [{"id": f"r{i}", "vector": v} for i, v in enumerate(vectors)]
    )
    stores = [
        create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(threads=t)) for t in (1, 16)
    ]
    for q in rng.normal(size=(5, 256)).astype(np.float32):
        single, split = (
            [(m.id, m.distance) for m in s("c").near_vector(q).select("id").limit(8).search_sync()]
            for s in stores
        )
        assert single == split
    assert all(s.cache_stats().collections[0].rows == 5_000 for s in stores)


_FORK_SCRIPT = """
import os, sys, time
import numpy as np
from turnkit.batteries.vector.store import _memory_batch as mb

assert "lance" not in sys.modules  # LanceDB warns on fork; this check needs none of it
rng = np.random.default_rng(7)
matrix = rng.normal(size=(9_000, 256)).astype(np.float32)
query = rng.normal(size=256).astype(np.float32)
mb.BatchedProduct(matrix, threads=4)._product([query])  # the parent's pool exists
inherited = mb._helpers
pid = os.fork()
if pid == 0:
    for _ in range(20):
        dots = mb.BatchedProduct(matrix, threads=4)._product([query])[0][0]
    pool = mb._helpers
    deadline = time.monotonic() + 10
    while pool is not None and pool._work_queue.qsize() and time.monotonic() < deadline:
        time.sleep(0.01)  # parts the caller did itself are dropped from the queue by live helpers
    own = pool is not None and pool is not inherited
    exact = dots.tobytes() == np.einsum("ij,j->i", matrix, query).tobytes()
    print(own, pool._work_queue.qsize() if pool is not None else -1, exact, flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_forked_child_splits_passes_over_its_own_helpers() -> None:
    import subprocess
    import sys

    # In a fresh interpreter: the test process has LanceDB loaded, which refuses to be forked quietly.
    done = subprocess.run([sys.executable, "-c", _FORK_SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    # Not the parent's pool, whose threads do not exist in the child (parts queued there were
    # never run, each holding its matrix), and nothing left queued.
    assert done.stdout.split() == ["True", "0", "True"], done.stderr


def test_a_search_while_the_interpreter_exits_still_answers(tmp_path: Any) -> None:
    import subprocess
    import sys

    script = tmp_path / "exit.py"
    script.write_text(
        "import atexit\n"
        "import numpy as np\n"
        "from turnkit.batteries.vector import create_vector_store\n"
        "vs = create_vector_store(uri='memory://')\n"
        "rng = np.random.default_rng(0)\n"
        "rows = rng.normal(size=(9000, 256))\n"
        "vs('c').upsert_sync([{'id': f'r{i}', 'vector': v} for i, v in enumerate(rows)])\n"
        "q = rng.normal(size=256)\n"
        "first = [m.id for m in vs('c').near_vector(q).select('id').limit(3).search_sync()]\n"
        "def late():\n"
        "    # after the thread pools stop taking work: the search computes every part itself\n"
        "    again = [m.id for m in vs('c').near_vector(q).select('id').limit(3).search_sync()]\n"
        "    print('same' if again == first else f'different {again} {first}', flush=True)\n"
        "atexit.register(late)\n"
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "same", done.stderr


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 300),
    dim=st.integers(1, 32),
    limit=st.integers(1, 12),
    together=st.integers(2, 6),
)
def test_a_lone_async_search_run_by_its_caller_answers_as_the_worker_does(
    metric: str, seed: int, rows: int, dim: int, limit: int, together: int
) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    matrix[rng.integers(0, rows, size=rows // 4)] = matrix[0]  # ties, broken by id
    ids = [f"r{i}" for i in rng.permutation(rows)]
    snapshot = _Snapshot("c", 1, _table(matrix, ids), dim, metric)  # type: ignore[arg-type]
    spec = QuerySpec(collection="c", limit=limit)
    queries = list(rng.normal(size=(together, dim)).astype(np.float32))
    queries[0] = matrix[0].copy()
    handed = []
    real = snapshot.product.run_async

    async def spy(query: np.ndarray, finish: Any) -> Any:
        handed.append(query)
        return await real(query, finish)

    def found(matches: list[Any] | None) -> list[tuple[str, float | None]]:
        assert matches is not None
        return [(m.id, m.distance) for m in matches]

    async def main() -> tuple[list[Any], list[Any], list[Any]]:
        worker = [found(await snapshot.search_async(spec, q, ["id"])) for q in queries]
        assert len(handed) == together  # the path replaced: every search handed to the worker
        handed.clear()
        await asyncio.to_thread(_wait_for, snapshot.product.idle)  # the worker gives its place back
        lone = [found(await MemoryIndex.answer(snapshot, spec, q, ["id"])) for q in queries]
        assert not handed  # one at a time: each ran in the caller's thread
        gathered = await asyncio.gather(*(MemoryIndex.answer(snapshot, spec, q, ["id"]) for q in queries))
        assert len(handed) == together  # started together: they share the worker's passes
        return worker, lone, [found(m) for m in gathered]

    # This small matrix takes the paths a 10,000 x 256 one does.
    with (
        mock.patch.object(_memory_index, "INLINE_WORK", 0),
        mock.patch.object(_memory_index, "LONE_INLINE_WORK", matrix.size),
        mock.patch.object(snapshot.product, "run_async", spy),
    ):
        worker, lone, gathered = asyncio.run(main())
    assert lone == worker and gathered == worker
    assert snapshot.in_flight == 0
    _wait_for(snapshot.product.idle)  # the worker gives its place back just after setting the futures


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 400),
    dim=st.integers(1, 64),
    near=st.integers(0, 60),
    jitter=st.sampled_from([0.0, 1e-6, 1e-4, 1e-2]),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    limit=st.integers(1, 15),
    offset=st.integers(0, 5),
    stored_query=st.booleans(),
)
def test_a_pass_over_the_int8_copy_gives_the_float32_answer_to_the_bit(
    metric: str,
    seed: int,
    rows: int,
    dim: int,
    near: int,
    jitter: float,
    scale: float,
    limit: int,
    offset: int,
    stored_query: bool,
) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    matrix[rng.integers(0, rows, size=rows // 3)] *= np.float32(scale)  # norms far apart
    matrix[rng.integers(0, rows, size=rows // 10)] = 0.0  # zero rows code to zero
    # Rows a hair apart from others (and exact copies): the coarse order differs from the exact one
    # right at the cut, which the exact pass over the rows near it must put back.
    picks = rng.integers(0, rows, size=near)
    moved = matrix[picks] + jitter * rng.normal(size=(near, dim)).astype(np.float32)
    matrix = np.ascontiguousarray(np.concatenate([matrix, moved.astype(np.float32)]))
    ids = [f"r{i}" for i in rng.permutation(len(matrix))]
    with mock.patch.object(_memory_index, "INLINE_WORK", 0):
        snapshot = _Snapshot("c", 1, _table(matrix, ids), dim, metric, coarse=True)  # type: ignore[arg-type]
    assert snapshot.product.coarse is not None
    query = matrix[int(rng.integers(0, len(matrix)))] if stored_query else rng.normal(size=dim)
    query = np.ascontiguousarray(query, dtype=np.float32)
    if metric == "cosine" and not query.any():
        query[0] = 1.0  # a cosine search of the zero vector is refused before memory
    spec = QuerySpec(collection="c", limit=limit, offset=offset)
    (dots,), spread = snapshot.product._product([query])
    assert spread is not None  # the copy's pass, not einsum's
    coarse = snapshot.top(spec, query, None, dots, spread)
    exact = snapshot.top(spec, query, None)
    assert coarse[0].tolist() == exact[0].tolist()
    assert coarse[1].tobytes() == exact[1].tobytes()


@pytest.mark.parametrize("extreme", [1e-14, 1e14])
def test_rows_or_queries_of_extreme_magnitude_keep_the_float32_pass(extreme: float) -> None:
    rng = np.random.default_rng(8)
    matrix = rng.normal(size=(50, 8)).astype(np.float32)
    query = rng.normal(size=8).astype(np.float32)
    assert Int8Copy.of(matrix) is not None
    assert Int8Copy.of(np.concatenate([matrix, matrix[:1] * np.float32(extreme)])) is None
    with mock.patch.object(_memory_index, "INLINE_WORK", 0):
        snapshot = _Snapshot("c", 1, _table(matrix, [f"r{i}" for i in range(50)]), 8, "l2", coarse=True)
    assert snapshot.product.coarse is not None
    (dots,), spread = snapshot.product._product([query * np.float32(extreme)])
    assert spread is None  # einsum's values: the lone pass's own
    assert dots.tobytes() == np.einsum("ij,j->i", matrix, query * np.float32(extreme)).tobytes()


def test_a_large_copy_is_coded_where_numkongs_simd_kernels_run(tmp_path: Any) -> None:
    rng = np.random.default_rng(9)
    vectors = rng.normal(size=(5_000, 256)).astype(np.float32)  # past INLINE_WORK: the product's path
    store = create_vector_store(uri=str(tmp_path / "db"), auto_optimize=None)
    store("c").upsert_sync([{"id": f"r{i}", "vector": v} for i, v in enumerate(vectors)])
    q = rng.normal(size=256).astype(np.float32)
    found = [(m.id, m.distance) for m in store("c").near_vector(q).select("id").limit(10).search_sync()]
    snapshot = store._memory._snapshots["c"]
    assert (snapshot.product.coarse is not None) == pays()
    assert snapshot.nbytes >= vectors.nbytes + (vectors.size if snapshot.product.coarse else 0)
    norms = np.linalg.norm(vectors, axis=1) * np.linalg.norm(q)
    want = np.argsort(1 - vectors @ q / norms, kind="stable")[:10]
    assert [i for i, _ in found] == [f"r{i}" for i in want]


def test_the_budget_counts_the_int8_copy_exactly_where_one_is_made() -> None:
    small, large = (1_000, 256), (10_000, 256)  # under and over INLINE_WORK multiply-adds
    assert small[0] * small[1] <= _memory_index.INLINE_WORK < large[0] * large[1]
    for (rows, dim), coded in ((small, False), (large, pays())):
        need = rows * (dim * 4 + (Int8Copy.row_bytes(dim) if coded else 0) + 1024)
        assert MemoryCache(max_bytes=need).fits(rows, dim)
        assert not MemoryCache(max_bytes=need - 1).fits(rows, dim)


def test_without_numkong_a_large_copy_keeps_the_float32_pass() -> None:
    import subprocess
    import sys

    script = (
        "import sys; sys.modules['numkong'] = None\n"  # `import numkong` now fails, as with no wheel
        "import numpy as np\n"
        "from turnkit.batteries.vector.store._memory_int8 import pays\n"
        "print(pays())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@settings(max_examples=300, deadline=None)
@given(
    values=st.lists(
        st.floats(width=32, allow_nan=True, allow_infinity=True) | st.sampled_from([0.0, -0.0, 1.0]),
        min_size=1,
        max_size=3_000,
    ),
    data=st.data(),
)
def test_kth_smallest_is_the_partitions_value(values: list[float], data: st.DataObject) -> None:
    array = np.array(values, dtype=np.float32)
    kth = data.draw(st.integers(0, len(array) - 1))
    found, want = kth_smallest(array, kth), np.partition(array, kth)[kth]
    assert found == want or (np.isnan(found) and np.isnan(want))


def test_kth_smallest_partitions_a_few_hundred_of_300000_values() -> None:
    values = np.random.default_rng(10).normal(size=300_000).astype(np.float32)
    with mock.patch.object(np, "partition", wraps=np.partition) as partition:
        assert kth_smallest(values, 9) == np.sort(values)[9]
    assert [len(call.args[0]) for call in partition.call_args_list][0] < 2_000  # the sample
    assert all(len(call.args[0]) < 5_000 for call in partition.call_args_list)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(2, 400),
    dim=st.integers(1, 48),
    near=st.integers(0, 40),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    queries=st.integers(2, 20),
    limit=st.integers(1, 12),
    offset=st.integers(0, 4),
)
def test_searches_served_by_one_packed_int8_product_get_the_float32_answer_to_the_bit(
    metric: str,
    seed: int,
    rows: int,
    dim: int,
    near: int,
    scale: float,
    queries: int,
    limit: int,
    offset: int,
) -> None:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(rows, dim)).astype(np.float32)
    matrix[rng.integers(0, rows, size=rows // 3)] *= np.float32(scale)
    picks = rng.integers(0, rows, size=near)  # rows a hair apart and copies: ties at the cut
    moved = matrix[picks] + np.float32(1e-4) * rng.normal(size=(near, dim)).astype(np.float32)
    matrix = np.ascontiguousarray(np.concatenate([matrix, moved.astype(np.float32)]))
    ids = [f"r{i}" for i in rng.permutation(len(matrix))]
    with mock.patch.object(_memory_index, "INLINE_WORK", 0):
        snapshot = _Snapshot("c", 1, _table(matrix, ids), dim, metric, coarse=True)  # type: ignore[arg-type]
    coarse = snapshot.product.coarse
    assert coarse is not None and coarse.blocks is not None
    qs = [matrix[i] for i in rng.integers(0, len(matrix), size=queries // 2)]
    qs += list(rng.normal(size=(queries - len(qs), dim)).astype(np.float32))
    qs = [np.ascontiguousarray(q, dtype=np.float32) for q in qs]
    if metric == "cosine":
        for q in qs:
            if not q.any():
                q[0] = 1.0
    spec = QuerySpec(collection="c", limit=limit, offset=offset)
    spreads: list[float | None] = []

    def finish(q: np.ndarray) -> Any:
        def top(dots: np.ndarray, spread: float | None) -> Any:
            spreads.append(spread)
            return snapshot.top(spec, q, None, dots, spread)

        return top

    jobs = [_Job(q, finish(q)) for q in qs]
    for job in jobs:
        job.future.set_running_or_notify_cancel()
    snapshot.product._serve(jobs)  # one batch, as a worker takes a queue
    assert all(s is not None and s > 0 for s in spreads)  # the int8 copy's values, not einsum's
    for q, job in zip(qs, jobs, strict=True):
        batched, lone = job.future.result(0), snapshot.top(spec, q, None)
        assert batched[0].tolist() == lone[0].tolist()
        assert batched[1].tobytes() == lone[1].tobytes()


def test_a_packed_product_split_over_blocks_and_threads_gives_the_lone_passes_values() -> None:
    from turnkit.batteries.vector.store._memory_int8 import BLOCK

    rng = np.random.default_rng(11)
    matrix = rng.normal(size=(2 * BLOCK + 123, 24)).astype(np.float32)  # three blocks, the last short
    copy = Int8Copy.of(matrix)
    assert copy is not None and copy.blocks is not None and len(copy.blocks) == 3
    prepared = [p for p in (copy.prepare(q) for q in rng.normal(size=(5, 24)).astype(np.float32)) if p]
    together = np.full((len(prepared), len(matrix)), np.nan, dtype=np.float32)
    copy.dots_many(prepared, together, 0, 1)
    copy.dots_many(prepared, together, 1, 3)  # as two parts of a split pass fill their blocks
    for p, row in zip(prepared, together, strict=True):
        alone = np.empty(len(matrix), dtype=np.float32)
        copy.dots(p, alone, 0, len(matrix))
        # The same exact integer products, scaled: at most one rounding apart.
        assert np.allclose(row, alone, rtol=2**-22, atol=0)
    threaded = BatchedProduct(matrix, threads=4, coarse=copy)
    jobs = [_Job(q, lambda dots, spread: dots.copy()) for q in rng.normal(size=(3, 24)).astype(np.float32)]
    for job in jobs:
        job.future.set_running_or_notify_cancel()
    with mock.patch.object(_memory_batch, "_MIN_PART_WORK", 1):  # split as a large matrix is
        threaded._serve(jobs)
    for job in jobs:
        p = copy.prepare(job.query)
        assert p is not None
        alone = np.empty(len(matrix), dtype=np.float32)
        copy.dots(p, alone, 0, len(matrix))
        assert np.allclose(job.future.result(0), alone, rtol=2**-22, atol=0)


@pytest.mark.parametrize("rows,dim", [(16_000, 64), (4_000, 300), (1_000, 1_100), (70_000, 16)])
def test_a_copy_holds_at_most_the_bytes_the_budget_counts(rows: int, dim: int) -> None:
    assert rows * dim > _memory_index.INLINE_WORK  # where copies are made
    copy = Int8Copy.of(np.random.default_rng(12).normal(size=(rows, dim)).astype(np.float32))
    assert copy is not None and copy.blocks is not None
    assert copy.nbytes <= rows * Int8Copy.row_bytes(dim)


@pytest.mark.parametrize(
    "target,name,message",
    [(Int8Copy, "prepare", "coding"), (np, "empty", "out")],  # coding the queue; the pass's buffer
)
def test_a_failure_anywhere_in_a_workers_pass_fails_its_searches_and_the_next_search_is_served(
    target: Any, name: str, message: str
) -> None:
    rng = np.random.default_rng(13)
    matrix = rng.normal(size=(300, 16)).astype(np.float32)
    product = BatchedProduct(matrix, coarse=Int8Copy.of(matrix))
    jobs = [_Job(q, lambda dots, spread: dots) for q in rng.normal(size=(3, 16)).astype(np.float32)]
    product._queue, product._busy = list(jobs), 1  # as `run_async` queues them and takes a place
    with mock.patch.object(target, name, side_effect=MemoryError(message)):  # the fault, injected
        product._work()
    for job in jobs:
        with pytest.raises(MemoryError, match=message):
            job.future.result(0)
    assert product._busy == 0 and product.idle()
    query = rng.normal(size=16).astype(np.float32)
    # Served over the copy again (a coarse pass has a spread), every row.
    assert product.run(query, lambda dots, spread: (len(dots), spread is not None)) == (300, True)


def test_rows_too_wide_for_int32_sums_get_no_int8_copy() -> None:
    widest = (2**31 - 1) // 127**2  # 133,144: numkong's int32 sums of 127 x 127 terms do not wrap
    assert Int8Copy.of(np.full((2, widest), 3.0, dtype=np.float32)) is not None
    assert Int8Copy.of(np.full((2, widest + 1), 3.0, dtype=np.float32)) is None
