"""Small hostile inputs: each is refused with its code, and nothing is written."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit import TurnkitError
from turnkit.batteries.vector import (
    HashEncoder,
    VectorStoreUsageError,
    create_vector_store,
)


def _nested(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"leaf": 1}
    for _ in range(depth):
        node = {"k": node}
    return node


@pytest.fixture
def vs() -> Any:
    store = create_vector_store("memory://", encoder=HashEncoder(16), auto_optimize=None)
    store("c").upsert_sync([{"id": "keep", "document": "kept text"}])
    return store


def test_deep_metadata_is_refused_by_code_not_recursion(vs: Any) -> None:
    with pytest.raises(VectorStoreUsageError) as info:
        vs("c").upsert_sync([{"id": "deep", "document": "x", "metadata": _nested(5000)}])
    assert info.value.code == "E_INVALID_VECTOR_RECORD" and "nested more than 64" in info.value.message
    deep_list: Any = "leaf"
    for _ in range(70):
        deep_list = [deep_list]
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs("c").upsert_sync([{"id": "deep", "document": "x", "metadata": {"l": deep_list}}])
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    # 64 levels are fine; nothing of the refused writes was stored.
    vs("c").upsert_sync([{"id": "ok", "document": "x", "metadata": _nested(60)}])
    assert sorted(m.id for m in vs("c").get_sync(["keep", "deep", "ok"])) == ["keep", "ok"]


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=30,
)


@settings(max_examples=60, deadline=None)
@given(meta=json_like, depth=st.integers(min_value=0, max_value=200))
def test_any_nested_metadata_is_stored_or_refused_with_a_turnkit_error(meta: Any, depth: int) -> None:
    store = create_vector_store("memory://", encoder=HashEncoder(8), auto_optimize=None)
    value: Any = meta
    for _ in range(depth):
        value = [value]
    try:
        store("c").upsert_sync([{"id": "r", "document": "x", "metadata": {"v": value}}])
    except TurnkitError:
        return  # refused by code: fine (deep nesting, NaN, huge integers…)


def test_document_length_is_capped_and_configurable() -> None:
    small = create_vector_store(
        "memory://", encoder=HashEncoder(8), auto_optimize=None, max_document_chars=10
    )
    with pytest.raises(VectorStoreUsageError) as info:
        small("c").upsert_sync([{"id": "a", "document": "x" * 11}])
    assert info.value.code == "E_INVALID_VECTOR_RECORD"
    assert "at most 10" in info.value.message and info.value.context["record_id"] == "a"
    assert not small.has_collection_sync("c")
    small("c").upsert_sync([{"id": "a", "document": "x" * 10}])
    unlimited = create_vector_store("memory://", auto_optimize=None, max_document_chars=None)
    unlimited("c").upsert_sync([{"id": "a", "document": "y" * 2_000_001, "vector": [1.0, 0.0]}])
    with pytest.raises(VectorStoreUsageError) as exc_info:
        create_vector_store("memory://", max_document_chars=0)
    assert exc_info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"
    default = create_vector_store("memory://", auto_optimize=None)
    with pytest.raises(VectorStoreUsageError) as exc_info:
        default("c").upsert_sync([{"id": "a", "document": "z" * 1_000_001, "vector": [1.0, 0.0]}])
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"


@pytest.mark.parametrize("vector", [[0.0] * 16, np.zeros(16, dtype=np.float32)])
def test_an_all_zero_query_vector_under_cosine_is_an_error(vs: Any, vector: Any) -> None:
    with pytest.raises(VectorStoreUsageError) as info:
        vs("c").near_vector(vector).select("id").limit(3).search_sync()
    assert info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    assert "all zeros" in info.value.message


def test_a_float32_overflowing_query_vector_is_an_error() -> None:
    with pytest.raises(VectorStoreUsageError) as exc_info:
        create_vector_store("memory://")("c").near_vector([1e39] + [0.0] * 15)
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"


@pytest.mark.parametrize("vector", [[True, False] * 8, np.ones(16, dtype=bool)])
def test_boolean_vectors_are_refused_for_writes_and_queries(vs: Any, vector: Any) -> None:
    with pytest.raises(VectorStoreUsageError) as info:
        vs("c").upsert_sync([{"id": "b", "vector": vector}])
    assert info.value.code == "E_INVALID_VECTOR_RECORD"
    assert "booleans" in info.value.message
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs("c").near_vector(vector)
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    assert vs("c").get_sync(["b"]) == []


@pytest.mark.parametrize("name", [".", "..", "...", "", "a/b", "x" * 129])
def test_directory_like_collection_names_are_refused(vs: Any, name: str) -> None:
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs(name).upsert_sync([{"id": "a", "document": "x"}])
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_COLLECTION_NAME"
    assert vs.list_collections_sync() == ["c"]
