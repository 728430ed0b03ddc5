"""The memory cache's two heavier parts against the simpler designs that could replace them.

1. **Filter masks.** The cache evaluates a filter over the columns it holds
   (``store/_memory_mask.py``, a third evaluator beside the SQL compiler and
   the reference one). The simpler design asks LanceDB for the rows the
   filter's SQL selects, once per filter and version, and turns their ids into
   the mask. Both are timed for a filter the cache has not seen yet (a new
   tenant, a new value), which is the cost a lone agent query pays; a mask
   already computed is a dictionary hit in both designs. The first filter on a
   metadata path also pays for reading that path out of the JSON (once per
   version), shown apart.
2. **Batching concurrent searches.** Concurrent searches of one collection
   share one pass over the matrix (``store/_memory_batch.py``). The simpler
   design runs each search's own product on a worker thread. Both are timed
   with one search in flight and with 16.

Same data as ``bench/peers.py`` (clustered 256-d vectors), metadata
``{"group": 0..9, "tag": "t0".."t99", "score": float}``. Every figure is a
median of alternated runs in one process.

    python bench/memory_cache.py [--sizes 10000 100000] [--filters 20]
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import alternate, median_ms, table
from peers import clustered

from turnkit.batteries.vector import And, condition, create_vector_store, to_sql
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.store._memory_batch import BatchedProduct
from turnkit.batteries.vector.store._memory_mask import filter_mask, path_column

K = 10
IN_FLIGHT = 16


def build(tmp: str, n: int, dim: int, rng: np.random.Generator) -> Any:
    import lancedb  # noqa: TID251 - the simpler design asks raw LanceDB for the rows

    vectors = clustered(rng, n, dim)
    vs = create_vector_store(uri=tmp, auto_optimize=None, memory_cache=None)
    for start in range(0, n, 20_000):
        vs("mc").upsert_sync(
            [
                {
                    "id": f"r{start + i}",
                    "vector": v,
                    "metadata": {
                        "group": (start + i) % 10,
                        "tag": f"t{(start + i) % 100}",
                        "score": float(i % 997),
                    },
                }
                for i, v in enumerate(vectors[start : start + 20_000])
            ]
        )
    return lancedb.connect(tmp).open_table("mc")


def filters(count: int) -> list[FilterNode]:
    """Filters the cache has not seen: a tag, a tag and a group, a score range, in turn."""
    out: list[FilterNode] = []
    for i in range(count):
        kind = i % 3
        if kind == 0:
            out.append(condition("metadata.tag", "eq", f"t{i}"))
        elif kind == 1:
            out.append(
                And((condition("metadata.tag", "eq", f"t{i}"), condition("metadata.group", "eq", i % 10)))
            )
        else:
            out.append(condition("metadata.score", "gte", float(900 - i)))
    return out


def masks_section(tbl: Any, n: int, nodes: list[FilterNode]) -> list[tuple[str, ...]]:
    data = tbl.to_arrow()
    columns = {c: data.column(c).combine_chunks() for c in ("id", "document", "created_at", "updated_at")}
    metadata = data.column("metadata").combine_chunks()
    if isinstance(metadata.type, pa.BaseExtensionType):
        metadata = metadata.storage
    metadata_json = metadata.to_pylist()
    paths: dict[tuple[str, ...], Any] = {}

    def path(segments: tuple[str, ...]) -> Any:
        if segments not in paths:
            paths[segments] = path_column(metadata_json, segments)
        return paths[segments]

    t = time.perf_counter()
    for segments in (("tag",), ("group",), ("score",)):
        path(segments)
    path_seconds = (time.perf_counter() - t) / 3

    def numpy_mask(node: FilterNode) -> np.ndarray:
        mask = filter_mask(node, columns, path)
        assert mask is not None
        return mask

    def lancedb_mask(node: FilterNode) -> np.ndarray:
        ids = tbl.search().where(to_sql(node)).select(["id"]).limit(n + 1).to_arrow().column("id")
        return pc.is_in(columns["id"], value_set=ids.combine_chunks()).to_numpy(zero_copy_only=False)

    samples, found = alternate({"numpy": numpy_mask, "lancedb": lancedb_mask}, nodes)
    for a, b in zip(found["numpy"], found["lancedb"], strict=True):
        assert np.array_equal(a, b), "the two designs disagree on a mask"
    ours, simple = median_ms(samples["numpy"]), median_ms(samples["lancedb"])
    return [
        (f"{n:,}", "mask, new filter", "evaluated over cached columns (today)", f"{ours:.2f}", "1.00"),
        (f"{n:,}", "mask, new filter", "LanceDB selects the ids", f"{simple:.2f}", f"{simple / ours:.1f}"),
        (
            f"{n:,}",
            "metadata path, once per version",
            "read from the cached JSON (today)",
            f"{path_seconds * 1e3:.1f}",
            "",
        ),
    ]


def top_k(dots: np.ndarray) -> list[int]:
    top = np.argpartition(-dots, K)[:K]
    return top[np.argsort(-dots[top])].tolist()


def batching_section(n: int, dim: int, rng: np.random.Generator, queries: int) -> list[tuple[str, ...]]:
    matrix = clustered(rng, n, dim)
    qs = clustered(rng, queries, dim)
    batched = BatchedProduct(matrix)
    pool = concurrent.futures.ThreadPoolExecutor(IN_FLIGHT)

    def finish(dots: np.ndarray, alone: bool) -> list[int]:
        return top_k(dots)

    async def with_batching(q: np.ndarray) -> list[int]:
        return await batched.run_async(q, finish)  # type: ignore[no-any-return]

    async def each_own(q: np.ndarray) -> list[int]:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, lambda: top_k(np.einsum("ij,j->i", matrix, q)))

    async def qps(search: Any, in_flight: int) -> float:
        sem = asyncio.Semaphore(in_flight)

        async def one(q: np.ndarray) -> None:
            async with sem:
                await search(q)

        await search(qs[0])
        t = time.perf_counter()
        await asyncio.gather(*(one(q) for q in qs))
        return len(qs) / (time.perf_counter() - t)

    rows: list[tuple[str, ...]] = []
    for in_flight in (1, IN_FLIGHT):
        rounds: dict[str, list[float]] = {"batched": [], "own": []}
        for _ in range(3):  # alternated rounds; the median is reported
            rounds["batched"].append(asyncio.run(qps(with_batching, in_flight)))
            rounds["own"].append(asyncio.run(qps(each_own, in_flight)))
        ours, simple = float(np.median(rounds["batched"])), float(np.median(rounds["own"]))
        label = f"{in_flight} in flight"
        rows.append((f"{n:,}", label, "one pass serves the queue (today)", f"{ours:.0f} q/s", "1.00"))
        rows.append(
            (f"{n:,}", label, "each search its own product", f"{simple:.0f} q/s", f"{ours / simple:.2f}")
        )
    pool.shutdown()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--filters", type=int, default=30, help="new filters timed per size")
    parser.add_argument("--queries", type=int, default=400, help="searches per throughput round")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    masks: list[tuple[str, ...]] = []
    batches: list[tuple[str, ...]] = []
    for n in args.sizes:
        with tempfile.TemporaryDirectory() as tmp:
            masks += masks_section(build(tmp, n, args.dim, rng), n, filters(args.filters))
        batches += batching_section(n, args.dim, rng, args.queries)
    print(table(masks, ("rows", "what", "design", "p50 ms", "÷ today")))
    print()
    print(table(batches, ("rows", "searches", "design", "throughput", "today ÷ simpler")))


if __name__ == "__main__":
    main()
