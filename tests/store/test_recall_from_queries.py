"""The HNSW recall measured again on a collection's own queries: kept, measured, used, and let go."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import MemoryCache, VectorStoreUsageError, create_vector_store
from turnkit.batteries.vector.store._asked import SAMPLE
from turnkit.batteries.vector.store._recall import LADDER, lower_bound, measure_on_queries

N, DIM = 3000, 96  # i.i.d. directions in 96-d: the build's stand-ins ask for ef 96-128 here


def _gaussian(n: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    vectors = _gaussian(N, DIM, seed=0)
    uri = str(tmp_path_factory.mktemp("asked"))
    store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")
    return uri, vectors


def _near_copies(vectors: np.ndarray, count: int, seed: int) -> np.ndarray:
    """Questions close to what is stored: far easier for the graph than the build's stand-ins."""
    return vectors[:count] + 0.01 * _gaussian(count, vectors.shape[1], seed)


def _recall_at(store, vectors: np.ndarray, queries: np.ndarray, ef: int) -> float:
    hits = 0
    for q in queries:
        truth = set(np.argsort(-(vectors @ (q / np.linalg.norm(q))))[:10].astype(str))
        found = store("v").near_vector(q).select("id").limit(10).ef(ef).search_sync()
        hits += len(truth & {m.id for m in found})
    return hits / (10 * len(queries))


def _measured(store, timeout: float = 600.0):  # a bound on a hang, not a speed: polls until done
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = store.collection_info_sync("v")
        if info.recall_queries:
            return info
        time.sleep(0.05)
    raise AssertionError("no curve was measured on the collection's queries")


def _done(asked, timeout: float = 600.0) -> None:
    """Wait until the look the last query started has ended (a bound on a hang, not a speed)."""
    deadline = time.monotonic() + timeout
    while asked.task is None or not asked.task.done():
        assert time.monotonic() < deadline, "the look never ended"
        time.sleep(0.05)


def test_searches_use_the_ef_the_collections_own_queries_need(built):
    uri, vectors = built
    store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    build = store.collection_info_sync("v")
    assert build.recall_queries == 0 and build.search_ef >= 64  # the graph is built anew each run
    queries = _near_copies(vectors, SAMPLE, seed=1)
    for q in queries[: SAMPLE - 1]:
        store("v").near_vector(q).limit(10).search_sync()
    assert store.collection_info_sync("v").recall_queries == 0  # not before SAMPLE were asked
    store("v").near_vector(queries[-1]).limit(10).search_sync()
    info = _measured(store)
    assert info.recall_queries == SAMPLE
    # The ladder stops where the mean reaches 0.999, though 100 queries bound it at 0.998 at most.
    assert len(info.recall_curve) < len(LADDER) and info.recall_curve[-1][1] < 0.999
    assert info.search_ef == next(ef for ef, recall in info.recall_curve if recall >= 0.98)
    assert info.search_ef < build.search_ef  # the stand-ins over-spent for these questions
    # What it measured holds: the questions meet the target at the ef it chose, and others of
    # the same kind it never saw come within the sample's error of it.
    assert _recall_at(store, vectors, queries, info.search_ef) >= 0.98
    held_out = vectors[SAMPLE : 2 * SAMPLE] + 0.01 * _gaussian(SAMPLE, DIM, seed=11)
    assert _recall_at(store, vectors, held_out, info.search_ef) >= 0.96
    # Another store has not seen these questions: it keeps the build's curve.
    other = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    assert other.collection_info_sync("v").search_ef == build.search_ef


def test_the_measured_recall_is_a_lower_bound_of_the_queries_mean(tmp_path):
    # A table of its own, small enough that the ladder ends within a few steps.
    vectors = _gaussian(1200, 48, seed=12)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")
    queries = _gaussian(120, 48, seed=2)  # held out: recall varies from query to query

    async def measure():
        coll = await store._collection("v")
        return await measure_on_queries(coll.table, coll.metric, coll.index_type, coll.index_rows, queries)

    curve = asyncio.run(measure())
    assert curve is not None and curve.queries == len(queries)
    assert [ef for ef, _ in curve.points] == list(LADDER[: len(curve.points)])
    assert len(curve.costs) == len(curve.points) >= 2
    assert curve.points[0][1] < 0.98  # the first step misses some: the bound is not trivially 1
    for ef, bound in curve.points:
        # Each query's hits by id (ties at the 10th are vanishingly rare for these directions).
        hits = []
        for q in queries:
            truth = set(np.argsort(-(vectors @ q))[:10].astype(str))
            found = store("v").near_vector(q).select("id").limit(10).ef(ef).search_sync()
            hits.append(len(truth & {m.id for m in found}))
        assert bound == pytest.approx(round(max(0.0, lower_bound(hits)), 4), abs=0.005)
        assert bound < np.mean(hits) / 10 or bound == 0.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10), min_size=2, max_size=300))
def test_the_lower_bound_sits_below_the_mean_and_tightens_with_more_queries(hits):
    mean = sum(hits) / (10 * len(hits))
    bound = lower_bound(hits)
    assert bound < mean or mean == 0  # even when all found 10: 100 queries do not show 1.0 for sure
    assert lower_bound(hits + hits) >= bound - 1e-12  # the same spread over twice the queries
    assert lower_bound([10] * 100) > 0.99


def test_a_measurement_waits_while_many_rows_are_outside_the_index(tmp_path):
    vectors = _gaussian(1700, 32, seed=8)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors[:1500])])
    store("v").create_index_sync("hnsw_sq")
    store("v").upsert_sync([{"id": str(i), "vector": vectors[i]} for i in range(1500, 1700)])
    asked = store._collections["v"].asked
    queries = vectors[1500:1600] + 0.01 * _gaussian(SAMPLE, 32, seed=9)  # near the new rows
    for q in queries:
        store("v").near_vector(q).limit(10).search_sync()
    _done(asked)
    assert asked.curve is None and asked.looked_at == SAMPLE  # 200 rows outside the index: no curve
    store("v").optimize_sync()  # folds them in
    for q in queries:
        store("v").near_vector(q).limit(10).search_sync()
    info = _measured(store)
    assert info.recall_queries == SAMPLE and asked.rows == 1700


def test_measuring_stops_when_told_between_two_steps(built):
    uri, vectors = built
    store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)

    async def measure():
        coll = await store._collection("v")
        args = (coll.table, coll.metric, coll.index_type, coll.index_rows, vectors[:SAMPLE])
        return await measure_on_queries(*args, keep_going=lambda: False)

    assert asyncio.run(measure()) is None


def test_exit_cancels_a_measurement_instead_of_waiting_for_it():
    # Order, not time: the measurement is cancelled before exit's wait for other work ends, where
    # waiting and then cancelling what is late would record "finished" first.
    script = (
        "task = asyncio.run_coroutine_threadsafe(_start(), _aio.loop()).result()\n"
        "_aio._BG.wait_at_exit()\n"  # what the interpreter's exit runs
        "print(task.cancelled(), _aio.exiting(), *events)\n"
    )
    prelude = (
        "import asyncio\n"
        "from turnkit import _aio\n"
        "events = []\n"
        "async def _measure():\n"
        "    try:\n"
        "        await asyncio.sleep(3600)\n"
        "    except asyncio.CancelledError:\n"
        "        events.append('cancelled')\n"
        "        raise\n"
        "async def _other():\n"
        "    await asyncio.sleep(0.5)\n"
        "    events.append('finished')\n"
        "async def _start():\n"
        "    task = asyncio.ensure_future(_measure())\n"
        "    _aio.cancel_before_exit(task)\n"
        "    _aio.finish_before_exit(asyncio.ensure_future(_other()))\n"
        "    return task\n"
    )
    command = [sys.executable, "-c", prelude + script]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "cancelled", "finished"]


def test_near_id_queries_are_not_kept_and_the_setting_turns_it_off(built):
    uri, vectors = built
    store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    for i in range(SAMPLE + 10):
        store("v").near_id(str(i)).limit(10).search_sync()
    assert store._collections["v"].asked.noted == 0  # a stored vector would overstate recall

    off = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None, recall_from_queries=False)
    for q in _near_copies(vectors, SAMPLE + 10, seed=3):
        off("v").near_vector(q).limit(10).search_sync()
    asked = off._collections["v"].asked
    assert asked.noted == 0 and asked.task is None
    assert off.collection_info_sync("v").recall_queries == 0


def test_every_search_path_notes_its_query(tmp_path):
    vectors = _gaussian(600, 16, seed=4)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=MemoryCache())
    rows = [{"id": str(i), "vector": v, "metadata": {"k": i % 2}} for i, v in enumerate(vectors)]
    store("v").upsert_sync(rows)
    store("v").create_index_sync("hnsw_sq")
    asked = store._collections["v"].asked
    store("v").near_vector(vectors[0]).limit(3).search_sync()  # loads the copy (the loop's path)
    assert [c.name for c in store.cache_stats().collections] == ["v"]
    store("v").near_vector(vectors[1]).limit(3).search_sync()  # from memory, in this thread
    asyncio.run(store("v").near_vector(vectors[2]).limit(3).search())  # from memory, on this loop
    store("v").near_vector(vectors[3]).where("metadata.k", 1).limit(3).search_sync()  # filtered
    assert asked.noted == 4
    assert [v.tobytes() for v in asked.recent] == [vectors[i].tobytes() for i in range(4)]


def test_a_rebuild_sets_the_queries_curve_aside_until_it_is_measured_again(tmp_path):
    vectors = _gaussian(1500, 32, seed=5)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")
    queries = _near_copies(vectors, SAMPLE, seed=6)
    for q in queries:
        store("v").near_vector(q).limit(10).search_sync()
    assert _measured(store).recall_queries == SAMPLE
    store("v").create_index_sync("hnsw_sq")
    assert store.collection_info_sync("v").recall_queries == 0  # measured on the old graph
    for q in queries:
        store("v").near_vector(q).limit(10).search_sync()
    assert _measured(store).recall_queries == SAMPLE
    store.drop_collection_sync("v")


def test_repeated_questions_wait_for_distinct_ones(tmp_path):
    vectors = _gaussian(1500, 32, seed=7)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    store("v").create_index_sync("hnsw_sq")
    asked = store._collections["v"].asked
    for _ in range(SAMPLE):
        store("v").near_vector(vectors[0]).limit(10).search_sync()
    _done(asked)
    assert asked.curve is None and asked.looked_at == SAMPLE  # one look, nothing to measure on
    assert store.collection_info_sync("v").recall_queries == 0


def test_recall_from_queries_must_be_a_bool():
    with pytest.raises(VectorStoreUsageError) as caught:
        create_vector_store(uri="memory://", recall_from_queries="yes")
    assert caught.value.code == "E_INVALID_VECTOR_STORE_CONFIG"


def test_turnkits_exit_drain_runs_before_worker_threads_refuse_work():
    # The last exit hook registered runs first: turnkit's drain must come after concurrent.futures'
    # (which shuts worker threads to new work), whatever was imported before the loop started.
    script = (
        "import threading\n"
        "from turnkit import _aio\n"
        "_aio.loop()\n"  # the loop starts before the vector battery is imported
        "hooks = [getattr(getattr(f, 'func', f), '__name__', '') for f in threading._threading_atexits]\n"
        "print(hooks.index('wait_at_exit') > hooks.index('_python_exit'))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True"]


def test_a_search_from_a_thread_after_the_main_thread_returns_is_answered(tmp_path):
    # The memory tier answers an async search on a worker thread; once exit has begun those refuse
    # new work, and the search runs on the loop instead of failing.
    script = (
        "import concurrent.futures.thread as pool, sys, threading\n"
        "from turnkit.batteries.vector import create_vector_store\n"
        "store = create_vector_store(uri=sys.argv[1], auto_optimize=None)\n"
        "store('c').upsert_sync([{'id': str(i), 'vector': [float(i), 1.0]} for i in range(50)])\n"
        "main = threading.main_thread()\n"
        "def search():\n"
        "    main.join()\n"
        "    while not pool._shutdown:\n"  # exit's hook that closes worker threads to new work has run
        "        threading.Event().wait(0.01)\n"
        "    found = store('c').near_vector([1.0, 0.0]).limit(3).search_sync()\n"
        "    print('found', len(found), flush=True)\n"
        "threading.Thread(target=search).start()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["found", "3"], done.stdout + done.stderr


def test_to_thread_passes_the_functions_own_errors_through():
    from turnkit._aio import to_thread

    def fails() -> None:
        raise RuntimeError("the function's own")

    with pytest.raises(RuntimeError, match="the function's own"):
        asyncio.run(to_thread(fails))


def test_an_index_built_on_a_thread_while_the_main_thread_returns_keeps_its_curve(tmp_path):
    # At exit worker threads refuse new work, and the build's recall measurement computes its exact
    # pass on one: it computes on the loop instead, and the index keeps its measured curve.
    vectors = _gaussian(3000, 32, seed=13)
    store = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    store("v").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    script = (
        "import sys, threading\n"
        "from turnkit.batteries.vector import create_vector_store\n"
        "store = create_vector_store(uri=sys.argv[1], auto_optimize=None, memory_cache=None)\n"
        "def build():\n"
        "    store('v').create_index_sync('hnsw_sq')\n"
        "    print('curve', len(store.collection_info_sync('v').recall_curve), flush=True)\n"
        "threading.Thread(target=build).start()\n"  # not a daemon: exit waits for it
    )
    command = [sys.executable, "-c", script, str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "curve" and int(done.stdout.split()[1]) > 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
