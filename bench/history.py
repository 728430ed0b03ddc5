"""Conversation history shared by processes: order, losses and cost, against the Agents SDK's SQLiteSession.

N spawned processes each append M messages, one call each, to one
conversation of a `create_vector_message_store` on a local directory, all
starting together. Printed per N: messages stored, distinct, duplicated and
lost, whether every process read the same order, whether each writer's
messages kept its own order, and the median and p95 time of one append.
The baseline is the SDK's ``SQLiteSession`` on a file, with the same
processes appending to one session (its lock is per process, so the file's
own locking serializes them).

    python bench/history.py [--workers 1 2 4] [--messages 50]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import tempfile
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from _common import median_ms, p95_ms, table


def _turnkit(db: str, me: int, count: int, barrier: Any) -> tuple[list[str], list[float]]:
    from turnkit import Message
    from turnkit.batteries.vector import HashEncoder, create_vector_message_store, create_vector_store

    history = create_vector_message_store(
        store=create_vector_store(uri=db, encoder=HashEncoder()), collection="chat"
    )
    history.messages_sync("warm-up")
    barrier.wait()
    took = []
    for i in range(count):
        start = time.perf_counter()
        history.append_sync("c", [Message(role="user", content=f"writer {me} says {i}", id=f"{me}-{i}")])
        took.append(time.perf_counter() - start)
    barrier.wait()
    return [m.id for m in history.messages_sync("c")], took


def _sqlite(db: str, me: int, count: int, barrier: Any) -> tuple[list[str], list[float]]:
    from agents.memory import SQLiteSession

    session = SQLiteSession("c", os.path.join(db, "sessions.db"))
    asyncio.run(session.get_items())
    barrier.wait()
    took = []
    for i in range(count):
        start = time.perf_counter()
        asyncio.run(
            session.add_items([{"role": "user", "content": f"writer {me} says {i}", "id": f"{me}-{i}"}])
        )
        took.append(time.perf_counter() - start)
    barrier.wait()
    items = asyncio.run(session.get_items())
    session.close()
    return [str(item["id"]) for item in items], took  # type: ignore[typeddict-item]


def _trial(writer: Any, workers: int, count: int) -> tuple[str, ...]:
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as db, context.Manager() as manager:
        barrier = manager.Barrier(workers)
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = [pool.submit(writer, db, w, count, barrier) for w in range(workers)]
            results = [f.result() for f in futures]
    views = [ids for ids, _ in results]
    took = [t for _, times in results for t in times]
    order = views[0]
    counts = Counter(order)
    expected = {f"{w}-{i}" for w in range(workers) for i in range(count)}
    own_order = all(
        [i for i in order if i.startswith(f"{w}-")] == [f"{w}-{i}" for i in range(count)]
        for w in range(workers)
    )
    return (
        str(len(order)),
        str(len(counts)),
        str(sum(n - 1 for n in counts.values())),
        str(len(expected - set(counts))),
        "yes" if all(v == order for v in views) else "NO",
        "yes" if own_order else "NO",
        f"{median_ms(took):.1f}",
        f"{p95_ms(took):.1f}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--messages", type=int, default=50)
    args = parser.parse_args()
    rows = []
    for workers in args.workers:
        for name, writer in (("turnkit", _turnkit), ("SQLiteSession", _sqlite)):
            rows.append((name, str(workers), *_trial(writer, workers, args.messages)))
    header = (
        "history",
        "N",
        "stored",
        "distinct",
        "dup",
        "lost",
        "one order",
        "own order",
        "append ms",
        "p95 ms",
    )
    print(table(rows, header))
    by = {(r[0], r[1]): float(r[8]) for r in rows}
    for workers in args.workers:
        ratio = by[("turnkit", str(workers))] / by[("SQLiteSession", str(workers))]
        print(f"N={workers}: one append {ratio:.1f}x SQLiteSession's median")


if __name__ == "__main__":
    main()
