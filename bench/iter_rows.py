"""Benchmark: reading a whole collection with ``iter_rows()`` against one raw LanceDB scan.

``iter_rows()`` reads pages in id order (``id > last ORDER BY id LIMIT n``
on a pinned version) and gives each row as a `VectorMatch`, so memory holds
one page; the baseline reads every row of the same table as Python dicts in
one ``to_list()``, in storage order, holding them all (and ``to_arrow()``,
without Python objects, for scale).
Each collection has 256-d vectors, 300-character documents and a metadata
field. Prints the time of a full pass for each page size, its ratio to the
baseline, and the peak memory growth of the pass.

    python bench/iter_rows.py                        # 20,000 and 100,000 rows
    python bench/iter_rows.py --sizes 50000 --pages 1000 5000

A script, not a test: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

import lancedb  # noqa: TID251 - the baseline is raw LanceDB
import numpy as np
from _common import peak_rss_mb, table

from turnkit.batteries.vector import create_vector_store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--pages", type=int, nargs="+", default=[1_000, 5_000])
    args = parser.parse_args()
    rows_out: list[tuple[str, ...]] = []
    root = Path(tempfile.mkdtemp(prefix="iter-rows-"))
    try:
        for size in args.sizes:
            uri = str(root / f"db{size}")
            vs = create_vector_store(uri, auto_optimize=None, memory_cache=None)
            rng = np.random.default_rng(0)
            for start in range(0, size, 10_000):
                vs("c").upsert_sync(
                    [
                        {
                            "id": f"{rng.integers(1 << 62):x}",
                            "vector": rng.normal(size=256).astype(np.float32),
                            "document": "x" * 300,
                            "metadata": {"n": i},
                        }
                        for i in range(start, min(start + 10_000, size))
                    ]
                )
            vs("c").optimize_sync()
            # iter_rows first: the peak memory the full scan reaches would hide its own.
            passes: list[tuple[int, float, float]] = []
            for page in args.pages:
                rss = peak_rss_mb()
                began = time.perf_counter()
                seen = sum(1 for _ in vs("c").select("*").iter_rows_sync(page_size=page))
                passes.append((page, time.perf_counter() - began, peak_rss_mb() - rss))
                assert seen == size
            rss = peak_rss_mb()
            began = time.perf_counter()
            raw = lancedb.connect(uri).open_table("c")
            scanned = len(raw.search().limit(None).to_list())
            baseline = time.perf_counter() - began
            assert scanned == size
            rows_out.append(
                (f"{size:,}", "LanceDB to_list()", f"{baseline:.2f}", "1.00", f"{peak_rss_mb() - rss:.0f}")
            )
            began = time.perf_counter()
            assert raw.to_arrow().num_rows == size
            took = time.perf_counter() - began
            rows_out.append((f"{size:,}", "LanceDB to_arrow()", f"{took:.2f}", f"{took / baseline:.2f}", "-"))
            for page, took, grew in passes:
                rows_out.append(
                    (
                        f"{size:,}",
                        f"iter_rows page {page:,}",
                        f"{took:.2f}",
                        f"{took / baseline:.2f}",
                        f"{grew:.0f}",
                    )
                )
    finally:
        asyncio.set_event_loop(None)
        shutil.rmtree(root, ignore_errors=True)
    print(table(rows_out, ("rows", "read", "seconds", "ratio", "peak growth MiB")))


if __name__ == "__main__":
    main()
