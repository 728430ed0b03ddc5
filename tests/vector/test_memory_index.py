"""The in-memory exact path against the LanceDB path it replaces, and its filter masks against `evaluate`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    MemoryCache,
    VectorStoreUsageError,
    create_vector_store,
)
from turnkit.batteries.vector.filters._ast import Condition, Raw
from turnkit.batteries.vector.filters._core import condition, evaluate
from turnkit.batteries.vector.store._memory_index import INLINE_WORK, default_budget, usable_memory
from turnkit.batteries.vector.store._memory_int8 import Int8Copy, pays
from turnkit.batteries.vector.store._memory_mask import filter_mask, path_column

SLOW = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


def _columns(records: list[dict[str, Any]]) -> tuple[dict[str, pa.Array], list[Any]]:
    columns = {
        "id": pa.array([r["id"] for r in records], pa.string()),
        "document": pa.array([r["document"] for r in records], pa.string()),
        "created_at": pa.array([r["created_at"] for r in records], pa.timestamp("us", tz="UTC")),
        "updated_at": pa.array([r["updated_at"] for r in records], pa.timestamp("us", tz="UTC")),
    }
    metadata = [None if r["metadata"] is None else json.dumps(r["metadata"]) for r in records]
    return columns, metadata


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_mask_selects_what_evaluate_accepts(fixed_table: Any, strategies: dict[str, Any], data: Any) -> None:
    records = fixed_table.records
    columns, metadata = _columns(records)
    node = data.draw(strategies["trees"])
    mask = filter_mask(node, columns, lambda path: path_column(metadata, path))
    if mask is None:  # like/contains: LanceDB answers those
        return
    assert [r["id"] for r, keep in zip(records, mask, strict=True) if keep] == [
        r["id"] for r in records if evaluate(node, r)
    ]


def test_mask_declines_what_it_cannot_evaluate(fixed_table: Any) -> None:
    columns, metadata = _columns(fixed_table.records)

    def path(p: tuple[str, ...]) -> Any:
        return path_column(metadata, p)

    assert filter_mask(Raw("id = ?", ("x",)), columns, path) is None
    assert filter_mask(condition("metadata.a", "like", "x%"), columns, path) is None
    assert filter_mask(condition("metadata.a", "contains", "x"), columns, path) is None
    supported = filter_mask(Condition("metadata.a", "eq", "x"), columns, path)
    assert supported is not None and supported.any()


# ---------------------------------------------------------------------------
# The store: the same matches with and without the memory path.

_KINDS = ["a", "b", "c"]
filters = st.one_of(
    st.none(),
    st.builds(lambda k: condition("metadata.kind", "eq", k), st.sampled_from(_KINDS)),
    st.builds(lambda n: condition("metadata.n", "lt", n), st.integers(-2, 40)),
    st.builds(lambda n: condition("metadata.o.x", "gte", n), st.floats(-1, 1)),
    st.builds(
        lambda ids: condition("id", "in", ids), st.lists(st.sampled_from([f"r{i}" for i in range(30)]))
    ),
    st.builds(lambda k: condition("metadata.kind", "ne", k), st.sampled_from([*_KINDS, None])),
    st.just(condition("metadata.o", "exists", False)),
    st.just(condition("document", "like", "doc 1%")),  # the memory path declines this one
)


def _records(rng: np.random.Generator, ids: list[int], dim: int) -> list[dict[str, Any]]:
    out = []
    for i in ids:
        meta: dict[str, Any] = {"kind": _KINDS[int(rng.integers(3))], "n": int(rng.integers(40))}
        if rng.random() < 0.5:
            meta["o"] = {"x": float(rng.normal())}
        out.append(
            {
                "id": f"r{i}",
                "vector": rng.normal(size=dim).astype(np.float32),
                "document": f"doc {i}",
                "metadata": meta,
            }
        )
    return out


def _same(fast: list[Any], slow: list[Any]) -> None:
    assert [m.id for m in fast] == [m.id for m in slow]
    for a, b in zip(fast, slow, strict=True):
        assert a.distance == pytest.approx(b.distance, rel=1e-4, abs=1e-5)
        assert a.score == pytest.approx(b.score, rel=1e-4, abs=1e-5)
        assert (a.document, a.metadata, a.created_at) == (b.document, b.metadata, b.created_at)
        if b.vector is not None:
            assert a.vector == pytest.approx(b.vector)


@SLOW
@given(
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    refresh=st.sampled_from(["inline", "background"]),
    seed=st.integers(0, 2**32 - 1),
    steps=st.lists(
        st.tuples(st.sampled_from(["upsert", "delete", "search", "search"]), filters, st.integers(1, 12)),
        min_size=2,
        max_size=6,
    ),
)
def test_memory_path_matches_lancedb(
    tmp_path_factory: Any, metric: str, refresh: Any, seed: int, steps: list[Any]
) -> None:
    """Inline, every search after a write reads the copy again; in the background, LanceDB answers
    until the copy is read, and memory after: either way the same matches as LanceDB's."""
    uri = str(tmp_path_factory.mktemp("db"))
    cache = MemoryCache(refresh=refresh)
    fast = create_vector_store(uri=uri, metric=metric, auto_optimize=None, memory_cache=cache)
    slow = create_vector_store(uri=uri, metric=metric, auto_optimize=None, memory_cache=None)
    rng = np.random.default_rng(seed)
    dim = 6
    fast("c").upsert_sync(_records(rng, list(range(20)), dim))
    for op, node, k in steps:
        if op == "upsert":
            fast("c").upsert_sync(_records(rng, [int(i) for i in rng.choice(30, size=k, replace=False)], dim))
        elif op == "delete" and node is not None:
            fast("c").where(condition("metadata.n", "lt", k)).delete_sync()
        q = rng.normal(size=dim).astype(np.float32)
        offset = int(rng.integers(0, 3))
        for store_select in (("id", "document", "metadata", "created_at"), ("*",)):
            results = []
            for vs in (fast, slow):
                b = vs("c").near_vector(q).select(*store_select).limit(k).offset(offset)
                results.append((b if node is None else b.where(node)).search_sync())
            _same(*results)
    _wait_for_copy(fast)  # a copy read in the background may still be on its way
    assert fast.cache_stats().collections[0].name == "c"
    assert slow.cache_stats().collections == ()


def test_thresholds_offset_and_near_id_agree(tmp_path: Any) -> None:
    uri = str(tmp_path / "db")
    fast = create_vector_store(uri=uri, auto_optimize=None)
    slow = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    rng = np.random.default_rng(7)
    fast("c").upsert_sync(_records(rng, list(range(30)), 8))
    q = rng.normal(size=8)
    for vs_query in (
        lambda vs: vs("c").near_vector(q).select("id").limit(5).offset(3),
        lambda vs: vs("c").near_vector(q).select("id").limit(30).min_score(0.5),
        lambda vs: vs("c").near_vector(q).select("id").limit(30).max_distance(0.9),
        lambda vs: vs("c").near_id("r4").select("id", "vector").limit(4),
    ):
        _same(vs_query(fast).search_sync(), vs_query(slow).search_sync())


def test_ties_are_broken_by_id(tmp_path: Any) -> None:
    vs = create_vector_store(uri=str(tmp_path / "db"), auto_optimize=None)
    vs("c").upsert_sync(
        [{"id": f"r{i}", "vector": [1.0, 0.0]} for i in (3, 1, 2)] + [{"id": "far", "vector": [0, 1.0]}]
    )
    assert [m.id for m in vs("c").near_vector([1.0, 0.0]).select("id").limit(2).search_sync()] == ["r1", "r2"]


def _search_big_and_small(vs: Any, rng: np.random.Generator) -> None:
    """Write a 10-row and a 3-row collection (4-d) and search each: every search answers, cached or not."""
    vs("big").upsert_sync(_records(rng, list(range(10)), 4))
    vs("small").upsert_sync(_records(rng, list(range(3)), 4))
    for name in ("big", "small"):
        assert len(vs(name).near_vector(rng.normal(size=4)).select("id").limit(3).search_sync()) == 3


def test_budget_and_row_limit_fall_back_to_lancedb(tmp_path: Any) -> None:
    uri = str(tmp_path / "db")
    vs = create_vector_store(
        uri=uri, auto_optimize=None, memory_cache=MemoryCache(max_rows=5, max_vector_bytes=0)
    )
    rng = np.random.default_rng(1)
    _search_big_and_small(vs, rng)
    stats = vs.cache_stats()
    assert [c.name for c in stats.collections] == ["small"]
    assert stats.collections[0].rows == 3 and 0 < stats.bytes <= stats.max_bytes
    tiny = create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(max_bytes=10))
    assert tiny("small").near_vector(rng.normal(size=4)).select("id").limit(3).search_sync()
    assert tiny.cache_stats().collections == ()


def test_a_collection_over_max_rows_is_cached_while_its_vectors_fit_max_vector_bytes(tmp_path: Any) -> None:
    uri = str(tmp_path / "db")
    rng = np.random.default_rng(2)
    # 10 rows x 4 floats = 160 bytes of vectors, 3 rows = 48.
    vs = create_vector_store(
        uri=uri, auto_optimize=None, memory_cache=MemoryCache(max_rows=2, max_vector_bytes=100)
    )
    _search_big_and_small(vs, rng)
    stats = vs.cache_stats()
    assert [c.name for c in stats.collections] == ["small"]
    assert (stats.max_rows, stats.max_vector_bytes) == (2, 100)
    roomy = create_vector_store(
        uri=uri, auto_optimize=None, memory_cache=MemoryCache(max_rows=2, max_vector_bytes=160)
    )
    assert len(roomy("big").near_vector(rng.normal(size=4)).select("id").limit(3).search_sync()) == 3
    assert [(c.name, c.rows) for c in roomy.cache_stats().collections] == [("big", 10)]


@example(rows=245, dimension=134, max_rows=245, max_vector_bytes=0, max_bytes=393_950)  # no int8 copy
@given(
    rows=st.integers(0, 10**7),
    dimension=st.integers(1, 4096),
    max_rows=st.integers(0, 10**6),
    max_vector_bytes=st.integers(0, 2**31),
    max_bytes=st.integers(0, 2**33),
)
def test_admits_is_rows_or_vector_bytes_within_the_budget(
    rows: int, dimension: int, max_rows: int, max_vector_bytes: int, max_bytes: int
) -> None:
    config = MemoryCache(max_rows=max_rows, max_vector_bytes=max_vector_bytes, max_bytes=max_bytes)
    small = rows <= max_rows or rows * dimension * 4 <= max_vector_bytes
    # The budget holds the float32 matrix, its int8 copy where one is made (`_memory_int8.py`: over
    # INLINE_WORK, where numkong's SIMD kernels run) and about 1 KiB of text a row.
    coded = Int8Copy.row_bytes(dimension) if rows * dimension > INLINE_WORK and pays() else 0
    assert config.admits(rows, dimension) == (small and rows * (dimension * 4 + coded + 1024) <= max_bytes)


_WRITER = """
import sys
from turnkit.batteries.vector import create_vector_store
vs = create_vector_store(uri=sys.argv[1], auto_optimize=None)
vs("c").upsert_sync([{"id": "new", "vector": [0.0, 0.0, 1.0]}])
"""


def test_writes_by_another_process_are_seen_under_read_consistency(tmp_path: Any) -> None:
    uri = str(tmp_path / "db")
    vs = create_vector_store(uri=uri, auto_optimize=None, read_consistency_interval=timedelta(0))
    vs("c").upsert_sync([{"id": "old", "vector": [1.0, 0.0, 0.0]}])
    query = vs("c").near_vector([0.0, 0.0, 1.0]).select("id").limit(1)
    assert [m.id for m in query.search_sync()] == ["old"]
    subprocess.run([sys.executable, "-c", _WRITER, uri], check=True, timeout=120)
    assert [m.id for m in query.search_sync()] == ["new"]  # LanceDB answers while the copy is read
    _wait_for_copy(vs, rows=2)
    assert [m.id for m in query.search_sync()] == ["new"]  # and memory once it is


_RECREATE = """
import sys
from turnkit.batteries.vector import create_vector_store
vs = create_vector_store(uri=sys.argv[1], auto_optimize=None, memory_cache=None)
vs.drop_collection_sync("c")
for n in (1, 2):  # versions 1 (create) to 3: the numbers the dropped table had reached
    vs("c").upsert_sync([{"id": f"new{n}", "vector": [1.0, 0.0, float(n)]}])
print(vs("c").info_sync().version)
"""


def _reader_of_two_records(uri: str, refresh: Any) -> Any:
    """Two commits of 3-d records (version 3), and a store that checks for other processes' writes."""
    writer = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
    for n in (1, 2):
        writer("c").upsert_sync([{"id": f"old{n}", "vector": [1.0, 0.0, float(n)]}])
    return create_vector_store(
        uri=uri,
        auto_optimize=None,
        read_consistency_interval=timedelta(0),
        memory_cache=MemoryCache(refresh=refresh),
    )


@pytest.mark.parametrize("refresh", ["background", "inline"])
def test_a_table_recreated_by_another_process_at_the_same_version_is_read_again(
    tmp_path: Any, refresh: Any
) -> None:
    uri = str(tmp_path / "db")
    vs = _reader_of_two_records(uri, refresh)
    query = vs("c").near_vector([1.0, 0.0, 1.0]).select("id").limit(5)
    assert sorted(m.id for m in query.search_sync()) == ["old1", "old2"]
    _wait_for_copy(vs, rows=2)
    version = vs("c").info_sync().version
    out = subprocess.run(
        [sys.executable, "-c", _RECREATE, uri], check=True, timeout=120, capture_output=True, text=True
    )
    assert int(out.stdout) == version  # the case: the new table's version number is the cached one's
    for _ in range(3):  # LanceDB answers while the copy is read again, then the copy
        assert sorted(m.id for m in query.search_sync()) == ["new1", "new2"]
        _wait_for_copy(vs, rows=2)


_RECREATE_WIDER = """
import sys
from turnkit.batteries.vector import create_vector_store
vs = create_vector_store(uri=sys.argv[1], auto_optimize=None, memory_cache=None)
vs.drop_collection_sync("c")
for n in (1, 2):
    vs("c").upsert_sync([{"id": f"wide{n}", "vector": [1.0, 0.0, float(n), 0.0, 1.0]}])
"""


def test_a_table_recreated_elsewhere_with_another_dimension_is_reopened_with_it(tmp_path: Any) -> None:
    """The copy is not read with the old dimension (a numpy reshape error): the collection is reopened,
    so the 3-d query is a dimension mismatch, and a 5-d one finds the new rows."""
    from turnkit.batteries.vector import VectorStoreUsageError

    uri = str(tmp_path / "db")
    vs = _reader_of_two_records(uri, "inline")
    query = vs("c").near_vector([1.0, 0.0, 1.0]).select("id")
    assert sorted(m.id for m in query.search_sync()) == ["old1", "old2"]
    subprocess.run([sys.executable, "-c", _RECREATE_WIDER, uri], check=True, timeout=120)
    with pytest.raises(VectorStoreUsageError) as raised:
        query.search_sync()
    assert raised.value.code == "E_VECTOR_STORE_DIMENSION_MISMATCH" and raised.value.expected == 5
    wide = vs("c").near_vector([1.0, 0.0, 1.0, 0.0, 1.0]).select("id").search_sync()
    assert sorted(m.id for m in wide) == ["wide1", "wide2"]


@pytest.mark.parametrize(
    ("consistency", "code"),
    [(None, "E_VECTOR_STORE_SEARCH_FAILED"), (timedelta(0), "E_VECTOR_STORE_COLLECTION_NOT_FOUND")],
)
def test_a_table_removed_underneath_raises_turnkits_error(tmp_path: Any, consistency: Any, code: str) -> None:
    """Without looks the pinned handle fails to read; with them the look finds the table gone."""
    import shutil

    from turnkit import TurnkitError

    uri = str(tmp_path / "db")
    vs = create_vector_store(uri=uri, auto_optimize=None, read_consistency_interval=consistency)
    vs("c").upsert_sync([{"id": "a", "vector": [1.0, 0.0]}])
    query = vs("c").near_vector([1.0, 0.0]).select("id")
    assert [m.id for m in query.search_sync()] == ["a"]
    vs("c").upsert_sync([{"id": "b", "vector": [0.0, 1.0]}])  # the copy must be read again
    shutil.rmtree(tmp_path / "db" / "c.lance")
    for _ in range(2):
        with pytest.raises(TurnkitError) as raised:
            query.search_sync()
        assert raised.value.code == code


def _wait_for_copy(vs: Any, *, rows: int | None = None) -> None:
    """Until the store holds a copy of ``c`` (with ``rows`` rows, if given): read in the background."""
    deadline = time.monotonic() + 60  # a guard against a hang, not a timing claim
    while not any(c.name == "c" and rows in (None, c.rows) for c in vs.cache_stats().collections):
        assert time.monotonic() < deadline, vs.cache_stats()
        time.sleep(0.01)


def test_a_search_after_a_write_sees_it_and_the_copy_is_read_again_off_its_path(tmp_path: Any) -> None:
    """refresh="background": the first search after a write is LanceDB's (with the write), and the new
    copy answers the next searches once it is read; inline, the search reads it before answering."""
    uri = str(tmp_path / "db")
    assert MemoryCache().refresh == "background"  # the default store's
    background = create_vector_store(uri=uri, auto_optimize=None)
    background("c").upsert_sync([{"id": f"r{i}", "vector": [1.0, float(i), 0.0]} for i in range(5)])
    query = background("c").near_vector([0.0, 0.0, 1.0]).select("id").limit(1)
    assert [m.id for m in query.search_sync()] == ["r0"]
    assert background.cache_stats().collections[0].rows == 5  # the first search reads inline
    background("c").upsert_sync([{"id": "new", "vector": [0.0, 0.0, 1.0]}])
    assert [m.id for m in query.search_sync()] == ["new"]  # LanceDB's answer, never the stale copy's
    _wait_for_copy(background, rows=6)
    assert [m.id for m in query.search_sync()] == ["new"]

    inline = create_vector_store(uri=uri, auto_optimize=None, memory_cache=MemoryCache(refresh="inline"))
    inline_query = inline("c").near_vector([0.0, 0.0, 1.0]).select("id").limit(1)
    assert [m.id for m in inline_query.search_sync()] == ["new"]
    inline("c").upsert_sync([{"id": "newer", "vector": [0.0, 0.1, 1.0]}])
    assert inline.cache_stats().collections[0].rows == 6
    inline_query.search_sync()
    assert inline.cache_stats().collections[0].rows == 7  # read again before it answered


def test_the_default_budget_is_a_quarter_of_the_memory_the_process_may_use(tmp_path: Any) -> None:
    """The lowest limit of the process's own cgroup and those above it (v2), or v1's, or the RAM."""
    ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")

    def usable(files: dict[str, str], own: str = "") -> int | None:
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)
        (root / "own").parent.mkdir(parents=True, exist_ok=True)
        (root / "own").write_text(own)
        return usable_memory(str(root), str(root / "own"))

    assert usable({"memory.max": "1073741824\n"}) == min(ram, 2**30)
    nested = {"a/b/memory.max": "max\n", "a/memory.max": "536870912\n", "memory.max": "max\n"}
    assert usable(nested, "0::/a/b\n") == min(ram, 2**29)  # the group above the process's own
    assert usable({"a/b/memory.max": "268435456\n"}, "12:cpu:/x\n0::/a/b\n") == min(ram, 2**28)
    assert usable({"memory/memory.limit_in_bytes": "536870912\n"}) == min(ram, 2**29)  # v1
    for unknown in ("max\n", "0\n", "", "garbage"):
        assert usable({"memory.max": unknown}) == ram
    assert usable({}) == ram
    assert 0 < usable_memory() <= ram  # type: ignore[operator]
    assert MemoryCache().max_bytes == default_budget() == usable_memory() // 4  # type: ignore[operator]
    assert MemoryCache(max_bytes=123).max_bytes == 123


def test_refresh_must_be_background_or_inline() -> None:
    with pytest.raises(VectorStoreUsageError) as caught:
        MemoryCache(refresh="sometimes")  # type: ignore[arg-type]
    assert caught.value.code == "E_INVALID_VECTOR_STORE_CONFIG" and "inline" in caught.value.hint


def test_near_vector_keeps_a_read_only_float32_array() -> None:
    vs = create_vector_store(uri="memory://", auto_optimize=None)
    source = np.arange(4, dtype=np.float64)
    near = vs("c").near_vector(source).spec.near
    source[0] = 99.0  # the spec holds its own copy
    assert near.vector.dtype == np.float32 and not near.vector.flags.writeable
    assert near.vector.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert vs("c").near_vector([0, 1, 2, 3]).spec == vs("c").near_vector(near.vector).spec
    assert vs("c").near_vector(source).spec.to_dict()["near"] == {
        "vector": [99.0, 1.0, 2.0, 3.0],
        "dimension": 4,
    }
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs("c").near_vector([1e300, 0.0])
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"


def test_cached_masks_tell_true_from_1_and_false_from_0(tmp_path: Any) -> None:
    # True == 1 and False == 0 == -0.0 in Python, with equal hashes: equal filter nodes, different filters.
    vs = create_vector_store(uri=str(tmp_path / "db"), auto_optimize=None)
    values: list[Any] = [True, 1, False, 0, -0.0, 1.0]
    vs("c").upsert_sync(
        [{"id": f"r{i}", "vector": [1.0, i], "metadata": {"v": v}} for i, v in enumerate(values)]
    )
    for literal in values:
        node = condition("metadata.v", "eq", literal)
        got = {m.id for m in vs("c").near_vector([1.0, 0.0]).where(node).select("id").limit(10).search_sync()}
        want = {f"r{i}" for i, v in enumerate(values) if evaluate(node, {"metadata": {"v": v}})}
        assert got == want, literal


_EXIT_AFTER_A_WRITE = """
import atexit, sys
import numpy as np
from turnkit.batteries.vector import create_vector_store
vs = create_vector_store(uri=sys.argv[1], auto_optimize=None)
rng = np.random.default_rng(0)
vs("c").upsert_sync([{"id": f"r{i}", "vector": rng.normal(size=64)} for i in range(20_000)])
query = vs("c").near_vector(rng.normal(size=64)).select("id").limit(3)
query.search_sync()
vs("c").upsert_sync([{"id": "new", "vector": rng.normal(size=64)}])
query.search_sync()  # answered by LanceDB; the copy is read again in the background
# atexit runs after threading's exit hooks, where the store waits for that read to end
atexit.register(lambda: print("rows at exit", [c.rows for c in vs.cache_stats().collections], flush=True))
"""


def test_the_interpreter_exits_cleanly_while_a_copy_is_read_in_the_background(tmp_path: Any) -> None:
    """Exit waits for the read (a LanceDB read in flight while the runtime finalizes aborts the process)."""
    out = subprocess.run(
        [sys.executable, "-c", _EXIT_AFTER_A_WRITE, str(tmp_path / "db")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Traceback" not in out.stderr and "failed" not in out.stderr, out.stderr[-2000:]
    assert "rows at exit [20001]" in out.stdout


@pytest.mark.parametrize("cache", [None, MemoryCache(refresh="inline"), MemoryCache()])
def test_concurrent_searches_after_another_stores_write_all_see_it(tmp_path: Any, cache: Any) -> None:
    """Store B writes; eight searches of store A at once must all see the write, and keep seeing it.

    The first of them moves A's handle to the latest version; the others wait for that rather
    than read the old version under the new version's number (which the in-memory copy is keyed by).
    """
    import asyncio

    async def rounds() -> None:
        uri = str(tmp_path / "db")
        a = create_vector_store(uri=uri, auto_optimize=None, memory_cache=cache)
        b = create_vector_store(uri=uri, auto_optimize=None, memory_cache=None)
        await b("c").upsert([{"id": f"x{i}", "vector": [1.0, float(i), 0.0]} for i in range(20)])

        async def top() -> str:
            return (await a("c").near_vector([0.0, 0.0, 1.0]).select("id").limit(1).search())[0].id

        await top()
        for turn in range(30):
            await b("c").upsert([{"id": f"n{turn}", "vector": [0.0, 0.0, 1.0 + turn]}])
            if turn:
                await b("c").where("id", f"n{turn - 1}").delete()
            assert await asyncio.gather(*[top() for _ in range(8)]) == [f"n{turn}"] * 8
            assert await top() == f"n{turn}"

    asyncio.run(rounds())


def test_a_copy_over_the_budget_by_itself_leaves_lancedb_to_answer_at_its_version() -> None:
    """Rows fuller than `MemoryCache.fits` supposes (about 1 KiB of text each): the copy read is
    over `max_bytes` alone, so LanceDB answers at this version instead of a read every search."""
    vs = create_vector_store(uri="memory://", auto_optimize=None, memory_cache=MemoryCache(max_bytes=200_000))
    rows = [{"id": f"r{i}", "vector": [1.0, float(i), 0.0], "document": "x" * 20_000} for i in range(40)]
    vs("c").upsert_sync(rows)
    assert MemoryCache(max_bytes=200_000).fits(40, 3)  # the estimate admits it
    query = vs("c").near_vector([1.0, 0.0, 0.0]).select("id").limit(2)
    for _ in range(2):
        assert [m.id for m in query.search_sync()] == ["r0", "r1"]
        assert vs.cache_stats().collections == ()
        assert "c" in vs._memory._too_big  # remembered for this version: not read again
    vs("c").upsert_sync([{"id": "r0", "vector": [1.0, 0.0, 0.0], "document": "short"}])
    assert [m.id for m in query.search_sync()] == ["r0", "r1"]
