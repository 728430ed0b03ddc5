"""Benchmark: an agent's turn on a small memory: store one record, then search.

An agent that writes a memory every turn and searches on the next one
changes its collection between any two searches, so the search after a
write is the one it waits for. Each system has its own copy of the same
collection (256-d vectors, 400-character documents, a metadata field) and
runs the same turns, the systems alternated turn by turn:

* turnkit, the copy in memory read again in the background after a write
  (the default, ``MemoryCache(refresh="background")``);
* turnkit, the copy read again before the search answers (``refresh="inline"``);
* turnkit without the in-memory copy (``memory_cache=None``);
* raw LanceDB: ``merge_insert`` of the record, then a flat vector search on
  the same table handle.

Prints p50 and p95 of the search right after a write, of a search with no
write before it (``--pause`` seconds after the write, as between an agent's
turns), and of the write, with each system's ratio to raw LanceDB.

    python bench/turns.py                       # 2,000, 20,000 and 60,000 rows
    python bench/turns.py --sizes 5000 --turns 100

A script, not a test: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import lancedb  # noqa: TID251 - the baseline is raw LanceDB
import numpy as np
import pyarrow as pa
from _common import median_ms, p95_ms, table

from turnkit.batteries.vector import MemoryCache, create_vector_store

DIM = 256


def records(vectors: np.ndarray, start: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"r{start + i}",
            "vector": v,
            "document": f"memory {start + i} " + "x" * 400,
            "metadata": {"kind": (start + i) % 10},
        }
        for i, v in enumerate(vectors)
    ]


class Turnkit:
    def __init__(self, root: Path, name: str, cache: MemoryCache | None, vectors: np.ndarray) -> None:
        self.name = name
        self.vs = create_vector_store(uri=str(root / name), memory_cache=cache, auto_optimize=None)
        for at in range(0, len(vectors), 5000):
            self.vs("c").upsert_sync(records(vectors[at : at + 5000], at))
        self.query = self.vs("c").select("id", "document", "metadata").limit(10)

    def write(self, record: dict[str, Any]) -> None:
        self.vs("c").upsert_sync([record])

    def search(self, q: np.ndarray) -> list[str]:
        return [m.id for m in self.query.near_vector(q).search_sync()]


class RawLanceDB:
    name = "raw LanceDB"

    def __init__(self, root: Path, vectors: np.ndarray) -> None:
        self.loop = asyncio.new_event_loop()
        rows = records(vectors, 0)
        data = pa.table(
            {
                "id": [r["id"] for r in rows],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                "document": [r["document"] for r in rows],
                "kind": [r["metadata"]["kind"] for r in rows],
            }
        )
        self.schema = data.schema

        async def setup() -> Any:
            db = await lancedb.connect_async(str(root / "raw"))
            return await db.create_table("c", data)

        self.table = self.loop.run_until_complete(setup())

    def write(self, record: dict[str, Any]) -> None:
        row = pa.table(
            {
                "id": [record["id"]],
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(record["vector"]), DIM),
                "document": [record["document"]],
                "kind": [record["metadata"]["kind"]],
            },
            schema=self.schema,
        )

        async def merge() -> None:
            await (
                self.table.merge_insert("id")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute(row)
            )

        self.loop.run_until_complete(merge())

    def search(self, q: np.ndarray) -> list[str]:
        async def run() -> Any:
            query = self.table.vector_search(q).distance_type("cosine").limit(10)
            return await query.select(["id", "document", "kind"]).to_arrow()

        return self.loop.run_until_complete(run()).column("id").to_pylist()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="2000,20000,60000", help="collection sizes (comma-separated)")
    parser.add_argument("--turns", type=int, default=60)
    parser.add_argument(
        "--pause", type=float, default=0.5, help="seconds between a write and the later search"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    for size in (int(s) for s in args.sizes.split(",")):
        root = Path(tempfile.mkdtemp(prefix="turnkit-bench-turns-"))
        try:
            vectors = rng.standard_normal((size + args.turns, DIM)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            base = vectors[:size]
            systems: list[Any] = [
                Turnkit(root, "turnkit (memory, background refresh)", MemoryCache(), base),
                Turnkit(root, "turnkit (memory, inline refresh)", MemoryCache(refresh="inline"), base),
                Turnkit(root, "turnkit (no memory copy)", None, base),
                RawLanceDB(root, base),
            ]
            queries = rng.standard_normal((args.turns, DIM)).astype(np.float32)
            for system in systems:  # first searches: copies read, caches warm
                for q in queries[:5]:
                    system.search(q)
            after: dict[str, list[float]] = {s.name: [] for s in systems}
            later: dict[str, list[float]] = {s.name: [] for s in systems}
            writes: dict[str, list[float]] = {s.name: [] for s in systems}
            for turn in range(args.turns):
                record = records(vectors[size + turn : size + turn + 1], size + turn)[0]
                for system in systems:
                    start = time.perf_counter()
                    system.write(record)
                    writes[system.name].append(time.perf_counter() - start)
                    start = time.perf_counter()
                    found = system.search(record["vector"])
                    after[system.name].append(time.perf_counter() - start)
                    assert found[0] == record["id"], (system.name, found)  # the write is seen
                time.sleep(args.pause)
                for system in systems:
                    start = time.perf_counter()
                    system.search(queries[turn])
                    later[system.name].append(time.perf_counter() - start)
            raw = "raw LanceDB"
            rows = [
                (
                    s.name,
                    f"{median_ms(after[s.name]):.2f}",
                    f"{p95_ms(after[s.name]):.2f}",
                    f"{median_ms(after[s.name]) / median_ms(after[raw]):.2f}",
                    f"{median_ms(later[s.name]):.2f}",
                    f"{median_ms(later[s.name]) / median_ms(later[raw]):.2f}",
                    f"{median_ms(writes[s.name]):.2f}",
                )
                for s in systems
            ]
            header = (
                "system",
                "after a write p50 ms",
                "p95 ms",
                "÷ raw",
                f"{args.pause:g} s later p50 ms",
                "÷ raw",
                "write p50 ms",
            )
            print(f"\n{size:,} rows, {args.turns} turns")
            print(table(rows, header))
        finally:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
