"""The cost per query of seeing other processes' writes (``read_consistency_interval``).

One collection of N x D vectors on a local disk, searched top-10 the same way
by stores that look for other processes' commits never (``None``, the store's
default), at most once a second (the default of ``turnkit serve`` and
``create_mcp_server(uri=...)``) and before every read (``0``), and by raw
LanceDB without and with its own ``read_consistency_interval``. Queries
alternate between the systems in one run; p50 and p95 per query, and the
ratios against raw LanceDB and against never looking. Then the same through
MCP's ``vector_query`` (in process), with the server's default against never
looking.

    .venv/bin/python bench/freshness.py [--rows 10000] [--dim 256] [--queries 300]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import timedelta
from typing import Any

import numpy as np
from _common import alternate, median_ms, p95_ms, table

from turnkit.batteries.vector import HashEncoder, create_vector_store


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args()

    from turnkit.mcp import DEFAULT_READ_CONSISTENCY_INTERVAL, create_mcp_server

    default = DEFAULT_READ_CONSISTENCY_INTERVAL
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        writer = create_vector_store(uri=tmp, encoder=HashEncoder(args.dim), auto_optimize=None)
        words = [f"w{i}" for i in range(2000)]
        for start in range(0, args.rows, 5_000):
            n = min(5_000, args.rows - start)
            writer("bench").upsert_sync(
                [{"id": f"r{start + i}", "document": " ".join(rng.choice(words, 12))} for i in range(n)]
            )
        writer("bench").optimize_sync()

        import lancedb  # noqa: TID251 - the baseline is raw LanceDB

        stores = {
            "turnkit, never looks (None)": None,
            f"turnkit, looks every {default.total_seconds():g} s (serve's default)": default,
            "turnkit, looks before every read (0)": timedelta(0),
        }
        systems: dict[str, Any] = {}
        for name, interval in stores.items():
            vs = create_vector_store(uri=tmp, auto_optimize=None, read_consistency_interval=interval)

            def search(q: np.ndarray, vs: Any = vs) -> list[str]:
                return [m.id for m in vs("bench").near_vector(q).select("id").limit(10).search_sync()]

            systems[name] = search
        for name, interval in {
            "raw LanceDB, never looks": None,
            f"raw LanceDB, read_consistency_interval {default.total_seconds():g} s": default,
        }.items():
            raw = lancedb.connect(tmp, read_consistency_interval=interval).open_table("bench")

            def raw_search(q: np.ndarray, raw: Any = raw) -> list[str]:
                rows = raw.search(q).distance_type("cosine").select(["id"]).limit(10).to_list()
                return [r["id"] for r in rows]

            systems[name] = raw_search

        queries = rng.normal(size=(args.queries, args.dim)).astype(np.float32)
        for search in systems.values():  # open, read the in-memory copies
            for q in queries[:10]:
                search(q)
        t0 = time.perf_counter()
        samples, found = alternate(systems, queries)
        answers = {name: [tuple(a) for a in found[name]] for name in systems}
        first = next(iter(answers.values()))
        assert all(a == first for a in answers.values()), "the systems disagree"
        took = time.perf_counter() - t0
        print(f"{args.rows} x {args.dim}, {args.queries} queries each, alternating ({took:.1f}s)")
        raw_p50 = median_ms(samples["raw LanceDB, never looks"])
        never_p50 = median_ms(samples["turnkit, never looks (None)"])
        rows = [
            (
                name,
                f"{median_ms(s):.3f}",
                f"{p95_ms(s):.3f}",
                f"{median_ms(s) / raw_p50:.3f}",
                f"{median_ms(s) / never_p50:.2f}",
            )
            for name, s in samples.items()
        ]
        print(table(rows, ("search", "p50 ms", "p95 ms", "vs raw LanceDB", "vs never looking")))

        async def through_mcp() -> dict[str, list[float]]:
            import mcp

            servers = {
                f"vector_query, looks every {default.total_seconds():g} s (default)": create_mcp_server(
                    uri=tmp, collections="bench"
                ),
                "vector_query, never looks": create_mcp_server(
                    uri=tmp, collections="bench", read_consistency_interval=None
                ),
            }
            texts = [" ".join(rng.choice(words, 4)) for _ in range(args.queries)]
            times: dict[str, list[float]] = {name: [] for name in servers}
            async with (
                mcp.Client(servers[next(iter(servers))]) as a,
                mcp.Client(servers[list(servers)[1]]) as b,
            ):
                clients = dict(zip(servers, (a, b), strict=True))
                for client in clients.values():
                    for text in texts[:10]:
                        await client.call_tool("vector_query", {"query_text": text, "top_k": 10})
                for i, text in enumerate(texts):
                    order = list(clients.items())
                    for name, client in order if i % 2 else order[::-1]:
                        started = time.perf_counter()
                        result = await client.call_tool("vector_query", {"query_text": text, "top_k": 10})
                        times[name].append(time.perf_counter() - started)
                        assert not result.is_error
            return times

        times = asyncio.run(through_mcp())
        base = median_ms(times["vector_query, never looks"])
        rows = [
            (name, f"{median_ms(s):.3f}", f"{p95_ms(s):.3f}", f"{median_ms(s) / base:.3f}")
            for name, s in times.items()
        ]
        print(table(rows, ("MCP tool call (in process)", "p50 ms", "p95 ms", "vs never looking")))


if __name__ == "__main__":
    main()
