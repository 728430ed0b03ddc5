"""`iter_rows()` and `get()` by filter: a whole collection in id order, each id once, any page size."""

from __future__ import annotations

import asyncio
import itertools
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lancedb  # noqa: TID251 - rows another tool wrote, below the store
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    HashEncoder,
    VectorStore,
    VectorStoreUsageError,
    create_vector_store,
)

_names = itertools.count()
# Ids as users write them: quotes, spaces, non-ASCII, SQL-looking text (never NUL, at most 1,024 chars).
IDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=12
).filter(lambda s: not s.isspace())


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("rows") / "db"


@pytest.fixture(scope="module")
def store(db: Path) -> VectorStore:
    # Readers see the rows another connection adds (the duplicates below) on their next read.
    return create_vector_store(
        uri=str(db), encoder=HashEncoder(8), auto_optimize=None, read_consistency_interval=timedelta(0)
    )


def _fill(store: VectorStore, ids: list[str]) -> str:
    name = f"rows{next(_names)}"
    records = [
        {"id": rid, "vector": [1.0, float(i)], "document": f"doc {i}", "metadata": {"n": i}}
        for i, rid in enumerate(ids)
    ]
    store(name).upsert_sync(records)
    if not ids:
        store.create_collection_sync(name, dimension=2, exist_ok=True)
    return name


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(IDS, unique=True, max_size=40), page_size=st.integers(1, 45))
def test_pages_concatenated_are_every_row_once_in_id_order(
    store: VectorStore, ids: list[str], page_size: int
) -> None:
    name = _fill(store, ids)
    got = [m.id for m in store(name).iter_rows_sync(page_size=page_size)]
    assert got == sorted(ids)


async def _collect(store: VectorStore, name: str, page_size: int) -> list[str]:
    return [m.id async for m in store(name).where("metadata.n", ">=", 3).iter_rows(page_size=page_size)]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ids=st.lists(IDS, unique=True, min_size=1, max_size=20), page_size=st.integers(1, 7))
def test_the_async_form_and_a_filter(store: VectorStore, ids: list[str], page_size: int) -> None:
    name = _fill(store, ids)
    want = sorted(rid for i, rid in enumerate(ids) if i >= 3)
    assert asyncio.run(_collect(store, name, page_size)) == want
    assert [m.id for m in store(name).get_sync(where={"metadata.n": {"$gte": 3}})] == want


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    copies=st.lists(st.integers(1, 4), min_size=1, max_size=8),
    page_size=st.integers(1, 6),
)
def test_ids_held_twice_come_once_as_their_newest_copy_across_page_ends(
    store: VectorStore, db: Path, copies: list[int], page_size: int
) -> None:
    ids = [f"id{i}" for i in range(len(copies))]
    name = _fill(store, ids)
    # Older copies, as racing writers on object storage (or another tool) leave them.
    old = datetime(2000, 1, 1, tzinfo=UTC)
    extra = [(rid, k) for rid, n in zip(ids, copies, strict=True) for k in range(n - 1)]
    if extra:
        table = lancedb.connect(str(db)).open_table(name)
        rows = pa.table(
            {
                "id": [rid for rid, _ in extra],
                "vector": pa.array([[1.0, 1.0]] * len(extra), pa.list_(pa.float32(), 2)),
                "document": [f"stale {k}" for _, k in extra],
                "metadata": pa.array(["{}"] * len(extra), pa.string()).cast(pa.json_()),
                "created_at": pa.array([old] * len(extra), pa.timestamp("us", tz="UTC")),
                "updated_at": pa.array(
                    [old + timedelta(days=k) for _, k in extra], pa.timestamp("us", tz="UTC")
                ),
            }
        )
        table.add(rows.cast(table.schema))
    got = list(store(name).iter_rows_sync(page_size=page_size))
    assert [m.id for m in got] == sorted(ids)
    assert all(m.document and m.document.startswith("doc ") for m in got)


def test_iteration_reads_the_version_it_started_on(tmp_path: Path) -> None:
    vs = create_vector_store(uri=str(tmp_path / "db"), encoder=HashEncoder(8), auto_optimize=None)
    vs("c").upsert_sync([{"id": f"r{i}", "document": f"row {i}"} for i in range(10)])
    rows = vs("c").iter_rows_sync(page_size=3)
    first = [next(rows).id for _ in range(3)]
    vs("c").upsert_sync([{"id": "r05x", "document": "written meanwhile"}])
    assert vs("c").where_in("id", ["r7", "r8"]).delete_sync() == 2
    assert first + [m.id for m in rows] == sorted(f"r{i}" for i in range(10))


def test_select_and_the_default_fields() -> None:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(8))
    vs("c").upsert_sync([{"id": "a", "document": "one", "metadata": {"k": {"x": 1, "y": 2}}}])
    (plain,) = vs("c").iter_rows_sync()
    assert plain.vector is None and plain.metadata == {"k": {"x": 1, "y": 2}} and plain.updated_at
    (full,) = vs("c").select("*").iter_rows_sync()
    assert full.vector is not None and len(full.vector) == 8
    (narrow,) = vs("c").select("id", "metadata.k.x").iter_rows_sync()
    assert narrow.metadata == {"k": {"x": 1}} and narrow.document is None and narrow.updated_at is None


def test_get_without_ids_returns_every_match_in_id_order() -> None:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(8))
    vs("c").upsert_sync(
        [{"id": f"r{i:02d}", "document": f"row {i}", "metadata": {"n": i}} for i in range(30)]
    )
    assert [m.id for m in vs("c").get_sync()] == [f"r{i:02d}" for i in range(30)]
    assert [m.id for m in vs("c").where("metadata.n", "<", 2).get_sync()] == ["r00", "r01"]
    # `where=` is ANDed with the builder's filter, and ids still narrow it.
    both = vs("c").where("metadata.n", "<", 5).get_sync(where={"metadata.n": {"$gte": 3}})
    assert [m.id for m in both] == ["r03", "r04"]
    assert [m.id for m in vs("c").get_sync(["r04", "r20"], where={"metadata.n": {"$lt": 10}})] == ["r04"]


def test_an_over_long_id_is_simply_not_found() -> None:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(8))
    vs("c").upsert_sync([{"id": "a", "document": "one"}])
    assert vs("c").get_sync(["x" * 70_000]) == []
    assert [m.id for m in vs("c").get_sync(["x" * 1025, "a", "b\x00"])] == ["a"]


def test_a_vector_beyond_float32_is_refused_without_a_numpy_warning() -> None:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(4))
    vs("c").upsert_sync([{"id": "a", "vector": [1.0, 0, 0, 0]}])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(VectorStoreUsageError, match="too large for float32") as info:
            vs("c").upsert_sync(
                [{"id": "ok", "vector": [1.0, 0, 0, 0]}, {"id": "big", "vector": [1e39, 0, 0, 0]}]
            )
    assert caught == []
    assert info.value.code == "E_INVALID_VECTOR_RECORD" and info.value.context["index"] == 1
    with pytest.raises(VectorStoreUsageError, match="NaN or infinity") as exc_info:
        vs("c").upsert_sync([{"id": "n", "vector": [float("inf"), 0, 0, 0]}])
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    assert vs("c").count_sync() == 1


def test_iter_rows_refuses_what_it_would_ignore() -> None:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(8))
    with pytest.raises(VectorStoreUsageError, match="limit/offset") as exc_info:
        vs("c").limit(5).iter_rows_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError, match="near clause") as exc_info:
        vs("c").near_text("x").iter_rows()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError, match="page_size") as exc_info:
        vs("c").iter_rows_sync(page_size=0)
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
