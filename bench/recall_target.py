"""The HNSW ``ef`` each build measures for the recall target, against the row-count rule it replaces.

For each data set, builds turnkit's HNSW-SQ index on N rows (``create_index('hnsw_sq')``,
which also measures the recall curve), then asks held-out queries (vectors not stored)
at the measured ``ef`` and at the rule's ``ef`` (``default_ef``), alternating per query,
and prints recall@10 against numpy's exact top-10 and p50 latency as a ratio of the
rule's. The memory tier is off, so every search goes through the index.

    python bench/recall_target.py [--rows 100000] [--queries 200] [--data synthetic|text|both] [--target 0.98]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from _common import median_ms, table
from peers import clustered

from turnkit.batteries.vector import VectorStore, create_vector_store
from turnkit.batteries.vector.store._index_policy import default_ef


def data_sets(name: str, rows: int, queries: int, dim: int) -> list[tuple[str, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    out = []
    if name in ("synthetic", "both"):
        out.append(("synthetic", clustered(rng, rows, dim), clustered(rng, queries, dim)))
    if name in ("text", "both"):
        from _text_vectors import text_vectors

        text = text_vectors()
        picks = rng.permutation(len(text))[: rows + queries]
        out.append(("text", text[picks[:rows]], text[picks[rows:]]))
    return out


def write_and_index(store: VectorStore, vectors: np.ndarray) -> float:
    """Write ``vectors`` to collection ``v`` (ids: their positions), build HNSW-SQ; the build's seconds."""
    for start in range(0, len(vectors), 50_000):
        chunk = vectors[start : start + 50_000]
        store("v").upsert_sync([{"id": str(start + i), "vector": v} for i, v in enumerate(chunk)])
    started = time.perf_counter()
    store("v").create_index_sync("hnsw_sq")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=256, help="of the synthetic set")
    parser.add_argument("--data", choices=["synthetic", "text", "both"], default="both")
    parser.add_argument("--target", type=float, default=0.98)
    args = parser.parse_args()
    out = []
    for name, vectors, queries in data_sets(args.data, args.rows, args.queries, args.dim):
        unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        truth = [set(np.argsort(-(unit @ q))[:10].tolist()) for q in queries]
        with tempfile.TemporaryDirectory() as tmp:
            # The build's curve is what this compares; no measurement on the timed queries beside them.
            store = create_vector_store(
                uri=tmp,
                auto_optimize=None,
                memory_cache=None,
                recall_target=args.target,
                recall_from_queries=False,
            )
            built = write_and_index(store, vectors)
            info = store.collection_info_sync("v")
            curve = ", ".join(f"{ef}:{recall:.3f}" for ef, recall in info.recall_curve)
            print(f"{name}: {vectors.shape}, build + measure {built:.0f} s; curve {curve}")
            efs = {"measured": info.search_ef, "row-count rule": default_ef(len(vectors), 10)}
            times: dict[str, list[float]] = {k: [] for k in efs}
            hits = dict.fromkeys(efs, 0)
            for q, right in zip(queries, truth, strict=True):
                for label, ef in efs.items():  # alternated per query: the same load for both
                    builder = store("v").near_vector(q).select("id").limit(10).ef(int(ef or 0))
                    t = time.perf_counter()
                    found = builder.search_sync()
                    times[label].append(time.perf_counter() - t)
                    hits[label] += len(right & {int(m.id) for m in found})
            rule = median_ms(times["row-count rule"])
            for label, ef in efs.items():
                p50 = median_ms(times[label])
                recall = hits[label] / (10 * len(queries))
                out.append((name, label, str(ef), f"{recall:.3f}", f"{p50 / rule:.2f}"))
    print()
    print(table(out, ("data", "ef from", "ef", "recall@10 (held-out)", "p50 ÷ rule's")))


if __name__ == "__main__":
    main()
