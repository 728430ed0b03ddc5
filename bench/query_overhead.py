"""Query overhead of the builder against raw LanceDB on the same table.

The same top-10 filtered query over N x D vectors runs through
``vs(c).near_vector(v).where(...).select(...).limit(10)`` and through LanceDB's
own API, alternating, in one run. Prints medians and the ratio (target <= 1.05).

    .venv/bin/python bench/query_overhead.py [--rows 100000] [--dim 256] [--queries 200] [--index]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

import numpy as np
from _common import median_ms, p95_ms, peak_rss_mb, table

from turnkit.batteries.vector import create_vector_store


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--index", action="store_true", help="build the default vector index first (fast queries)"
    )
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        vs = create_vector_store(uri=tmp, auto_optimize=None)
        t0 = time.perf_counter()
        for start in range(0, args.rows, 10_000):
            n = min(10_000, args.rows - start)
            vecs = rng.normal(size=(n, args.dim)).astype(np.float32)
            vs("bench").upsert_sync(
                [
                    {
                        "id": f"r{start + i}",
                        "vector": vecs[i],
                        "document": f"doc {start + i}",
                        "metadata": {
                            "group": (start + i) % 10,
                            "kind": "even" if (start + i) % 2 == 0 else "odd",
                        },
                    }
                    for i in range(n)
                ]
            )
        vs("bench").optimize_sync()
        if args.index:
            print(f"index: {vs('bench').create_index_sync('auto')}")
        print(f"loaded {args.rows} x {args.dim} in {time.perf_counter() - t0:.1f}s")

        import lancedb  # noqa: TID251 - the baseline is raw LanceDB

        raw_table = lancedb.connect(tmp).open_table("bench")
        builder = vs("bench").where("metadata.group", "<", 5).select("id", "document")
        sql = builder.spec.where_sql
        queries = rng.normal(size=(args.queries, args.dim)).astype(np.float32)

        async def turnkit_async(q: np.ndarray) -> int:
            return len(await builder.near_vector(q).limit(10))

        def turnkit_sync(q: np.ndarray) -> int:
            return len(builder.near_vector(q).limit(10).search_sync())

        def raw_sync(q: np.ndarray) -> int:
            rows = (
                raw_table.search(q)
                .distance_type("cosine")
                .where(sql)
                .select(["id", "document", "_distance"])
                .limit(10)
                .to_list()
            )
            return len(rows)

        # Same answers first: the comparison is meaningless otherwise.
        a = [m.id for m in builder.near_vector(queries[0]).limit(10).search_sync()]
        b = [
            r["id"]
            for r in raw_table.search(queries[0]).distance_type("cosine").where(sql).limit(10).to_list()
        ]
        assert a == b, (a, b)

        samples: dict[str, list[float]] = {"turnkit sync": [], "raw lancedb sync": [], "turnkit async": []}
        loop = asyncio.new_event_loop()
        for i, q in enumerate(queries):
            order = [
                ("turnkit sync", lambda q=q: turnkit_sync(q)),
                ("raw lancedb sync", lambda q=q: raw_sync(q)),
                ("turnkit async", lambda q=q: loop.run_until_complete(turnkit_async(q))),
            ]
            if i % 2:
                order.reverse()
            for name, fn in order:
                t = time.perf_counter()
                assert fn() == 10
                samples[name].append(time.perf_counter() - t)
        loop.close()
        base = median_ms(samples["raw lancedb sync"])
        rows = [
            (name, f"{median_ms(s):.2f}", f"{p95_ms(s):.2f}", f"{median_ms(s) / base:.3f}")
            for name, s in samples.items()
        ]
        print(table(rows, ("path", "median ms", "p95 ms", "ratio vs raw")))
        print(f"peak RSS {peak_rss_mb():.0f} MiB; target: ratio <= 1.05")


if __name__ == "__main__":
    main()
