"""An HNSW (usearch) over the memory tier's matrix against its exact pass and Chroma, one query at a time.

Whether an in-memory ANN over the matrix the memory tier already holds would
answer a lone query faster than Chroma at the same recall. For each data set
and size: the same rows go into numpy, a turnkit store whose memory tier holds
them (its exact pass), usearch searched directly over the same unit vectors
(inner product, float32, connectivity 16, expansion_add 128: usearch's
defaults), and Chroma at the smallest ``ef_search`` (doubling) reaching
recall@10 0.97. usearch runs at the smallest expansion of the ladder
``_recall.py`` measures LanceDB's index with that reaches recall@10 0.98
against numpy's exact answer on the same queries. Per query the systems are alternated (shuffled),
top-10 cosine, unfiltered. Prints p50, recall@10, sequential q/s (one query in
flight: turnkit's async search awaited in turn, the others called in turn; the
median of 3 rounds, the systems alternated) and the ratios to Chroma, then the
HNSW's build time (all cores) and what an update costs: adding 1% new rows,
removing 1%, against building again.

Chroma and usearch come with ``pip install 'turnkit[bench]'``
(``requirements/bench.txt``); without Chroma its row and ratios are left out.

    python bench/memory_ann.py [--sizes 10000,100000] [--data synthetic|text|both] [--queries 200]
        [--warm 100] [--text-vectors FILE.npy]

``--warm N`` chooses usearch's expansion on N other queries, at the lower end
of the one-sided 95% interval the store measures a collection's own queries
with (``store/_recall.py``'s ``lower_bound``), and times the rest: the
expansion is never fitted to the timed queries.

``--text-vectors`` reads the text set from a cached ``.npy`` (``bench/.cache``)
whatever packages the running environment has, so a run from Chroma's venv
uses the project's passages.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _text_vectors
import numpy as np
from _common import alternate, median_ms, table
from peers import K, Numpy, dataset, recall, tuned_chroma

from turnkit.batteries.vector import MemoryCache, create_vector_store
from turnkit.batteries.vector.store._recall import LADDER, lower_bound

TARGET = 0.98
ROUNDS = 3
CONNECTIVITY = 16  # usearch's defaults
EXPANSION_ADD = 128


def load(uri: str, vectors: np.ndarray) -> Any:
    """A store over ``vectors`` whose memory tier holds them (no LanceDB index: memory answers)."""
    cache = MemoryCache(max_vector_bytes=1 << 30, max_bytes=4 << 30)
    vs = create_vector_store(uri=uri, auto_optimize=None, memory_cache=cache)
    if "ann" not in vs.list_collections_sync():
        for start in range(0, len(vectors), 20_000):
            chunk = vectors[start : start + 20_000]
            vs("ann").upsert_sync([{"id": str(start + i), "vector": v} for i, v in enumerate(chunk)])
        vs("ann").optimize_sync()
    return vs


class Hnsw:
    """usearch over the unit vectors, inner product."""

    def __init__(self, unit: np.ndarray, threads: int) -> None:
        from usearch.index import Index

        self.index = Index(
            ndim=unit.shape[1],
            metric="ip",
            dtype="f32",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
        )
        started = time.perf_counter()
        self.index.add(np.arange(len(unit), dtype=np.uint64), unit, threads=threads)
        self.build = time.perf_counter() - started

    def search(self, q: np.ndarray) -> list[int]:
        return [int(k) for k in self.index.search(q / np.linalg.norm(q), K).keys]

    def tune(self, queries: np.ndarray, truth: list[list[int]], bound: bool = False) -> float:
        """The smallest expansion of the ladder reaching ``TARGET`` on ``queries``; its recall.

        With ``bound`` the recall is the lower end of the store's one-sided 95%
        interval (`lower_bound`), as a collection's own queries are measured.
        """
        for ef in LADDER:  # the expansions turnkit's measurement tries
            self.index.expansion_search = ef
            found = [self.search(q) for q in queries]
            hits = [len(set(f) & set(t)) for f, t in zip(found, truth, strict=True)]
            got = lower_bound(hits) if bound else recall(found, truth)
            if got >= TARGET:
                break
        return got


def sequential(systems: dict[str, Callable[[np.ndarray], Any]], queries: np.ndarray) -> dict[str, float]:
    """Median q/s over rounds of one query at a time; coroutine functions are awaited in turn."""
    rounds: dict[str, list[float]] = {s: [] for s in systems}
    rng = random.Random(0)

    async def awaited(fn: Callable[[np.ndarray], Any]) -> None:
        for q in queries:
            await fn(q)

    for _ in range(ROUNDS):
        for name in rng.sample(list(systems), len(systems)):
            fn = systems[name]
            started = time.perf_counter()
            if asyncio.iscoroutinefunction(fn):
                asyncio.run(awaited(fn))
            else:
                for q in queries:
                    fn(q)
            rounds[name].append(len(queries) / (time.perf_counter() - started))
    return {s: statistics.median(v) for s, v in rounds.items()}


def updates(unit: np.ndarray, extra: np.ndarray, hnsw: Hnsw) -> tuple[str, ...]:
    """Adding ``extra`` (1%) and removing 1% of the rows: seconds each, against the full build."""
    n = len(unit)
    keys = np.arange(n, n + len(extra), dtype=np.uint64)
    started = time.perf_counter()
    hnsw.index.add(keys, extra / np.linalg.norm(extra, axis=1, keepdims=True), threads=1)
    added = time.perf_counter() - started
    gone = np.random.default_rng(1).choice(n, size=len(extra), replace=False).astype(np.uint64)
    started = time.perf_counter()
    hnsw.index.remove(gone)
    removed = time.perf_counter() - started
    return (
        f"{hnsw.build:.1f}",
        f"{added:.2f}",
        f"{removed:.3f}",
        f"{(added + removed) / hnsw.build:.3f}",
    )


def run(
    n: int, data: str, args: argparse.Namespace, out: list[tuple[str, ...]], costs: list[tuple[str, ...]]
) -> None:
    rng = np.random.default_rng(0)
    extra_rows = max(1, n // 100)
    vectors, groups, queries, _ = dataset(rng, n + extra_rows, 256, args.queries + args.warm, data)
    vectors, extra, groups = vectors[:n], vectors[n:], groups[:n]
    npy = Numpy(vectors, groups)
    # With --warm the expansion is chosen on the first queries only, as the store chooses `ef` on a
    # collection's own; the rest are timed. Without it, on the timed queries themselves (best case).
    warm, queries = queries[: args.warm], queries[args.warm :]
    truth = [npy.search(q, False) for q in queries]
    label = f"{n:,}" + ("" if data == "synthetic" else " text")
    hnsw = Hnsw(npy.unit, threads=args.threads)
    if args.warm:
        got = hnsw.tune(warm, [npy.search(q, False) for q in warm], bound=True)
        how = f"lower bound on {len(warm)} other queries"
    else:
        got, how = hnsw.tune(queries, truth), "on the timed queries"
    print(
        f"  {label}: usearch built in {hnsw.build:.1f} s, expansion {hnsw.index.expansion_search} "
        f"recall@10 {got:.3f} ({how})",
        flush=True,
    )
    with tempfile.TemporaryDirectory() as tmp:
        exact = load(tmp, vectors)
        systems: dict[str, Callable[[np.ndarray], Any]] = {"numpy": lambda q: npy.search(q, False)}
        lone: dict[str, Callable[[np.ndarray], Any]] = dict(systems)

        def tk_sync(vs: Any) -> Callable[[np.ndarray], Any]:
            base = vs("ann").select("id").limit(K)
            return lambda q: [int(m.id) for m in base.near_vector(q).search_sync()]

        def tk_async(vs: Any) -> Callable[[np.ndarray], Any]:
            base = vs("ann").select("id").limit(K)

            async def search(q: np.ndarray) -> list[int]:
                return [int(m.id) for m in await base.near_vector(q)]

            return search

        systems["turnkit exact"], lone["turnkit exact"] = tk_sync(exact), tk_async(exact)
        systems["usearch"] = lone["usearch"] = hnsw.search
        chroma = tuned_chroma(vectors, groups, queries, npy, False, None, args.chroma_ef)
        if chroma is not None:
            systems["chroma"] = lone["chroma"] = lambda q: chroma.search(q, False)
        try:
            for fn in systems.values():
                fn(queries[0])  # warm: turnkit reads its copy here
            samples, found = alternate(systems, queries)
            qps = sequential(lone, queries)
        finally:
            if chroma is not None:
                chroma.drop()
    p50 = {s: median_ms(v) for s, v in samples.items()}
    for s in systems:
        name = s + (f" ef{hnsw.index.expansion_search}" if s == "usearch" else "")
        name += f" ef{chroma.ef}" if s == "chroma" and chroma is not None else ""
        out.append(
            (
                label,
                name,
                f"{p50[s]:.3f}",
                f"{recall(found[s], truth):.3f}",
                f"{qps[s]:.0f}",
                f"{p50[s] / p50['chroma']:.2f}" if "chroma" in p50 else "",
                f"{qps[s] / qps['chroma']:.2f}" if "chroma" in qps else "",
            )
        )
    print(table(out[-len(systems) :], HEADER), flush=True)
    costs.append((label, *updates(npy.unit, extra, hnsw)))
    print(table(costs[-1:], COST_HEADER), flush=True)


HEADER = ("rows", "system", "p50 ms", "recall@10", "q/s x1", "p50 ÷ Chroma", "q/s ÷ Chroma")
COST_HEADER = ("rows", "HNSW build s", "add 1% s", "remove 1% s", "update ÷ build")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated row counts")
    parser.add_argument("--data", choices=("synthetic", "text", "both"), default="both")
    parser.add_argument("--queries", type=int, default=200, help="timed queries")
    parser.add_argument(
        "--warm", type=int, default=0, help="choose usearch's expansion on this many other queries (>= 100)"
    )
    parser.add_argument("--chroma-ef", type=int, default=128, help="first ef_search tried above 20k rows")
    parser.add_argument("--threads", type=int, default=2, help="threads for the HNSW build")
    parser.add_argument("--text-vectors", type=Path, default=None, help="a cached text-vectors-*.npy")
    args = parser.parse_args()
    if args.warm and args.warm < 100:
        parser.error("--warm needs at least 100 queries, as the store's measurement does")
    _text_vectors.PINNED = args.text_vectors
    out: list[tuple[str, ...]] = []
    costs: list[tuple[str, ...]] = []
    for data in ("synthetic", "text") if args.data == "both" else (args.data,):
        for n in (int(s) for s in args.sizes.split(",") if s):
            run(n, data, args, out, costs)
    print()
    print(table(out, HEADER))
    print()
    print(table(costs, COST_HEADER))


if __name__ == "__main__":
    main()
