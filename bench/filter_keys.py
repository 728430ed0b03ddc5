"""What saying "no record holds this key" costs: a search that finds nothing, with and without the check.

A search that finds something is never checked. One that finds nothing looks
up the keys its filter needs in the collection's key set (read once per table
version: the metadata of up to 10,000 records). Per size, the queries
alternate between:

- ``found``: ``where("kind", "md")``, a filter that matches (no check runs);
- ``empty, no check``: ``where_not("kind", "md")``, empty too, but a negation needs no key, so no
  check runs: the baseline;
- ``empty, key held``: ``where("kind", "none")``: the check runs and finds the key held;
- ``empty, key missing``: ``where("knd", "md")``: the check raises ``FilterKeyNotFoundError``.

It also times the first empty search after a write, with and without the
check (with it, the key set is read again).

    python bench/filter_keys.py [--sizes 20000 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
from _common import alternate, median_ms, p95_ms, table

from turnkit.batteries.vector import FilterKeyNotFoundError, create_vector_store

HEADER = ("rows", "query", "p50 ms", "p95 ms", "÷ empty, no check")


def run_size(n: int, args: argparse.Namespace, rng: np.random.Generator, out: list[tuple[str, ...]]) -> None:
    vectors = rng.normal(size=(n, args.dim)).astype(np.float32)
    with tempfile.TemporaryDirectory() as tmp:
        vs = create_vector_store(uri=tmp, auto_optimize=None)
        for start in range(0, n, 20_000):
            vs("keys").upsert_sync(
                [
                    {"id": str(i), "vector": vectors[i], "metadata": {"kind": "md", "n": i, "path": f"p{i}"}}
                    for i in range(start, min(n, start + 20_000))
                ]
            )
        queries = rng.normal(size=(args.queries, args.dim)).astype(np.float32)

        def missing(q: np.ndarray) -> int:
            try:
                return len(vs("keys").near_vector(q).where("knd", "md").search_sync())
            except FilterKeyNotFoundError:
                return -1

        systems = {
            "found": lambda q: len(vs("keys").near_vector(q).where("kind", "md").search_sync()),
            "empty, no check": lambda q: len(vs("keys").near_vector(q).where_not("kind", "md").search_sync()),
            "empty, key held": lambda q: len(vs("keys").near_vector(q).where("kind", "none").search_sync()),
            "empty, key missing": missing,
        }
        for system in systems.values():  # warm: handles, the in-memory copy, the key set
            system(queries[0])
        samples, found = alternate(systems, queries)
        assert set(found["empty, key missing"]) == {-1} and set(found["empty, key held"]) == {0}
        base = median_ms(samples["empty, no check"])
        for name, times in samples.items():
            p50 = median_ms(times)
            out.append((str(n), name, f"{p50:.2f}", f"{p95_ms(times):.2f}", f"{p50 / base:.2f}"))
        # The first empty search after a write, without and with the check (the key set is read again).
        for name, where in (("no check", ("kind", "!=", "md")), ("key held", ("kind", "=", "none"))):
            firsts = []
            for q in queries[: args.writes]:
                vs("keys").upsert_sync([{"id": "new", "vector": q, "metadata": {"kind": "md"}}])
                t = time.perf_counter()
                vs("keys").near_vector(q).where(*where).search_sync()
                firsts.append(time.perf_counter() - t)
            p50 = median_ms(firsts)
            label = f"first empty after a write, {name}"
            out.append((str(n), label, f"{p50:.2f}", f"{p95_ms(firsts):.2f}", f"{p50 / base:.2f}"))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[20_000])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--writes", type=int, default=10, help="writes before a first empty search")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    out: list[tuple[str, ...]] = []
    for n in args.sizes:
        run_size(n, args, rng, out)
    print(table(out, HEADER))


if __name__ == "__main__":
    main()
