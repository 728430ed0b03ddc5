"""`update_metadata()`: new metadata on stored records; documents and vectors kept, nothing encoded."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    FunctionEncoder,
    VectorStore,
    VectorStoreUsageError,
    condition,
    create_vector_store,
)

_names = itertools.count()
KEYS = st.sampled_from(["a", "b", "kind", "n", "tags", "é"])
VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)
METADATA = st.dictionaries(KEYS, VALUES, max_size=4)


class Counting:
    """An encoder that counts the texts it encodes (so a test can see that nothing was)."""

    def __init__(self) -> None:
        self.texts = 0

    def __call__(self, texts: list[str], kind: str) -> np.ndarray[Any, Any]:
        self.texts += len(texts)
        return np.array([[1.0, float(len(t)), 0.5] for t in texts], dtype=np.float32)


@pytest.fixture(scope="module")
def counting() -> Counting:
    return Counting()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, counting: Counting) -> VectorStore:
    encoder = FunctionEncoder(counting, name="counting", dimension=3)
    return create_vector_store(
        uri=str(tmp_path_factory.mktemp("upd") / "db"), encoder=encoder, auto_optimize=None
    )


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=st.lists(METADATA, min_size=1, max_size=4), patch=METADATA, merge=st.booleans(), which=st.data())
def test_round_trip_changes_only_the_metadata(
    store: VectorStore,
    counting: Counting,
    old: list[dict[str, Any]],
    patch: dict[str, Any],
    merge: bool,
    which: Any,
) -> None:
    name = f"u{next(_names)}"
    store(name).upsert_sync(
        [{"id": f"r{i}", "document": f"text {i}", "metadata": m} for i, m in enumerate(old)]
    )
    before = {m.id: m for m in store(name).select("*").get_sync()}
    target = which.draw(st.sampled_from(sorted(before)))
    encoded = counting.texts
    assert store(name).update_metadata_sync({target: patch, "missing": {"x": 1}}, merge=merge) == 1
    assert counting.texts == encoded  # nothing was encoded
    after = {m.id: m for m in store(name).select("*").get_sync()}
    assert sorted(after) == sorted(before)  # "missing" was not inserted
    for rid, row in after.items():
        was = before[rid]
        assert (row.document, row.vector, row.created_at) == (was.document, was.vector, was.created_at)
        if rid != target:
            assert row.metadata == was.metadata and row.updated_at == was.updated_at
    want = {**(before[target].metadata or {}), **patch} if merge else patch
    assert after[target].metadata == want
    assert after[target].updated_at is not None and after[target].updated_at >= before[target].updated_at


def test_the_filter_narrows_and_searches_see_the_new_metadata() -> None:
    vs = create_vector_store(uri="memory://", fields={"tenant": str})
    vs("kb").upsert_sync(
        [
            {"id": f"r{i}", "vector": [1.0, float(i)], "metadata": {"tenant": "acme", "n": i, "stage": "new"}}
            for i in range(4)
        ]
    )
    hits = vs("kb").near_vector([1.0, 0.0]).where("metadata.stage", "done").select("id").limit(10)
    assert hits.search_sync() == []  # the in-memory copy is loaded now
    updates = {"r0": {"stage": "done"}, "r1": {"stage": "done"}, "r2": {"stage": "done"}}
    assert vs("kb").where("metadata.n", ">=", 1).update_metadata_sync(updates) == 2
    assert sorted(m.id for m in hits.search_sync()) == ["r1", "r2"]
    # A declared field is a column too: filters on it see the new value.
    assert vs("kb").update_metadata_sync({"r3": {"tenant": "globex"}}) == 1
    assert [m.id for m in vs("kb").where("metadata.tenant", "globex").get_sync()] == ["r3"]
    with pytest.raises(VectorStoreUsageError, match="tenant") as exc_info:
        vs("kb").update_metadata_sync({"r0": {"tenant": 7}})
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    assert vs("kb").get_sync(["r0"])[0].metadata == {
        "tenant": "acme",
        "n": 0,
        "stage": "new",
    }  # outside the filter


def test_a_guard_touches_only_the_rows_it_matches(tmp_path: Path) -> None:
    vs = create_vector_store(uri=str(tmp_path / "db"), fields={"tenant": str})
    acme, globex = condition("metadata.tenant", "eq", "acme"), condition("metadata.tenant", "eq", "globex")
    vs("kb").upsert_sync([{"id": "r1", "vector": [1.0, 0.0], "metadata": {"tenant": "acme"}}], guard=acme)
    vs("kb").upsert_sync([{"id": "r1", "vector": [0.0, 1.0], "metadata": {"tenant": "globex"}}], guard=globex)
    vs("kb").upsert_sync([{"id": "g2", "vector": [0.0, 1.0], "metadata": {"tenant": "globex"}}], guard=globex)

    assert vs("kb").update_metadata_sync({"r1": {"seen": True}, "g2": {"seen": True}}, guard=acme) == 1
    assert vs("kb").where(acme).get_sync(["r1"])[0].metadata == {"tenant": "acme", "seen": True}
    assert vs("kb").where(globex).get_sync(["r1"])[0].metadata == {"tenant": "globex"}
    assert vs("kb").where(globex).get_sync(["g2"])[0].metadata == {"tenant": "globex"}

    with pytest.raises(VectorStoreUsageError, match="outside the write guard") as exc_info:
        vs("kb").update_metadata_sync({"r1": {"tenant": "globex"}}, guard=acme)
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    with pytest.raises(VectorStoreUsageError, match="outside the write guard") as exc_info:
        vs("kb").update_metadata_sync({"r1": {"other": 1}}, merge=False, guard=acme)
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    assert vs("kb").where(acme).get_sync(["r1"])[0].metadata == {"tenant": "acme", "seen": True}
    assert vs.repair_sync("kb") == 0
    assert vs("kb").count_sync() == 3


def test_an_update_without_a_guard_reaches_the_unscoped_record(tmp_path: Path) -> None:
    vs = create_vector_store(uri=str(tmp_path / "db"))
    acme = condition("metadata.tenant", "eq", "acme")
    vs("kb").upsert_sync([{"id": "r1", "vector": [1.0, 0.0], "metadata": {"tenant": "acme"}}], guard=acme)
    vs("kb").upsert_sync([{"id": "op", "vector": [1.0, 1.0], "metadata": {"by": "operator"}}])
    # Ids written behind a guard belong to its scope, as for upsert.
    assert vs("kb").update_metadata_sync({"r1": {"x": 1}, "op": {"x": 1}}) == 1
    assert vs("kb").where(acme).get_sync(["r1"])[0].metadata == {"tenant": "acme"}
    assert vs("kb").get_sync(["op"])[0].metadata == {"by": "operator", "x": 1}


def test_bad_updates_are_refused_before_anything_is_written() -> None:
    vs = create_vector_store(uri="memory://")
    vs("c").upsert_sync([{"id": "a", "vector": [1.0, 0.0], "metadata": {"k": 1}}])
    with pytest.raises(VectorStoreUsageError, match="NaN") as info:
        vs("c").update_metadata_sync({"a": {"k": 2}, "b": {"v": float("nan")}})
    assert info.value.code == "E_INVALID_VECTOR_RECORD"
    assert info.value.context["index"] == 1
    with pytest.raises(VectorStoreUsageError, match="JSON object") as exc_info:
        vs("c").update_metadata_sync({"a": ["not", "a", "dict"]})  # type: ignore[dict-item]
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    with pytest.raises(VectorStoreUsageError, match="mapping of id to metadata") as exc_info:
        vs("c").update_metadata_sync([("a", {"k": 2})])  # type: ignore[arg-type]
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError, match="limit/offset") as exc_info:
        vs("c").limit(3).update_metadata_sync({"a": {"k": 2}})
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    assert vs("c").get_sync(["a"])[0].metadata == {"k": 1}
    assert vs("c").update_metadata_sync({"x" * 5000: {"k": 3}}) == 0


def test_the_async_form() -> None:
    vs = create_vector_store(uri="memory://")
    vs("c").upsert_sync([{"id": "a", "vector": [1.0, 0.0], "metadata": {"k": 1}}])

    async def main() -> int:
        return await vs("c").update_metadata({"a": {"k": 2}})

    assert asyncio.run(main()) == 1
    assert vs("c").get_sync(["a"])[0].metadata == {"k": 2}
