"""The planner's choice between the exact pass from memory and the HNSW index, against both fixed choices.

For each data set and size, builds turnkit's HNSW-SQ index (``create_index('hnsw_sq')``,
which measures the recall curve and the index's cost per query at each ``ef``), then
asks held-out queries one at a time through three stores on the same table, alternated
per query:

- ``planner``: the default store, whose planner picks memory or the index by the two estimated costs;
- ``memory``: every unfiltered search an exact pass from memory (no cap, no planner);
- ``index``: every search through the index at the measured ``ef`` (memory tier off).

Prints the planner's choice with its two estimates, p50 latency, sequential q/s and
recall@10 against numpy's exact top-10, and p50 as a ratio of each fixed choice's.

    python bench/planner.py [--rows 10000,100000] [--queries 300] [--data synthetic|text|both]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import numpy as np
from _common import median_ms, table
from recall_target import data_sets, write_and_index

from turnkit.batteries.vector import MemoryCache, create_vector_store

K = 10


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", default="10000,100000", help="comma-separated sizes")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--dim", type=int, default=256, help="of the synthetic set")
    parser.add_argument("--data", choices=["synthetic", "text", "both"], default="both")
    args = parser.parse_args()
    out: list[tuple[str, ...]] = []
    for rows in (int(r) for r in args.rows.split(",")):
        for name, vectors, queries in data_sets(args.data, rows, args.queries, args.dim):
            unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
            truth = [set(np.argsort(-(unit @ q))[:K].tolist()) for q in queries]
            with tempfile.TemporaryDirectory() as tmp:
                out.extend(_run(tmp, name, vectors, queries, truth))
    print()
    print(
        table(
            out,
            (
                "rows",
                "data",
                "system",
                "path",
                "est. ms memory / index",
                "p50 ms",
                "q/s x1",
                "recall@10",
                "p50 ÷ memory",
                "p50 ÷ index",
            ),
        )
    )


def _run(
    uri: str, name: str, vectors: np.ndarray, queries: np.ndarray, truth: list[set[int]]
) -> list[tuple[str, ...]]:
    built = write_and_index(create_vector_store(uri=uri, auto_optimize=None, memory_cache=None), vectors)
    unbounded = MemoryCache(max_rows=10**9, max_vector_bytes=2**40, max_bytes=2**40)
    fixed: dict[str, Any] = {"auto_optimize": None, "recall_from_queries": False}
    stores = {
        # The build's curve throughout: a measurement on the timed queries would change the plan and
        # the index's ef partway through, and compete with them for the cores.
        "planner": create_vector_store(uri=uri, **fixed),
        "memory": create_vector_store(uri=uri, memory_cache=unbounded, **fixed),
        "index": create_vector_store(uri=uri, memory_cache=None, **fixed),
    }
    info = stores["planner"].collection_info_sync("v")
    plan = info.plan
    print(f"{name} {vectors.shape}: build + measure {built:.0f} s, ef {info.search_ef}; plan {plan}")
    for store in stores.values():  # opened and warm: copies read, the planner's estimates made
        store("v").near_vector(queries[0]).limit(K).search_sync()
    # The fixed memory choice: no measured cost, so the (unbounded) size limits decide.
    stores["memory"]._collections["v"].recorded_curve = None
    stores["memory"]._memory.forget("v")
    stores["memory"]("v").near_vector(queries[0]).limit(K).search_sync()
    times: dict[str, list[float]] = {k: [] for k in stores}
    hits = dict.fromkeys(stores, 0)
    for q, right in zip(queries, truth, strict=True):
        for label, store in stores.items():  # alternated per query: the same load for each
            builder = store("v").near_vector(q).select("id").limit(K)
            t = time.perf_counter()
            found = builder.search_sync()
            times[label].append(time.perf_counter() - t)
            hits[label] += len(right & {int(m.id) for m in found})
    held = {label: [c.name for c in s.cache_stats().collections] for label, s in stores.items()}
    paths = {"planner": "memory" if held["planner"] else "index", "memory": "memory", "index": "index"}
    assert held["memory"] == ["v"] and plan is not None and paths["planner"] == plan.path
    estimates = f"{plan.memory_ms:.2f} / {plan.index_ms:.2f}"
    rows = []
    for label in stores:
        p50 = median_ms(times[label])
        rows.append(
            (
                f"{len(vectors):,}",
                name,
                label,
                paths[label],
                estimates if label == "planner" else "",
                f"{p50:.2f}",
                f"{len(queries) / sum(times[label]):.0f}",
                f"{hits[label] / (K * len(queries)):.3f}",
                f"{p50 / median_ms(times['memory']):.2f}",
                f"{p50 / median_ms(times['index']):.2f}",
            )
        )
    return rows


if __name__ == "__main__":
    main()
