"""Writer processes shared by the multi-process store tests and ``bench/writers.py``.

Each function runs in a spawned child: it opens its own store, writes, and
returns how many of its calls failed.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import numpy as np

os.environ.setdefault("LANCEDB_LOG", "error")

DIM = 8


def round_ids(worker: int, round_: int, shared: int) -> list[str]:
    """``shared`` ids every worker writes in this round (new ones each round), and one of its own."""
    return [f"k{round_}-{j}" for j in range(shared)] + [f"w{worker}-{round_}"]


def expected_ids(workers: int, rounds: int, shared: int) -> set[str]:
    """Every id the writers write between them."""
    return {i for w in range(workers) for r in range(rounds) for i in round_ids(w, r, shared)}


def _records(ids: list[str], worker: int, tenant: str | None = None) -> list[dict[str, Any]]:
    rng = np.random.default_rng(worker + 1)
    vectors = rng.random((len(ids), DIM), dtype=np.float32) + 0.01
    metadata = {"worker": worker} if tenant is None else {"tenant": tenant, "worker": worker}
    return [{"id": i, "vector": v, "metadata": metadata} for i, v in zip(ids, vectors, strict=True)]


def turnkit_writer(
    uri: str,
    options: dict[str, str] | None,
    collection: str,
    worker: int,
    rounds: int,
    shared: int,
    start: Any = None,
) -> int:
    """Upsert overlapping new ids through turnkit; returns the number of failed calls.

    ``start`` (a barrier) lines the writers up once connected, so their first
    writes (the collection's creation) come at the same moment.
    """
    from turnkit.batteries.vector import create_vector_store

    store = create_vector_store(uri, storage_options=options, auto_optimize=None)
    if start is not None:
        store.list_collections_sync()  # connected before the line-up
        start.wait()
    errors = 0
    for round_ in range(rounds):
        try:
            store(collection).upsert_sync(_records(round_ids(worker, round_, shared), worker))
        except Exception as exc:
            if not errors:
                print(f"writer {worker}: {exc!r}"[:400], file=sys.stderr)
            errors += 1
    return errors


def raw_writer(
    uri: str,
    options: dict[str, str] | None,
    collection: str,
    worker: int,
    rounds: int,
    shared: int,
    start: Any = None,
) -> int:
    """The same writes with LanceDB's own ``merge_insert`` (the baseline)."""
    import lancedb  # noqa: TID251 - the baseline is LanceDB itself
    import pyarrow as pa

    from turnkit.batteries.vector.store._records import collection_schema

    db = lancedb.connect(uri, storage_options=options)
    schema = collection_schema(DIM, {})
    if start is not None:
        db.list_tables()
        start.wait()
    try:
        table = db.open_table(collection)
    except ValueError:
        try:
            table = db.create_table(collection, schema=schema)
        except (ValueError, RuntimeError):  # another writer created it first (or committed first)
            table = db.open_table(collection)
    errors = 0
    for round_ in range(rounds):
        ids = round_ids(worker, round_, shared)
        vectors = np.random.default_rng(worker + 1).random((len(ids), DIM), dtype=np.float32) + 0.01
        data = pa.table(
            {
                "id": ids,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), DIM),
                "document": pa.array([None] * len(ids), pa.string()),
                "metadata": pa.array([f'{{"worker": {worker}}}'] * len(ids)).cast(pa.json_()),
                "created_at": pa.array([0] * len(ids), pa.timestamp("us", tz="UTC")),
                "updated_at": pa.array([0] * len(ids), pa.timestamp("us", tz="UTC")),
            },
            schema=schema,
        )
        try:
            table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        except Exception:
            errors += 1
    return errors


def guarded_writer(uri: str, collection: str, tenant: str, rounds: int, ids: list[str]) -> int:
    """Write ``ids`` behind the guard ``tenant == <tenant>`` every round; returns failed calls."""
    from turnkit.batteries.vector import create_vector_store
    from turnkit.batteries.vector.filters._core import condition

    store = create_vector_store(uri, auto_optimize=None)
    guard = condition("metadata.tenant", "eq", tenant)
    errors = 0
    for _ in range(rounds):
        try:
            store(collection).upsert_sync(_records(ids, 0, tenant), guard=guard)
        except Exception:
            errors += 1
    return errors


def table_ids(uri: str, options: dict[str, str] | None, collection: str) -> list[str]:
    """Every row's id, read with LanceDB directly (duplicates included)."""
    import lancedb  # noqa: TID251 - count rows below the store

    table = lancedb.connect(uri, storage_options=options).open_table(collection)
    return [str(i) for i in table.to_arrow()["id"].to_pylist()]
