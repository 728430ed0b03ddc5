"""Many writers on one database: real processes, local disk and an S3-compatible server."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import shutil
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests._s3 import S3Server, create_gate, moto_available, s3_server
from tests._writers import DIM, expected_ids, guarded_writer, table_ids, turnkit_writer
from turnkit.batteries.vector import (
    AutoOptimize,
    VectorStoreRuntimeError,
    create_vector_store,
)
from turnkit.batteries.vector.filters._core import condition
from turnkit.batteries.vector.store._records import collection_schema


def _run(fn: Any, calls: list[tuple[Any, ...]]) -> list[Any]:
    with ProcessPoolExecutor(len(calls), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(fn, *args) for args in calls]
        return [f.result() for f in futures]


@pytest.fixture(scope="session")
def s3() -> Iterator[S3Server]:
    if not moto_available():
        pytest.skip("moto[server] is not installed (pip install 'turnkit[s3-test]')")
    with s3_server() as server:
        yield server


def test_processes_on_local_disk_never_duplicate_or_lose_an_id(tmp_path: Path) -> None:
    uri, workers, rounds, shared = str(tmp_path / "db"), 4, 6, 5
    errors = _run(turnkit_writer, [(uri, None, "c", w, rounds, shared) for w in range(workers)])
    ids = table_ids(uri, None, "c")
    assert errors == [0] * workers
    assert [i for i, n in Counter(ids).items() if n > 1] == []
    assert set(ids) == expected_ids(workers, rounds, shared)


def test_processes_on_object_storage_read_one_row_per_id_and_repair(s3: S3Server) -> None:
    uri, workers, rounds, shared = s3.new_bucket(), 3, 5, 5
    errors = _run(turnkit_writer, [(uri, s3.storage_options, "c", w, rounds, shared) for w in range(workers)])
    assert errors == [0] * workers
    want = expected_ids(workers, rounds, shared)
    assert set(table_ids(uri, s3.storage_options, "c")) == want  # nothing lost
    store = create_vector_store(uri, storage_options=s3.storage_options, auto_optimize=None)
    got = store("c").get_sync(sorted(want))
    assert sorted(m.id for m in got) == sorted(want)
    found = store("c").near_vector([1.0] * DIM).limit(len(want)).select("id").search_sync()
    assert len({m.id for m in found}) == len(found)
    store.repair_sync("c")
    ids = table_ids(uri, s3.storage_options, "c")
    assert sorted(ids) == sorted(want)


def _write_new(uri: str, options: dict[str, str], collection: str, ids: list[str]) -> int:
    store = create_vector_store(uri, storage_options=options, auto_optimize=None)
    store(collection).upsert_sync([{"id": i, "vector": [1.0] * DIM} for i in ids])
    return 0


def test_a_create_that_lands_on_a_collection_just_created_elsewhere_keeps_its_rows(s3: S3Server) -> None:
    # Lance checks that a table is missing when a create starts and again before it commits;
    # the gate holds a writer between the two while another creates the collection and writes.
    uri = s3.new_bucket()
    first = create_vector_store(uri, storage_options=s3.storage_options, auto_optimize=None)
    with (
        create_gate(s3, "late") as gate,
        ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool,
    ):
        late = pool.submit(_write_new, uri, gate.storage_options, "late", ["b0", "b1"])
        assert first.list_collections_sync() == []  # connected while the other process starts
        while not gate.held.wait(0.1):
            assert not late.done(), late.result()  # the create never reached its second check
        first("late").upsert_sync([{"id": i, "vector": [1.0] * DIM} for i in ("a0", "a1")])
        gate.release.set()
        assert late.result(timeout=120) == 0
    assert sorted(table_ids(uri, s3.storage_options, "late")) == ["a0", "a1", "b0", "b1"]
    # This handle read the collection before the late create committed over it: the write runs again.
    first("late").upsert_sync([{"id": "a2", "vector": [1.0] * DIM}])
    want = ["a0", "a1", "a2", "b0", "b1"]
    assert sorted(table_ids(uri, s3.storage_options, "late")) == want
    assert sorted(m.id for m in first("late").get_sync(want)) == want


def test_rows_written_over_a_late_create_are_written_again_after_the_restore(s3: S3Server) -> None:
    import lancedb  # noqa: TID251 - the late create's overwrite is staged below the store

    from turnkit.batteries.vector.store._integrity import undo_late_create

    uri, options = s3.new_bucket(), s3.storage_options
    store = create_vector_store(uri, storage_options=options, auto_optimize=None, fields={"tenant": str})
    rows = [{"id": f"a{i}", "vector": [1.0] * DIM, "metadata": {"tenant": "x"}} for i in range(3)]
    store("r").upsert_sync(rows)

    async def main() -> None:
        db = await lancedb.connect_async(uri, storage_options=options)
        # What Lance commits for a create that found the table at its second check: an empty overwrite.
        late = await db.create_table("r", schema=collection_schema(DIM, {}), mode="overwrite")
        on_top = create_vector_store(uri, storage_options=options, auto_optimize=None)
        await on_top("r").upsert([{"id": "c0", "vector": [1.0] * DIM, "metadata": {"tenant": "x", "k": 1}}])
        assert await undo_late_create(late, "r")

    asyncio.run(main())
    fresh = create_vector_store(uri, storage_options=options, auto_optimize=None)
    assert sorted(table_ids(uri, options, "r")) == ["a0", "a1", "a2", "c0"]
    tenant_x = fresh("r").where(condition("metadata.tenant", "eq", "x")).limit(10).select("id", "metadata")
    found = {m.id: m.metadata for m in tenant_x.search_sync()}
    assert sorted(found) == ["a0", "a1", "a2", "c0"]  # the declared field was filled for c0 too
    assert found["c0"] == {"tenant": "x", "k": 1}


def _duplicated(uri: str, ids: list[str]) -> None:
    """A collection holding every id twice, written around turnkit (as older versions could)."""
    import lancedb  # noqa: TID251 - duplicates can only be made below the store

    store = create_vector_store(uri, auto_optimize=None)
    unit = [1.0] + [0.0] * (DIM - 1)
    store("d").upsert_sync([{"id": i, "vector": unit, "metadata": {"v": 1}} for i in ids])
    table = lancedb.connect(uri).open_table("d")
    schema = collection_schema(DIM, {})
    n = len(ids)
    table.add(
        pa.table(
            {
                "id": ids,
                "vector": pa.FixedSizeListArray.from_arrays(pa.array(np.tile(unit, n), pa.float32()), DIM),
                "document": pa.array([None] * n, pa.string()),
                "metadata": pa.array(['{"v": 2}'] * n).cast(pa.json_()),
                "created_at": pa.array([0] * n, pa.timestamp("us", tz="UTC")),
                "updated_at": pa.array([2**52] * n, pa.timestamp("us", tz="UTC")),
            },
            schema=schema,
        )
    )


def test_a_table_holding_duplicates_reads_each_id_once_newest_first(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    ids = [f"r{i}" for i in range(40)]
    _duplicated(uri, ids)
    store = create_vector_store(uri, auto_optimize=None)
    got = store("d").get_sync(ids)
    assert [m.id for m in got] == ids  # get of N ids returns N
    assert {m.metadata["v"] for m in got if m.metadata} == {2}  # the newest copy
    unit = [1.0] + [0.0] * (DIM - 1)
    found = store("d").near_vector(unit).limit(80).select("id", "updated_at").search_sync()
    assert sorted(m.id for m in found) == sorted(ids)
    assert store.repair_sync("d") == len(ids)
    assert sorted(table_ids(uri, None, "d")) == sorted(ids)
    assert {m.metadata["v"] for m in store("d").get_sync(ids) if m.metadata} == {2}
    assert store.repair_sync("d") == 0


def _first_write(uri: str, worker: int) -> int:
    store = create_vector_store(uri, auto_optimize=None)
    store("new").upsert_sync([{"id": f"x{worker}", "vector": [1.0] * DIM}])
    return 0


def test_concurrent_first_writes_to_a_new_collection_both_succeed(tmp_path: Path) -> None:
    for trial in range(3):
        uri = str(tmp_path / f"db{trial}")
        assert _run(_first_write, [(uri, w) for w in range(3)]) == [0, 0, 0]
        assert sorted(table_ids(uri, None, "new")) == ["x0", "x1", "x2"]


def test_concurrent_first_writes_from_stores_in_one_process(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    stores = [create_vector_store(uri, auto_optimize=None) for _ in range(4)]

    async def main() -> None:
        await asyncio.gather(
            *(s("n").upsert([{"id": f"x{k}", "vector": [1.0] * DIM}]) for k, s in enumerate(stores))
        )

    asyncio.run(main())
    assert sorted(table_ids(uri, None, "n")) == ["x0", "x1", "x2", "x3"]


def test_a_damaged_collection_is_an_error_and_never_written_over(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    store = create_vector_store(uri, auto_optimize=None)
    store("c").upsert_sync([{"id": f"r{i}", "vector": [1.0] * DIM} for i in range(30)])
    shutil.rmtree(tmp_path / "db" / "c.lance" / "_versions")
    fresh = create_vector_store(uri, auto_optimize=None)
    with pytest.raises(VectorStoreRuntimeError) as info:
        fresh("c").upsert_sync([{"id": "new", "vector": [1.0] * DIM}])
    assert info.value.code == "E_VECTOR_STORE_COLLECTION_CORRUPT"
    assert info.value.hint
    with pytest.raises(VectorStoreRuntimeError) as exc_info:
        fresh("c").get_sync(["r1"])
    assert exc_info.value.code == "E_VECTOR_STORE_COLLECTION_CORRUPT"
    assert not (tmp_path / "db" / "c.lance" / "_versions").exists()  # nothing created over it


def test_guarded_writers_in_two_processes_never_touch_each_others_rows(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    ids = [f"g{i}" for i in range(10)]
    errors = _run(guarded_writer, [(uri, "g", "A", 15, ids), (uri, "g", "B", 15, ids)])
    assert errors == [0, 0]
    store = create_vector_store(uri, auto_optimize=None)
    # Each tenant holds its own record under every id: one row per tenant and id, none taken over.
    assert sorted(table_ids(uri, None, "g")) == sorted(ids * 2)
    guards = {t: condition("metadata.tenant", "eq", t) for t in ("A", "B")}
    for tenant, guard in guards.items():
        mine = store("g").where(guard).limit(100).select("id", "metadata").search_sync()
        assert sorted(m.id for m in mine) == ids
        assert {(m.metadata or {}).get("tenant") for m in mine} == {tenant}
        again = store("g").upsert_sync(
            [{"id": i, "vector": [1.0] * DIM, "metadata": {"tenant": tenant, "v": tenant}} for i in ids],
            guard=guard,
        )
        assert (again.inserted, again.updated) == (0, len(ids))  # its own rows, found again
    for tenant, guard in guards.items():
        back = store("g").where(guard).get_sync(ids)
        assert [m.id for m in back] == ids
        assert all(m.metadata == {"tenant": tenant, "v": tenant} for m in back)
    assert store.repair_sync("g") == 0  # two tenants' records under one id are not duplicates
    assert sorted(table_ids(uri, None, "g")) == sorted(ids * 2)


def test_a_record_outside_the_guard_is_refused(tmp_path: Path) -> None:
    from turnkit.batteries.vector import VectorStoreUsageError

    store = create_vector_store(str(tmp_path / "db"), auto_optimize=None)
    with pytest.raises(VectorStoreUsageError) as exc_info:
        store("g").upsert_sync(
            [{"id": "x", "vector": [1.0] * DIM, "metadata": {"tenant": "B"}}],
            guard=condition("metadata.tenant", "eq", "A"),
        )
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"


def test_background_optimize_with_several_stores_logs_no_failure(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    uri = str(tmp_path / "db")
    stores = [create_vector_store(uri, auto_optimize=AutoOptimize(every_writes=3)) for _ in range(4)]
    caplog.set_level(logging.WARNING, logger="turnkit.vector")

    async def main() -> None:
        for round_ in range(10):
            await asyncio.gather(
                *(
                    s("o").upsert([{"id": f"r{round_}-{k}", "vector": [1.0] * DIM}])
                    for k, s in enumerate(stores)
                )
            )
        for s in stores:
            await s.wait_for_maintenance()

    asyncio.run(main())
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert len(table_ids(uri, None, "o")) == 40
