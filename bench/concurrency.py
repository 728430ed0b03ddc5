"""Concurrent searches of an indexed collection: turnkit against raw LanceDB, async and sync.

The data and index are ``bench/peers.py``'s (clustered 256-d vectors, the index
``create_index('auto')`` builds, turnkit's search knobs for raw LanceDB too),
searched through the index: the collection is over turnkit's in-memory limits.
Four systems run the same queries, top-10 cosine, with ``--concurrency``
searches in flight:

* turnkit async: ``await query.near_vector(q)`` from one event loop;
* raw LanceDB async: ``await table.vector_search(q)...to_list()`` on the same loop;
* turnkit sync: ``search_sync()`` from a pool of ``--concurrency`` threads;
* raw LanceDB sync: ``table.search(q)...to_list()`` from such a pool.

Each round runs every system once over all queries, in an order rotated from
round to round. Prints the median round's queries per second and the
process's CPU per query, and each system's ratio to raw LanceDB in the same
form (async to async, sync to sync), plus recall@10 against numpy.

``--warm N`` asks turnkit the first N queries (untimed) and waits until it has
measured its index's recall on them, as ``peers.py --warm`` does; the rest are
timed, and raw LanceDB searches with the ``ef`` turnkit chose on them, not the
one the build chose. ``--data text`` runs on ``peers.py``'s text set.

    python bench/concurrency.py --rows 300000 --db DIR    # DIR as for peers.py: the index is kept
    python bench/concurrency.py --rows 100000 --rounds 9
    python bench/concurrency.py --rows 100000 --queries 300 --warm 100 --data text

A script, not a test: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _text_vectors
import numpy as np
from _common import table
from peers import K, dataset, kept_dir, load_turnkit, recall, warm

from turnkit.batteries.vector import create_vector_store
from turnkit.batteries.vector.store._index_policy import apply_knobs, search_knobs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--db", default=None, help="keep the table (and its index) here, as peers.py --db")
    parser.add_argument(
        "--data", choices=("synthetic", "text"), default="synthetic", help="as peers.py --data"
    )
    parser.add_argument("--text-vectors", type=Path, default=None, help="a cached text-vectors-*.npy")
    parser.add_argument(
        "--warm", type=int, default=0, help="ask turnkit the first N queries, untimed (N >= 100), as peers.py"
    )
    args = parser.parse_args()
    if args.warm and not 100 <= args.warm < args.queries:
        parser.error("--warm needs 100 or more queries, and fewer than --queries")
    _text_vectors.PINNED = args.text_vectors
    import lancedb  # noqa: TID251 - the baseline is raw LanceDB

    rng = np.random.default_rng(0)  # peers.py's first size: a table it kept is found again
    vectors, groups, queries, npy = dataset(rng, args.rows, args.dim, args.queries, args.data)
    with tempfile.TemporaryDirectory() as scratch:
        uri = kept_dir(args.db, vectors, groups) if args.db else scratch
        _, build = load_turnkit(uri, vectors, groups)
        vs = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
        if args.warm:  # raw LanceDB then gets the ef turnkit measured on these queries
            warm((vs,), queries[: args.warm])
            queries = queries[args.warm :]
        info = vs("peers").info_sync()
        index = next((i.split(":", 1)[1] for i in info.indexes if i.startswith("vector")), None)
        knobs = search_knobs(index, info.rows, K, None, None, info.search_ef)  # the ef turnkit's curve chose
        base = vs("peers").select("id").limit(K)
        raw_sync = lancedb.connect(uri).open_table("peers")
        truth = [npy.search(q, False) for q in queries]
        print(
            f"{args.rows:,} rows ({args.data}), index {index or 'none'}, built in {build:.1f} s, "
            f"ef {info.search_ef} (measured on {'the queries' if info.recall_queries else 'the build'}); "
            f"{len(queries)} queries, {args.concurrency} in flight, {args.rounds} rounds"
        )

        def raw_query(query: Any) -> Any:
            return apply_knobs(query.distance_type("cosine").limit(K).select(["id"]), knobs)

        async def async_round(table_: Any, name: str) -> tuple[float, float, list[list[int]]]:
            async def tk(q: np.ndarray) -> list[int]:
                return [int(m.id) for m in await base.near_vector(q)]

            async def raw(q: np.ndarray) -> list[int]:
                return [int(r["id"]) for r in await raw_query(table_.vector_search(q)).to_list()]

            fn = tk if name == "turnkit async" else raw
            sem = asyncio.Semaphore(args.concurrency)

            async def one(q: np.ndarray) -> list[int]:
                async with sem:
                    return await fn(q)

            cpu, wall = time.process_time(), time.perf_counter()
            found = await asyncio.gather(*(one(q) for q in queries))
            return time.perf_counter() - wall, time.process_time() - cpu, list(found)

        def sync_round(name: str, pool: concurrent.futures.Executor) -> tuple[float, float, list[list[int]]]:
            def tk(q: np.ndarray) -> list[int]:
                return [int(m.id) for m in base.near_vector(q).search_sync()]

            def raw(q: np.ndarray) -> list[int]:
                return [int(r["id"]) for r in raw_query(raw_sync.search(q)).to_list()]

            fn: Callable[[np.ndarray], list[int]] = tk if name == "turnkit sync" else raw
            cpu, wall = time.process_time(), time.perf_counter()
            found = list(pool.map(fn, queries))
            return time.perf_counter() - wall, time.process_time() - cpu, found

        names = ["turnkit async", "raw LanceDB async", "turnkit sync", "raw LanceDB sync"]
        results: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
        answers: dict[str, list[list[int]]] = {}

        async def run_all() -> None:
            table_ = await (await lancedb.connect_async(uri)).open_table("peers")
            with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                for name in names:  # warm each path once
                    if name.endswith("async"):
                        await async_round(table_, name)
                    else:
                        await asyncio.to_thread(sync_round, name, pool)
                for r in range(args.rounds):
                    for name in names[r % len(names) :] + names[: r % len(names)]:
                        if name.endswith("async"):
                            wall, cpu, found = await async_round(table_, name)
                        else:  # the pool's threads block; this loop only waits for them
                            wall, cpu, found = await asyncio.to_thread(sync_round, name, pool)
                        results[name].append((wall, cpu))
                        answers[name] = found

        asyncio.run(run_all())
    rows = []
    qps = {n: float(np.median([len(queries) / w for w, _ in v])) for n, v in results.items()}
    cpu = {n: float(np.median([c for _, c in v])) / len(queries) * 1000 for n, v in results.items()}
    for name in names:
        raw = "raw LanceDB async" if name.endswith("async") else "raw LanceDB sync"
        rows.append(
            (
                name,
                f"{qps[name]:.0f}",
                " ".join(f"{len(queries) / w:.0f}" for w, _ in results[name]),
                f"{cpu[name]:.2f}",
                f"{recall(answers[name], truth):.3f}",
                f"{qps[name] / qps[raw]:.2f}",
                f"{cpu[name] / cpu[raw]:.2f}",
            )
        )
    header = ("system", "q/s (median)", "q/s by round", "CPU ms/query", "recall@10", "q/s ÷ raw", "CPU ÷ raw")
    print(table(rows, header))


if __name__ == "__main__":
    main()
