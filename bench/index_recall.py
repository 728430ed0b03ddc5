"""Recall@10 and latency of LanceDB's vector indexes by search knob, against exact search, in one run.

Builds the index ``create_index('auto')`` would build for N rows (raw LanceDB
0.40, same parameters), then sweeps ``ef`` (HNSW) or ``nprobes`` (IVF) and
prints recall@10 against numpy's exact top-10, p50 latency, and which value
turnkit's default policy picks. This is where the defaults in
``_index_policy.py`` come from. ``--refine`` sweeps ``refine_factor`` too
(0 = none); ``--db DIR`` keeps the built table there and reuses it.
``--index ivf_pq`` or ``--index ivf_flat`` builds that index instead of
``'auto'``'s, to compare index types on the same data (``--ef`` then sweeps
``nprobes``; ``--sub-vectors`` sets IVF-PQ's ``num_sub_vectors``).

``--build 20:300,16:100`` builds one HNSW-SQ index per ``m:ef_construction``
pair instead (LanceDB's defaults are 20:300) and sweeps each; ``--chroma``
also builds Chroma on the same rows in the same run (a bench-only extra) and
sweeps its ``ef_search`` over ``--chroma-ef``, so the build times and the
recall each reaches at each latency compare side by side.

    python bench/index_recall.py [--rows 300000] [--dim 256] [--queries 200] [--ef 512,1024] [--refine 0,2]
        [--db DIR] [--index auto|ivf_pq|ivf_flat] [--sub-vectors 32]
        [--build 20:300,16:100] [--chroma] [--chroma-ef 128,256,512]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import Any

import numpy as np
from _common import median_ms, table
from peers import clustered

from turnkit.batteries.vector.store._index_policy import auto_index, search_knobs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", default="64,128,160,256,320,512,640")
    parser.add_argument(
        "--refine", default="0", help="refine factors to sweep (re-rank with exact distances; 0 = none)"
    )
    parser.add_argument("--db", default=None, help="keep the built table in this directory and reuse it")
    parser.add_argument("--index", choices=["auto", "ivf_pq", "ivf_flat"], default="auto")
    parser.add_argument("--sub-vectors", type=int, default=32, help="num_sub_vectors of --index ivf_pq")
    parser.add_argument("--build", default="", help="HNSW-SQ m:ef_construction pairs to build and sweep")
    parser.add_argument("--chroma", action="store_true", help="build and sweep Chroma on the same rows")
    parser.add_argument("--chroma-ef", default="128,256,512,1024,2048,4096")
    args = parser.parse_args()
    if args.build:
        sweep_builds(args)
        return

    import lancedb  # noqa: TID251 - measuring LanceDB itself
    from lancedb.index import HnswSq, IvfFlat, IvfPq  # noqa: TID251

    vectors, queries, truth = _data(args)
    kind, params = auto_index(args.rows)
    if args.index == "ivf_pq":
        kind, params = "ivf_pq", {"num_sub_vectors": args.sub_vectors}
    elif args.index == "ivf_flat":
        kind, params = "ivf_flat", {}  # LanceDB's own partition count
    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(args.db or tmp)
        name = f"t{args.rows}_{args.dim}" + ("" if args.index == "auto" else f"_{kind}")
        config = {"hnsw_sq": HnswSq, "ivf_pq": IvfPq, "ivf_flat": IvfFlat}[kind]
        tbl, build = _built(db, name, vectors, config(distance_type="cosine", **params))
        print(f"{args.rows:,} rows: {kind} {params} built in {build:.1f}s")
        index_type = {"hnsw_sq": "IvfHnswSq", "ivf_pq": "IvfPq", "ivf_flat": "IvfFlat"}[kind]
        default = search_knobs(index_type, args.rows, 10, None, None, None)
        rows = []
        sweep = [
            (e, r)
            for r in (int(x) for x in args.refine.split(","))
            for e in (int(x) for x in args.ef.split(","))
        ]
        for ef, refine in sweep:
            if kind == "hnsw_sq" and refine and ef < 10 * refine:
                continue  # LanceDB needs ef >= limit * refine_factor

            def search(q: np.ndarray, ef: int = ef, refine: int = refine) -> list[int]:
                query = tbl.search(q).distance_type("cosine").limit(10).select(["id"])
                query = query.ef(ef) if kind == "hnsw_sq" else query.nprobes(ef)
                if refine:
                    query = query.refine_factor(refine)
                return [r["id"] for r in query.to_list()]

            mark = f" refine {refine}" if refine else ""
            mark += " (default)" if ef in (default[2], default[0]) and refine == (default[1] or 0) else ""
            knob = f"{'ef' if kind == 'hnsw_sq' else 'nprobes'}={ef}{mark}"
            rows.append((f"{args.rows:,}", knob, *_timed(search, queries, truth)))
            print(table(rows[-1:], ("rows", "knob", "recall@10", "p50 ms")), flush=True)
        print(table(rows, ("rows", "knob", "recall@10", "p50 ms")))
        print(f"turnkit's default for {args.rows:,} rows: nprobes, refine_factor, ef = {default}")


def _data(args: argparse.Namespace) -> tuple[np.ndarray, np.ndarray, list[set[int]]]:
    """The clustered rows, the queries, and each query's exact top 10 (cosine)."""
    rng = np.random.default_rng(0)
    vectors = clustered(rng, args.rows, args.dim)
    queries = clustered(rng, args.queries, args.dim)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    truth = [set(np.argsort(-np.einsum("ij,j->i", unit, q))[:10].tolist()) for q in queries]
    return vectors, queries, truth


def _built(db: Any, name: str, vectors: np.ndarray, config: Any) -> tuple[Any, float]:
    """Table ``name`` of ``vectors`` with a vector index of ``config``, and its build seconds.

    A table kept from an earlier run (``--db``) is reused: its build time is NaN.
    """
    import pyarrow as pa

    if name in db.list_tables().tables:
        return db.open_table(name), float("nan")
    data = pa.table(
        {
            "id": pa.array(np.arange(len(vectors))),
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1]),
        }
    )
    tbl = db.create_table(name, data)
    started = time.perf_counter()
    tbl.create_index("vector", config=config)
    return tbl, time.perf_counter() - started


def _timed(search: Any, queries: np.ndarray, truth: list[set[int]]) -> tuple[str, str]:
    """recall@10 and p50 ms of ``search(query) -> ids`` over ``queries``."""
    samples, hits = [], []
    for q, want in zip(queries, truth, strict=True):
        s = time.perf_counter()
        found = set(search(q))
        samples.append(time.perf_counter() - s)
        hits.append(len(found & want) / 10)
    return f"{np.mean(hits):.3f}", f"{median_ms(samples):.2f}"


def sweep_builds(args: argparse.Namespace) -> None:
    """Build HNSW-SQ once per ``m:ef_construction`` of ``--build`` (and Chroma), time each, sweep ``ef``."""
    import lancedb  # noqa: TID251 - measuring LanceDB itself
    from lancedb.index import HnswSq  # noqa: TID251

    vectors, queries, truth = _data(args)
    params = {"num_partitions": auto_index(args.rows)[1]["num_partitions"]}  # m and ef_construction swept
    rows: list[tuple[str, ...]] = []
    header = ("rows", "system", "build s", "knob", "recall@10", "p50 ms")
    with tempfile.TemporaryDirectory() as tmp:
        db = lancedb.connect(args.db or tmp)
        for pair in args.build.split(","):
            m, construction = (int(x) for x in pair.split(":"))
            name = f"t{args.rows}_{args.dim}_m{m}_efc{construction}"
            config = HnswSq(distance_type="cosine", m=m, ef_construction=construction, **params)
            tbl, build = _built(db, name, vectors, config)
            for ef in (int(x) for x in args.ef.split(",")):

                def search(q: np.ndarray, ef: int = ef, tbl: Any = tbl) -> list[int]:
                    query = tbl.search(q).distance_type("cosine").limit(10).select(["id"]).ef(ef)
                    return [r["id"] for r in query.refine_factor(2).to_list()]

                rows.append(
                    (
                        f"{args.rows:,}",
                        f"lancedb m={m} efc={construction}",
                        f"{build:.1f}",
                        f"ef={ef}",
                        *_timed(search, queries, truth),
                    )
                )
                print(table(rows[-1:], header), flush=True)
        if args.chroma:
            from peers import Chroma

            chroma = Chroma(vectors, np.zeros(args.rows, dtype=np.int64), int(args.chroma_ef.split(",")[0]))
            try:
                for ef in (int(x) for x in args.chroma_ef.split(",")):
                    chroma.set_ef(ef)
                    recall, p50 = _timed(lambda q: chroma.search(q, False), queries, truth)
                    rows.append(
                        (f"{args.rows:,}", "chroma", f"{chroma.build:.1f}", f"ef_search={ef}", recall, p50)
                    )
                    print(table(rows[-1:], header), flush=True)
            finally:
                chroma.drop()
    print(table(rows, header))


if __name__ == "__main__":
    main()
