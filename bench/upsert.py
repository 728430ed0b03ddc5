"""Upsert throughput of turnkit against raw LanceDB ``merge_insert``.

N records with precomputed vectors are written in batches through
``vs(c).upsert`` and through ``merge_insert("id")`` on a second table built
from the same Python records, alternating batch by batch. Prints rows/s and
the ratio (target >= 0.9 of raw).

    .venv/bin/python bench/upsert.py [--rows 100000] [--dim 256] [--batch 5000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from datetime import UTC, datetime

import numpy as np
import pyarrow as pa
from _common import peak_rss_mb, table

from turnkit.batteries.vector import create_vector_store


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--batch", type=int, default=5_000)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(args.rows, args.dim)).astype(np.float32)
    records = [
        {
            "id": f"r{i}",
            "vector": vectors[i],
            "document": f"document number {i}",
            "metadata": {"n": i, "k": "x"},
        }
        for i in range(args.rows)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        vs = create_vector_store(uri=tmp, auto_optimize=None)
        vs.create_collection_sync("tk", dimension=args.dim)
        vs.create_collection_sync("raw", dimension=args.dim)  # same schema, written by raw LanceDB below

        import lancedb  # noqa: TID251 - the baseline is raw LanceDB

        raw = lancedb.connect(tmp).open_table("raw")
        # Written out, not read back with raw.schema: LanceDB reports the JSON
        # column as large_binary, and writing with that type stores plain bytes
        # (no JSONB), which is cheaper but leaves metadata unfilterable.
        schema = pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("vector", pa.list_(pa.float32(), args.dim)),
                pa.field("document", pa.string()),
                pa.field("metadata", pa.json_()),
                pa.field("created_at", pa.timestamp("us", tz="UTC")),
                pa.field("updated_at", pa.timestamp("us", tz="UTC")),
            ]
        )
        now = pa.scalar(0, pa.timestamp("us", tz="UTC"))

        def raw_upsert(batch: list[dict]) -> None:
            n = len(batch)
            vec = np.stack([r["vector"] for r in batch]).astype(np.float32)
            tbl = pa.Table.from_arrays(
                [
                    pa.array([r["id"] for r in batch]),
                    pa.FixedSizeListArray.from_arrays(pa.array(vec.reshape(-1)), args.dim),
                    pa.array([r["document"] for r in batch]),
                    pa.array([json.dumps(r["metadata"]) for r in batch]).cast(pa.json_()),
                    pa.array([now.value] * n, pa.timestamp("us", tz="UTC")),
                    pa.array([now.value] * n, pa.timestamp("us", tz="UTC")),
                ],
                schema=schema,
            )
            raw.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(tbl)

        times = {"turnkit upsert_sync": 0.0, "raw merge_insert": 0.0}
        for i, start in enumerate(range(0, args.rows, args.batch)):
            batch = records[start : start + args.batch]
            steps = [
                ("turnkit upsert_sync", lambda batch=batch: vs("tk").upsert_sync(batch)),
                ("raw merge_insert", lambda batch=batch: raw_upsert(batch)),
            ]
            if i % 2:
                steps.reverse()
            for name, fn in steps:
                t = time.perf_counter()
                fn()
                times[name] += time.perf_counter() - t
        assert vs("tk").count_sync() == args.rows == raw.count_rows()
        # Both wrote the same, filterable data: the comparison is fair only then.
        by_metadata = vs("tk").where("metadata.n", ">=", 0)
        assert by_metadata.count_sync() == args.rows == raw.count_rows(by_metadata.spec.where_sql)
        # Where turnkit's extra time goes: checking and converting the records
        # (what raw merge_insert skips), timed alone on the same batches.
        from turnkit.batteries.vector.store._records import collection_schema, prepare_records

        schema_tk = collection_schema(args.dim, {})
        checked = 0.0
        for start in range(0, args.rows, args.batch):
            t = time.perf_counter()
            batch_tk = prepare_records(records[start : start + args.batch])
            batch_tk.to_arrow(batch_tk.vector_array(args.dim), schema_tk, datetime.now(UTC))
            checked += time.perf_counter() - t
        times["(turnkit validate + convert only)"] = checked
        base = args.rows / times["raw merge_insert"]
        rows = [
            (name, f"{t:.2f}", f"{args.rows / t:,.0f}", f"{(args.rows / t) / base:.3f}")
            for name, t in times.items()
        ]
        print(table(rows, ("path", "seconds", "rows/s", "ratio vs raw")))
        print(f"peak RSS {peak_rss_mb():.0f} MiB; target: ratio >= 0.9")


if __name__ == "__main__":
    main()
