"""Filtered search on a declared field: turnkit against raw LanceDB on a native column and Chroma's ``where``.

One table per size, 256-d clustered vectors, a 10%-selective filter
(``group == 3``) on ``group``, a field the collection declares (an ``int``
column with a BTREE index, beside the JSON metadata), and an HNSW-SQ vector
index from ``create_index('auto')``. In one run, the systems alternated per
query, top-10 cosine:

- turnkit: ``vs(c).where("metadata.group", 3).near_vector(q)``, compiled to the column;
- raw LanceDB: the same table, ``where("group = 3")`` on the native column, the same search knobs;
- the JSON filter turnkit sent before fields could be declared, through raw LanceDB on the same table;
- Chroma (``pip install 'turnkit[bench]'``): ``where={"group": 3}``, ``ef_search`` raised until
  its recall@10 reaches 0.97.

Recall@10 is against numpy's exact answer over the pre-filtered rows.

``--undeclared`` declares nothing: the same rows go into two collections, one
through a store with ``auto_fields=False`` (the JSON read: turnkit before
automatic fields) and one through the default store, whose ``optimize()``
makes ``group`` an automatic field. It prints each one's optimize time and
their searches against raw LanceDB on the automatic field's native column.

    python bench/filters.py [--sizes 100000] [--big] [--queries 200] [--undeclared]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _common import alternate, median_ms, p95_ms, table
from peers import dataset, recall, tuned_chroma

from turnkit.batteries.vector import condition, create_vector_store, to_sql
from turnkit.batteries.vector.store._index_policy import apply_knobs, search_knobs

K = 10

HEADER = ("rows", "system", "p50 ms", "p95 ms", "recall@10", "÷ raw LanceDB", "÷ Chroma")


def load(
    tmp: str, vectors: np.ndarray, groups: np.ndarray, name: str = "filters", **options: Any
) -> tuple[Any, float, float]:
    """The store, its load time, and its optimize's share of it."""
    options = {"fields": {"group": int}, **options}
    vs = create_vector_store(uri=tmp, auto_optimize=None, memory_cache=None, **options)
    t = time.perf_counter()
    for start in range(0, len(vectors), 20_000):
        chunk = vectors[start : start + 20_000]
        vs(name).upsert_sync(
            [
                {"id": str(start + i), "vector": v, "metadata": {"group": int(groups[start + i])}}
                for i, v in enumerate(chunk)
            ]
        )
    t_opt = time.perf_counter()
    vs(name).optimize_sync()  # brings the BTREE on `group` up to date (or declares it automatically)
    optimize = time.perf_counter() - t_opt
    vs(name).create_index_sync("auto")
    return vs, time.perf_counter() - t, optimize


def measure(
    n: int,
    systems: dict[str, Callable[[np.ndarray], list[int]]],
    queries: np.ndarray,
    truth: list[list[int]],
    out: list[tuple[str, ...]],
) -> None:
    """Alternate the systems per query; one row each, against raw LanceDB (and Chroma when it ran)."""
    for fn in systems.values():
        fn(queries[0])  # warm caches
    samples, found = alternate(systems, queries)
    p50 = {s: median_ms(v) for s, v in samples.items()}
    chroma_name = next((s for s in systems if s.startswith("Chroma")), None)
    for s in systems:
        out.append(
            (
                f"{n:,}",
                s,
                f"{p50[s]:.2f}",
                f"{p95_ms(samples[s]):.2f}",
                f"{recall(found[s], truth):.3f}",
                f"{p50[s] / p50['raw LanceDB, native column']:.2f}",
                f"{p50[s] / p50[chroma_name]:.2f}" if chroma_name else "",
            )
        )
    print(table(out[-len(systems) :], HEADER), flush=True)


def run_undeclared(
    n: int, args: argparse.Namespace, rng: np.random.Generator, out: list[tuple[str, ...]]
) -> None:
    import lancedb  # noqa: TID251 - the baseline is raw LanceDB

    vectors, groups, queries, npy = dataset(rng, n, args.dim, args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        plain, build_plain, opt_plain = load(tmp, vectors, groups, "json", fields=None, auto_fields=False)
        auto, build_auto, opt_auto = load(tmp, vectors, groups, "auto", fields=None)
        info = auto("auto").info_sync()
        print(
            f"{n:,} rows, twice: auto_fields=False loaded in {build_plain:.0f} s "
            f"(optimize {opt_plain:.1f} s); "
            f"default loaded in {build_auto:.0f} s (optimize {opt_auto:.1f} s), automatic fields "
            f"{info.auto_fields}, indexes {', '.join(info.indexes)}",
            flush=True,
        )
        raw = lancedb.connect(tmp).open_table("auto")
        vector_index = next(i.split(":", 1)[1] for i in info.indexes if i.startswith("vector"))
        knobs = search_knobs(vector_index, info.rows, K, None, None, None)

        def raw_search(q: np.ndarray) -> list[int]:
            query = raw.search(q).distance_type("cosine").limit(K).select(["id"]).where("`group` = 3")
            return [int(r["id"]) for r in apply_knobs(query, knobs).to_list()]

        before = plain("json").where("metadata.group", 3).select("id").limit(K)
        after = auto("auto").where("metadata.group", 3).select("id").limit(K)
        systems: dict[str, Callable[[np.ndarray], list[int]]] = {
            "turnkit, automatic field": lambda q: [int(m.id) for m in after.near_vector(q).search_sync()],
            "turnkit, auto_fields=False (JSON)": lambda q: [
                int(m.id) for m in before.near_vector(q).search_sync()
            ],
            "raw LanceDB, native column": raw_search,
        }
        measure(n, systems, queries, [npy.search(q, True) for q in queries], out)


def run_size(n: int, args: argparse.Namespace, rng: np.random.Generator, out: list[tuple[str, ...]]) -> None:
    import lancedb  # noqa: TID251 - the baseline is raw LanceDB

    vectors, groups, queries, npy = dataset(rng, n, args.dim, args.queries)
    with tempfile.TemporaryDirectory() as tmp:
        vs, build, _ = load(tmp, vectors, groups)
        info = vs("filters").info_sync()
        print(f"{n:,} rows loaded and indexed in {build:.0f} s: {', '.join(info.indexes)}", flush=True)
        raw = lancedb.connect(tmp).open_table("filters")
        vector_index = next(i.split(":", 1)[1] for i in info.indexes if i.startswith("vector"))
        knobs = search_knobs(vector_index, info.rows, K, None, None, None)
        json_sql = to_sql(condition("metadata.group", "eq", 3))  # no declared fields: the JSON read

        def raw_search(q: np.ndarray, where: str) -> list[int]:
            query = raw.search(q).distance_type("cosine").limit(K).select(["id"]).where(where)
            return [int(r["id"]) for r in apply_knobs(query, knobs).to_list()]

        base = vs("filters").where("metadata.group", 3).select("id").limit(K)
        systems: dict[str, Callable[[np.ndarray], list[int]]] = {
            "turnkit": lambda q: [int(m.id) for m in base.near_vector(q).search_sync()],
            "raw LanceDB, native column": lambda q: raw_search(q, "group = 3"),
            "JSON filter (turnkit before)": lambda q: raw_search(q, json_sql),
        }
        chroma = tuned_chroma(vectors, groups, queries, npy, filtered=True)
        if chroma is not None:
            print(f"Chroma built in {chroma.build:.0f} s; ef_search {chroma.ef}", flush=True)
            systems[f"Chroma where, ef{chroma.ef}"] = lambda q: chroma.search(q, True)
        truth = [npy.search(q, True) for q in queries]
        measure(n, systems, queries, truth, out)
        if chroma is not None:
            chroma.drop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="100000", help="comma-separated row counts")
    parser.add_argument("--big", action="store_true", help="also 1,000,000 rows (slow to build)")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--undeclared", action="store_true", help="declare nothing: automatic fields")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.big:
        sizes.append(1_000_000)
    rng = np.random.default_rng(7)
    out: list[tuple[str, ...]] = []
    for n in sizes:
        (run_undeclared if args.undeclared else run_size)(n, args, rng, out)
    print("\nAll sizes:\n" + table(out, HEADER))


if __name__ == "__main__":
    main()
