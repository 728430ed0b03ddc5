"""How long a recall measurement holds up the loop searches run on: on a worker thread, against inline.

A measurement on a collection's own queries (``store/_asked.py``) runs in the
background on turnkit's loop while searches go on. Its exact pass over the
table (``_recall._exact_top``) computes each batch's distances on a worker
thread; the replaced path computed them on the loop itself, restored here for
the comparison. Each is timed for a whole measurement and for its exact
pass alone. A probe on the same loop sleeps 1 ms at a time and records by
how much each wake-up was late: that lateness is what a search arriving at
that moment would wait before it starts. Baseline: the probe on an idle loop.

Uses ``peers.py``'s kept tables (run it first with the same ``--db``); the
queries are held-out ones of the data set, as an agent's would be.

    python bench/recall_stall.py --db DIR --rows 100000 --data text [--text-vectors FILE.npy]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

import _text_vectors
import numpy as np
from _common import table
from peers import dataset, kept_dir

from turnkit.batteries.vector import create_vector_store
from turnkit.batteries.vector.store import _recall


async def _inline(fn: Any, /, *args: Any) -> Any:
    """``to_thread`` as the replaced path had it: the arithmetic on the loop."""
    return fn(*args)


async def probe(until: asyncio.Event, lates: list[float]) -> None:
    while not until.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.001)
        lates.append(time.perf_counter() - started - 0.001)


async def measured(coll: Any, queries: np.ndarray, what: str) -> tuple[list[float], float]:
    """The probe's lateness while ``what`` runs: the whole measurement, its exact pass, or nothing."""
    lates: list[float] = []
    until = asyncio.Event()
    task = asyncio.ensure_future(probe(until, lates))
    started = time.perf_counter()
    if what == "measurement":
        args = (coll.table, coll.metric, coll.index_type, coll.index_rows, queries)
        await _recall.measure_on_queries(*args)
    elif what == "exact pass":
        unit = queries / np.linalg.norm(queries, axis=1, keepdims=True)
        await _recall._exact_top(coll.table, coll.metric, unit, _recall.K)
    else:
        await asyncio.sleep(5.0)
    spent = time.perf_counter() - started
    until.set()
    await task
    return lates, spent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="peers.py's --db: its tables are reused")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--data", choices=("synthetic", "text"), default="text")
    parser.add_argument("--queries", type=int, default=100, help="queries measured, as a collection keeps")
    parser.add_argument("--text-vectors", type=Path, default=None, help="a cached text-vectors-*.npy")
    args = parser.parse_args()
    _text_vectors.PINNED = args.text_vectors
    # peers.py's default 200 queries: the data set (and so the kept table) depends on the count.
    vectors, groups, queries, _ = dataset(np.random.default_rng(0), args.rows, 256, 200, args.data)
    queries = queries[: args.queries]
    uri = kept_dir(args.db, vectors, groups)
    if not Path(uri).exists():
        raise SystemExit(f"no kept table at {uri}: run peers.py with --db {args.db} first")
    store = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)

    async def run() -> list[tuple[str, ...]]:
        coll = await store._collection("peers")
        if coll.index_type is None:
            raise SystemExit("the kept table has no vector index")
        rows = []
        real = _recall.to_thread
        ways = (
            ("measurement", "worker thread (now)", real),
            ("measurement", "inline (replaced)", _inline),
            ("exact pass", "worker thread (now)", real),
            ("exact pass", "inline (replaced)", _inline),
            ("nothing: idle loop", "", real),
        )
        for what, how, offload in ways:
            _recall.to_thread = offload  # type: ignore[assignment]
            try:
                lates, spent = await measured(coll, queries, what)
            finally:
                _recall.to_thread = real
            ms = np.array(lates) * 1000
            rows.append(
                (
                    what,
                    how,
                    f"{spent:.1f}",
                    f"{np.percentile(ms, 50):.2f}",
                    f"{np.percentile(ms, 99):.2f}",
                    f"{ms.max():.1f}",
                    f"{(ms > 10).sum()}",
                )
            )
        return rows

    rows = asyncio.run(run())
    header = ("running", "arithmetic", "s", "late p50 ms", "late p99 ms", "late max ms", "> 10 ms late")
    print(f"{args.rows:,} rows, {args.data}, {args.queries} queries measured")
    print(table(rows, header))


if __name__ == "__main__":
    main()
