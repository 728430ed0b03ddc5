"""One async query at a time against a cached collection: the lone path against the one it replaced.

``peers.py``'s data and kept tables (run it first with the same ``--db``);
four systems, sequential async queries (one in flight), alternated over
``--rounds`` rounds of the same queries, in one process:

* turnkit before: every async search of a copy over a million multiply-adds
  handed to a new thread (the replaced path, restored for this run);
* turnkit after: a search alone on a copy of up to ``LONE_INLINE_WORK`` runs
  in the caller's thread, others go to a pool thread;
* raw LanceDB async on the same table; Chroma (sync, called one at a time).

With ``--compare int8`` the two turnkit rows are instead the exact pass from
memory over the float32 matrix and over its int8 copy (``_memory_int8.py``),
both held in memory whatever the planner would choose, plus turnkit as
planned (the default: memory or the index, by measurement).

Prints the median q/s, the range over rounds, recall@10 and the ratios to raw
LanceDB and Chroma as a Markdown table. Needs Chroma (``turnkit[bench]``).

    python bench/lone_query.py --db DIR --rows 10000 --data text --chroma-ef 64
    python bench/lone_query.py --db DIR --rows 100000 --data text --chroma-ef 512 --compare int8
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import threading
import time
from typing import Any

import numpy as np
from peers import Chroma, K, dataset, kept_dir, load_turnkit, recall

from turnkit.batteries.vector.store import _memory_index
from turnkit.batteries.vector.store._index_policy import apply_knobs, search_knobs
from turnkit.batteries.vector.store._memory_batch import BatchedProduct
from turnkit.batteries.vector.store._memory_index import MemoryIndex


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="peers.py's --db: its tables are reused")
    parser.add_argument("--rows", type=int, default=10_000, help="one of peers.py's default sizes")
    parser.add_argument("--data", choices=("synthetic", "text"), default="synthetic")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--chroma-ef", type=int, default=64, help="ef_search, as peers.py tuned it")
    parser.add_argument(
        "--compare",
        choices=("handover", "int8"),
        default="handover",
        help="the lone path against the hand over it replaced, or the int8 pass against the float32 one",
    )
    args = parser.parse_args()
    import lancedb  # noqa: TID251 - the baseline is raw LanceDB

    rng = np.random.default_rng(0)
    for n in (1_000, 10_000, 100_000):  # peers.py's sizes in order: the same data, its kept tables
        vectors, groups, queries, npy = dataset(rng, n, 256, 200, args.data)
        if n == args.rows:
            break
    uri = kept_dir(args.db, vectors, groups)
    vs, _ = load_turnkit(uri, vectors, groups)
    chroma = Chroma(vectors, groups, args.chroma_ef)
    base = vs("peers").select("id").limit(K)
    # Raw LanceDB searches the index with turnkit's knobs (the ef its recall curve gives), as peers.py does.
    info = vs("peers").info_sync()
    index_type = next((i.split(":", 1)[1] for i in info.indexes if i.startswith("vector")), None)
    knobs = search_knobs(index_type, info.rows, K, None, None, info.search_ef)
    lone_work, pool_worker = _memory_index.LONE_INLINE_WORK, BatchedProduct._start_worker

    def new_thread(self: BatchedProduct) -> None:
        threading.Thread(target=self._work, daemon=True).start()

    def before() -> None:
        _memory_index.LONE_INLINE_WORK = 0
        BatchedProduct._start_worker = new_thread  # type: ignore[method-assign]

    def after() -> None:
        _memory_index.LONE_INLINE_WORK = lone_work
        BatchedProduct._start_worker = pool_worker  # type: ignore[method-assign]

    planned_path, coded = MemoryIndex._planned_path, {}

    def in_memory(int8: bool) -> Any:
        def setup() -> None:
            MemoryIndex._planned_path = lambda self, name: None  # type: ignore[method-assign,assignment,return-value]
            snapshot = vs._memory._snapshots.get("peers")
            if snapshot is not None:
                coded.setdefault("copy", snapshot.product.coarse)
                snapshot.product.coarse = coded["copy"] if int8 else None

        return setup

    def planned() -> None:
        MemoryIndex._planned_path = planned_path  # type: ignore[method-assign]
        snapshot = vs._memory._snapshots.get("peers")
        if snapshot is not None and "copy" in coded:
            snapshot.product.coarse = coded["copy"]

    async def run() -> None:
        table = await (await lancedb.connect_async(uri)).open_table("peers")

        async def turnkit(q: np.ndarray) -> list[int]:
            return [int(m.id) for m in await base.near_vector(q)]

        async def raw(q: np.ndarray) -> list[int]:
            query = apply_knobs(table.vector_search(q).distance_type("cosine").limit(K).select(["id"]), knobs)
            return [int(r["id"]) for r in await query.to_list()]

        async def chroma_search(q: np.ndarray) -> list[int]:
            return chroma.search(q, False)

        systems: dict[str, tuple[Any, Any]] = {
            "turnkit before": (turnkit, before),
            "turnkit after": (turnkit, after),
            "lancedb": (raw, after),
            "chroma": (chroma_search, after),
        }
        if args.compare == "int8":
            systems = {
                "turnkit memory, float32 pass": (turnkit, in_memory(False)),
                "turnkit memory, int8 pass": (turnkit, in_memory(True)),
                "turnkit as planned": (turnkit, planned),
                "lancedb": (raw, planned),
                "chroma": (chroma_search, planned),
            }
        if args.compare == "int8":  # the copy is read (and coded) before any system's setup looks for it
            in_memory(True)()
            await turnkit(queries[0])
        names = list(systems)
        qps: dict[str, list[float]] = {name: [] for name in names}
        found: dict[str, list[list[int]]] = {}
        for name, (search, setup) in systems.items():
            setup()
            found[name] = [await search(q) for q in queries]  # warm, and the answers for recall
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                search, setup = systems[name]
                setup()
                started = time.perf_counter()
                for q in queries:
                    await search(q)
                qps[name].append(len(queries) / (time.perf_counter() - started))
        truth = [npy.search(q, False) for q in queries]
        planned()
        for chosen in vs.cache_stats().plans:
            estimates = f"memory {chosen.memory_ms} ms, index {chosen.index_ms} ms"
            print(f"planned: {chosen.path} ({chosen.reason}; {estimates})")
        median = {name: statistics.median(v) for name, v in qps.items()}
        print("| rows | data | system | q/s x1 | rounds | recall@10 | ÷ raw LanceDB | ÷ Chroma |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for name in names:
            print(
                f"| {args.rows:,} | {args.data} | {name} | {median[name]:.0f} "
                f"| {min(qps[name]):.0f}–{max(qps[name]):.0f} | {recall(found[name], truth):.3f} "
                f"| {median[name] / median['lancedb']:.2f} | {median[name] / median['chroma']:.2f} |"
            )

    try:
        asyncio.run(run())
    finally:
        after()
        planned()
        chroma.drop()


if __name__ == "__main__":
    main()
