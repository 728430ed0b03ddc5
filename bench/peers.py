"""turnkit against raw LanceDB, numpy exact search and Chroma, on the same data in one run.

For each size: the same clustered 256-d vectors go into every system; then the
same queries run through each one, the systems alternated per query, top-10
cosine, unfiltered and with a 10%-selective filter on a declared field. Prints p50/p95,
recall@10 (against numpy's exact answer), build time, and throughput with one
query in flight (``q/s x1``: sequential async queries, as an agent asks once
per turn) and with 16 concurrent async queries (``q/s x16``; each the median
of 3 rounds, the systems alternated), plus the ratios of turnkit's p50 to
numpy's, raw LanceDB's and Chroma's, and of its ``q/s x1`` to raw LanceDB
async's and Chroma's.

Above 50,000 rows the table gets the index ``create_index('auto')`` builds,
and raw LanceDB searches it with turnkit's search knobs; turnkit searches it
too when the collection is over its in-memory limits (``MemoryCache``), else
answers from memory (its row says ``memory``, and a ``turnkit index`` row
shows the same table searched through the index). Chroma searches its HNSW
with ``ef_search`` raised until recall@10 reaches 0.97. Chroma is optional
(``pip install 'turnkit[bench]'``); without it its columns are left out.

    python bench/peers.py [--sizes 1000,10000,100000] [--big] [--queries 200] [--dim 256]
        [--filters all,10%] [--chroma-ef 128] [--memory-mib 128] [--db DIR] [--data synthetic|text|both]
        [--warm 100] [--text-vectors FILE.npy]

``--data text`` runs the same on WordLlama vectors of real text, the docs and
docstrings of the packages installed here (``_text_vectors.py``: held-out
passages are the queries; sizes past what the packages yield are padded with
the clusters), ``--data both`` on each set in turn.

``--warm N`` asks turnkit the first N queries before anything is timed and
waits until it has measured its index's recall on them (a store does so on a
collection's own recent queries, ``recall_from_queries``), and its memory
tier's graph where it builds one (``MemoryCache.graph_rows``); the other
queries are the timed ones, so the ``ef`` and expansion it chose were not
fitted to them.
``--text-vectors`` reads the text set from a cached ``.npy`` (``bench/.cache``),
so a run from another environment (Chroma's) reads the same passages.

``--db DIR`` keeps turnkit's table (and its index) for each size's data there
and reuses it on a later run with the same data; ``--chroma-ef`` is where
Chroma's doubling of ``ef_search`` starts above 20,000 rows.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import functools
import hashlib
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _text_vectors
import numpy as np
from _common import alternate, median_ms, p95_ms, table
from _text_vectors import text_dataset

from turnkit.batteries.vector import MemoryCache, create_vector_store
from turnkit.batteries.vector.store._index_policy import EXACT_ROWS, apply_knobs, search_knobs

K = 10
CONCURRENCY = 16
ROUNDS = 3  # throughput rounds per system
GROUPS = 10  # metadata.group == 3 selects 10%
MAX_CHROMA_EF = 8192  # the last doubling tried for Chroma's ef_search


def clustered(rng: np.random.Generator, n: int, dim: int) -> np.ndarray:
    centres = rng.normal(size=(max(8, n // 1000), dim)).astype(np.float32)
    picks = rng.integers(0, len(centres), size=n)
    return (centres[picks] + 0.6 * rng.normal(size=(n, dim))).astype(np.float32)


class Numpy:
    name = "numpy"

    def __init__(self, vectors: np.ndarray, groups: np.ndarray) -> None:
        t = time.perf_counter()
        self.unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
        self.filtered_rows = np.flatnonzero(groups == 3)
        self.filtered = np.ascontiguousarray(self.unit[self.filtered_rows])  # pre-filtered: a lower bound
        self.build = time.perf_counter() - t

    def search(self, q: np.ndarray, filtered: bool) -> list[int]:
        matrix = self.filtered if filtered else self.unit
        # einsum, as turnkit's memory path: OpenBLAS's threads are several times slower on a busy machine.
        sims = np.einsum("ij,j->i", matrix, q / np.linalg.norm(q))
        top = np.argpartition(-sims, K)[:K] if len(sims) > K else np.arange(len(sims))
        top = top[np.argsort(-sims[top])]
        return (self.filtered_rows[top] if filtered else top).tolist()


def load_turnkit(
    tmp: str, vectors: np.ndarray, groups: np.ndarray, cache: MemoryCache | None = None
) -> tuple[Any, float]:
    # `group` is a declared field (an indexed int column), as a deployment filtering on it would declare it.
    cache = cache or MemoryCache()
    vs = create_vector_store(uri=tmp, auto_optimize=None, memory_cache=cache, fields={"group": int})
    if "peers" in vs.list_collections_sync() and vs("peers").count_sync() == len(vectors):
        return vs, float("nan")  # kept by an earlier run with --db
    t = time.perf_counter()
    for start in range(0, len(vectors), 20_000):
        chunk = vectors[start : start + 20_000]
        vs("peers").upsert_sync(
            [
                {"id": str(start + i), "vector": v, "metadata": {"group": int(groups[start + i])}}
                for i, v in enumerate(chunk)
            ]
        )
    vs("peers").optimize_sync()
    if len(vectors) > EXACT_ROWS:  # the index raw LanceDB searches (turnkit too, above its memory cap)
        vs("peers").create_index_sync("auto")
    return vs, time.perf_counter() - t


class Chroma:
    """Chroma's in-process client on a store in a temporary directory.

    The HNSW index takes its ``ef_search`` from the collection's configuration
    when it is loaded, and a client keeps a loaded index: ``modify`` alone
    changes the stored value, not the search. So :meth:`set_ef` stores the new
    value and reopens the store with a fresh client, which loads the index
    from disk again with it; the collection is built once.
    """

    name = "chroma"

    def __init__(self, vectors: np.ndarray, groups: np.ndarray, ef: int) -> None:
        import chromadb

        self.dir = tempfile.mkdtemp(prefix="chroma")
        self.client = chromadb.PersistentClient(path=self.dir)
        t = time.perf_counter()
        self.coll = self.client.create_collection(
            f"peers{len(vectors)}", configuration={"hnsw": {"space": "cosine", "ef_search": ef}}
        )
        for start in range(0, len(vectors), 5_000):
            chunk = vectors[start : start + 5_000]
            self.coll.add(
                ids=[str(start + i) for i in range(len(chunk))],
                embeddings=chunk,
                metadatas=[{"group": int(g)} for g in groups[start : start + len(chunk)]],
            )
        self.build = time.perf_counter() - t
        self.ef = ef

    def set_ef(self, ef: int) -> None:
        import chromadb

        if ef == self.ef:
            return
        self.coll.modify(configuration={"hnsw": {"ef_search": ef}})
        self._close()
        self.client = chromadb.PersistentClient(path=self.dir)
        self.coll = self.client.get_collection(self.coll.name)
        self.ef = ef

    def _close(self) -> None:
        from chromadb.api.shared_system_client import SharedSystemClient

        system = self.client._system  # clients of one path share a system: stop it, and forget it
        SharedSystemClient.clear_system_cache()
        system.stop()

    def drop(self) -> None:
        self._close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def search(self, q: np.ndarray, filtered: bool) -> list[int]:
        where = {"group": 3} if filtered else None
        res = self.coll.query(query_embeddings=[q], n_results=K, where=where, include=[])
        return [int(i) for i in res["ids"][0]]


def tuned_chroma(
    vectors: np.ndarray,
    groups: np.ndarray,
    queries: np.ndarray,
    npy: Numpy,
    filtered: bool,
    chroma: Chroma | None = None,
    start: int = 128,
) -> Chroma | None:
    """Chroma with the smallest ``ef_search`` (doubling from a start) giving recall@10 >= 0.97.

    Built once (or ``chroma``, already built on the same rows, is reused); each
    doubling only reloads its index.
    """
    try:
        import chromadb  # noqa: F401
    except ImportError:
        return None
    sample = queries  # the reported queries themselves: recall >= 0.97 on exactly what is timed
    truth = [npy.search(q, filtered) for q in sample]
    ef = 16 if len(vectors) <= 20_000 else start
    if chroma is None:
        chroma = Chroma(vectors, groups, ef)
    while True:
        chroma.set_ef(ef)
        found = [chroma.search(q, filtered) for q in sample]
        got = recall(found, truth)
        case = "filtered" if filtered else "unfiltered"
        print(f"  Chroma {case}, ef_search {ef}: recall@10 {got:.3f}", flush=True)
        if got >= 0.97 or ef >= MAX_CHROMA_EF:
            return chroma
        ef *= 2


def recall(found: list[list[int]], truth: list[list[int]]) -> float:
    return float(np.mean([len(set(f) & set(t)) / max(1, len(t)) for f, t in zip(found, truth, strict=True)]))


def dataset(
    rng: np.random.Generator, n: int, dim: int, queries: int, data: str = "synthetic"
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Numpy]:
    """One size's vectors, their groups (``group == 3`` selects 10%), the queries, numpy's truth.

    ``data``: ``synthetic`` (Gaussian clusters) or ``text`` (WordLlama vectors of
    the environment's docs and docstrings, ``_text_vectors.py``; padded with the
    clusters past what the packages yield).
    """
    vectors = clustered(rng, n, dim)
    groups = rng.integers(0, GROUPS, size=n)
    if data == "text":
        if dim != 256:
            raise SystemExit("--data text is WordLlama's 256 dimensions: leave --dim at 256")
        vectors, qs, real = text_dataset(rng, n, queries, vectors)
        if real < n:
            print(f"{n:,} rows: {real:,} of real text, the rest synthetic", flush=True)
        return vectors, groups, qs, Numpy(vectors, groups)
    return vectors, groups, clustered(rng, queries, dim), Numpy(vectors, groups)


def kept_dir(root: str, vectors: np.ndarray, groups: np.ndarray) -> str:
    """The directory under ``root`` for this data set: the same size, seed and dimension find it again."""
    digest = hashlib.sha1(vectors.tobytes() + groups.tobytes()).hexdigest()[:12]
    return os.path.join(root, f"peers-{len(vectors)}x{vectors.shape[1]}-{digest}")


def warm(stores: tuple[Any, ...], asked: np.ndarray, timeout: float = 1800.0) -> None:
    """Ask each turnkit store ``asked`` (not timed), then wait until each has measured recall on them.

    A store measures its HNSW index's recall again on a collection's own recent
    queries (``recall_from_queries``); the timed queries are others of the same kind.
    """
    t = time.perf_counter()
    for store in stores:
        hnsw = "hnsw" in " ".join(store("peers").info_sync().indexes).lower()
        for q in asked:
            store("peers").near_vector(q).select("id").limit(K).search_sync()
        while hnsw and store("peers").info_sync().recall_queries == 0:
            if time.perf_counter() - t > timeout:
                raise SystemExit(f"no recall measured on {len(asked)} queries in {timeout:.0f} s")
            time.sleep(0.5)
        # And the memory tier's graph, where its copy is one a graph may serve (MemoryCache.graph_rows).
        while _graph_wanted(store) and not _graph(store).startswith(_GRAPH_DONE):
            if time.perf_counter() - t > timeout:
                raise SystemExit(f"the graph was not measured in {timeout:.0f} s: {_graph(store)}")
            time.sleep(0.5)
    info = stores[0]("peers").info_sync()
    held = stores[0].cache_stats().bytes
    print(
        f"  measured on {info.recall_queries} asked queries in {time.perf_counter() - t:.1f} s: "
        f"ef {info.search_ef}, curve {list(info.recall_curve)}; graph: {_graph(stores[0]) or 'none'}; "
        f"memory tier holds {held / 2**20:.0f} MiB",
        flush=True,
    )


_GRAPH_DONE = ("answers", "declined", "not built", "failed")  # what `_graph` says once it is decided


def _graph_wanted(store: Any) -> bool:
    """Whether the memory tier holds the collection at a size it builds a graph for (usearch installed)."""
    rows = next((c.rows for c in store.cache_stats().collections if c.name == "peers"), 0)
    graph_rows = MemoryCache().graph_rows
    return graph_rows is not None and rows >= graph_rows and importlib.util.find_spec("usearch") is not None


def _graph(store: Any) -> str:
    """What the memory tier says of the collection's graph ("" where it considers none)."""
    return next((c.graph for c in store.cache_stats().collections if c.name == "peers"), "")


def run_size(n: int, args: argparse.Namespace, rng: np.random.Generator, out: list[tuple[str, ...]]) -> None:
    vectors, groups, queries, npy = dataset(rng, n, args.dim, args.queries, args.data_set)
    import lancedb  # noqa: TID251 - the baseline is raw LanceDB

    with tempfile.TemporaryDirectory() as scratch:
        tmp = kept_dir(args.db, vectors, groups) if args.db else scratch
        cache = MemoryCache()
        if args.memory_mib is not None:  # and a budget that holds it, its int8 copy and ~1 KiB of text a row
            limit = args.memory_mib << 20
            budget = max(cache.max_bytes, limit * 5 // 4 + n * 1024)
            cache = MemoryCache(max_vector_bytes=limit, max_bytes=budget)
        vs, tk_build = load_turnkit(tmp, vectors, groups, cache)
        # The same table through a store that never answers from memory: turnkit on the index.
        on_index = create_vector_store(uri=tmp, auto_optimize=None, memory_cache=None)
        raw = lancedb.connect(tmp).open_table("peers")
        if args.warm:
            warm((vs, on_index), queries[: args.warm])
            queries = queries[args.warm :]
        info = vs("peers").info_sync()
        vector_index = [i.split(":", 1)[1] for i in info.indexes if i.startswith("vector")]
        index_type = vector_index[0] if vector_index else None  # not the scalar index on `group`
        index = vector_index[0] if vector_index else "flat"
        # Unfiltered, turnkit searches with the ef its recall curve measured; filtered, the row-count rule.
        ef = info.search_ef
        knobs = {f: search_knobs(index_type, info.rows, K, None, None, None if f else ef) for f in (0, 1)}
        where_sql = "`group` = 3"  # raw LanceDB filters the same native column

        def raw_query(q: np.ndarray, filtered: bool, query: Any) -> Any:
            query = apply_knobs(query.distance_type("cosine").limit(K).select(["id"]), knobs[filtered])
            return query.where(where_sql) if filtered else query

        base = vs("peers").select("id").limit(K)  # the spec is built once; each query adds its vector
        bases = {False: base, True: base.where("metadata.group", 3)}

        def turnkit(q: np.ndarray, filtered: bool) -> list[int]:
            return [int(m.id) for m in bases[filtered].near_vector(q).search_sync()]

        index_bases = {False: on_index("peers").select("id").limit(K)}
        index_bases[True] = index_bases[False].where("metadata.group", 3)

        def turnkit_index(q: np.ndarray, filtered: bool) -> list[int]:
            return [int(m.id) for m in index_bases[filtered].near_vector(q).search_sync()]

        def raw_lance(q: np.ndarray, filtered: bool) -> list[int]:
            return [int(r["id"]) for r in raw_query(q, filtered, raw.search(q)).to_list()]

        systems: dict[str, Callable[[np.ndarray, bool], list[int]]] = {
            "numpy": npy.search,
            "turnkit": turnkit,
            "lancedb": raw_lance,
        }
        chroma: Chroma | None = None  # built once per size, for both cases
        for filtered in [f == "10%" for f in args.filters.split(",")]:
            truth = [npy.search(q, filtered) for q in queries]
            chroma = tuned_chroma(vectors, groups, queries, npy, filtered, chroma, args.chroma_ef)
            systems.pop("chroma", None)
            if chroma is not None:
                systems["chroma"] = chroma.search
            for fn in systems.values():  # warm caches (turnkit loads its in-memory copy here)
                fn(queries[0], filtered)
            memory = any(c.name == "peers" for c in vs.cache_stats().collections)
            systems.pop("turnkit index", None)
            if memory and vector_index:  # both of turnkit's paths, side by side
                systems["turnkit index"] = turnkit_index
                turnkit_index(queries[0], filtered)
            samples, found = alternate(
                {s: functools.partial(fn, filtered=filtered) for s, fn in systems.items()}, queries
            )
            extra = {"turnkit index": index_bases[filtered]} if "turnkit index" in systems else {}
            tk_bases = {"turnkit": bases[filtered], **extra}
            qps1 = throughput(tk_bases, tmp, raw_query, chroma, queries, filtered, concurrency=1)
            qps = throughput(tk_bases, tmp, raw_query, chroma, queries, filtered)
            builds = {"numpy": npy.build, "turnkit": tk_build, "lancedb": tk_build, "turnkit index": tk_build}
            if chroma is not None:
                builds["chroma"] = chroma.build
            p50 = {s: median_ms(v) for s, v in samples.items()}
            for s in systems:
                tk = s.startswith("turnkit")
                extra = f" ef{chroma.ef}" if s == "chroma" and chroma is not None else ""
                if s in ("turnkit", "lancedb"):
                    extra += " memory" if s == "turnkit" and memory else f" {index}"
                extra += f" {index}" if s == "turnkit index" else ""
                out.append(
                    (
                        f"{n:,}" + ("" if args.data_set == "synthetic" else f" {args.data_set}"),
                        "10%" if filtered else "all",
                        s + extra,
                        f"{p50[s]:.3f}",
                        f"{p95_ms(samples[s]):.3f}",
                        f"{recall(found[s], truth):.3f}",
                        f"{builds[s]:.1f}",
                        f"{qps1.get(s, float('nan')):.0f}",
                        f"{qps.get(s, float('nan')):.0f}",
                        f"{p50[s] / p50['numpy']:.2f}" if tk else "",
                        f"{p50[s] / p50['lancedb']:.2f}" if tk else "",
                        f"{p50[s] / p50['chroma']:.2f}" if tk and "chroma" in p50 else "",
                        f"{qps1[s] / qps1['lancedb']:.2f}" if tk else "",
                        f"{qps1[s] / qps1['chroma']:.2f}" if tk and "chroma" in qps1 else "",
                    )
                )
            print(table(out[-len(systems) :], HEADER), flush=True)
        if chroma is not None:
            chroma.drop()


HEADER = (
    "rows",
    "filter",
    "system",
    "p50 ms",
    "p95 ms",
    "recall@10",
    "build s",
    "q/s x1",
    "q/s x16",
    "tk/np",
    "tk/lance",
    "tk/chroma",
    "x1 tk/lance",
    "x1 tk/chroma",
)


def throughput(
    bases: dict[str, Any],
    tmp: str,
    raw_query: Callable[..., Any],
    chroma: Chroma | None,
    queries: np.ndarray,
    filtered: bool,
    concurrency: int = CONCURRENCY,
) -> dict[str, float]:
    import lancedb  # noqa: TID251 - the baseline is raw LanceDB

    async def gather(fn: Callable[[np.ndarray], Any]) -> float:
        sem = asyncio.Semaphore(concurrency)

        async def one(q: np.ndarray) -> None:
            async with sem:
                await fn(q)

        t = time.perf_counter()
        await asyncio.gather(*(one(q) for q in queries))
        return len(queries) / (time.perf_counter() - t)

    async def main() -> dict[str, float]:
        table_ = await (await lancedb.connect_async(tmp)).open_table("peers")

        async def raw(q: np.ndarray) -> Any:
            return await raw_query(q, filtered, table_.vector_search(q)).to_list()

        result = {}
        for name, base in bases.items():

            async def tk(q: np.ndarray, base: Any = base) -> Any:
                return await base.near_vector(q)

            await tk(queries[0])
            result[name] = await gather(tk)
        await raw(queries[0])
        result["lancedb"] = await gather(raw)
        return result

    def chroma_qps() -> float:
        assert chroma is not None
        with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:  # Chroma's local client is sync
            t = time.perf_counter()
            list(pool.map(lambda q: chroma.search(q, filtered), queries))
            return len(queries) / (time.perf_counter() - t)

    # Rounds alternate the systems, so a burst of load elsewhere hits each; the median round is reported.
    rounds: dict[str, list[float]] = {}
    for _ in range(ROUNDS):
        for name, value in asyncio.run(main()).items():
            rounds.setdefault(name, []).append(value)
        if chroma is not None:
            rounds.setdefault("chroma", []).append(chroma_qps())
    return {name: float(np.median(values)) for name, values in rounds.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated row counts")
    parser.add_argument("--big", action="store_true", help="add 1,000,000 rows")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--filters", default="all,10%", help="unfiltered (all) and/or 10%%-selective")
    parser.add_argument("--chroma-ef", type=int, default=128, help="first ef_search tried above 20k rows")
    parser.add_argument(
        "--memory-mib", type=int, default=None, help="turnkit's MemoryCache.max_vector_bytes, in MiB"
    )
    parser.add_argument(
        "--data",
        choices=("synthetic", "text", "both"),
        default="synthetic",
        help="clustered vectors, WordLlama vectors of real text (bench/_text_vectors.py), or both",
    )
    parser.add_argument("--db", default=None, help="keep turnkit's tables (and indexes) here and reuse them")
    parser.add_argument(
        "--warm",
        type=int,
        default=0,
        help="ask turnkit the first N queries before timing (the rest are timed) and wait until it has "
        "measured its index's recall on them (N >= 100)",
    )
    parser.add_argument("--text-vectors", type=Path, default=None, help="a cached text-vectors-*.npy")
    args = parser.parse_args()
    _text_vectors.PINNED = args.text_vectors
    if args.warm and not 100 <= args.warm < args.queries:
        parser.error("--warm needs 100 or more queries, and fewer than --queries")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.big:
        sizes.append(1_000_000)
    out: list[tuple[str, ...]] = []
    for data in ("synthetic", "text") if args.data == "both" else (args.data,):
        args.data_set = data
        rng = np.random.default_rng(0)
        for n in sizes:
            run_size(n, args, rng, out)
    print()
    print(table(out, HEADER))


if __name__ == "__main__":
    main()
