"""The LlamaIndex vector store against LlamaIndex's own ``SimpleVectorStore``: same nodes, same answers.

Both stores hold the same nodes with the same embeddings; every query (filters,
top-k, node ids) must give the same ids in the same order. Filters are drawn by
hypothesis over every operator the reference evaluates; the operators and
values turnkit refuses are checked to raise a stable code. Nested groups, which
the reference refuses, are held to its leaf and condition semantics composed.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
)
from llama_index.core.vector_stores.utils import build_metadata_filter_fn

from turnkit.batteries.vector import (
    InvalidFilterError,
    UnknownFieldError,
    create_vector_store,
)
from turnkit.integrations.llamaindex import TurnkitVectorStore

# Stored values per key, one type family each, so the reference never raises TypeError
# on them for the operators drawn below (see test_type_mismatch_is_no_match for the rest).
_NUM = [1, 2, 2.0, 3.5, -4, 10, None]
_TXT = ["cat", "Cat", "concat", "", "50%_off", "a\\b", "dog", "é", None]
_TAGS = [["a"], ["a", "b"], ["b", "c"], [], ["c"], None]
_MIX = [1, "1", "a", ["a"], 2.5, None]
_KEYS = ("num", "txt", "tags", "mix")
_ANGLES = [15.0 * i for i in range(12)]  # distinct directions: no similarity ties
_QUERIES = [7.0, 52.0, 101.0, 148.0]  # never equidistant from two nodes


def _unit(degrees: float) -> list[float]:
    return [math.cos(math.radians(degrees)), math.sin(math.radians(degrees))]


def _nodes() -> list[TextNode]:
    nodes = []
    for i, angle in enumerate(_ANGLES):
        metadata: dict[str, Any] = {}
        for k, (key, pool) in enumerate(zip(_KEYS, (_NUM, _TXT, _TAGS, _MIX), strict=True)):
            pick = (i * (k + 3) + k) % (len(pool) + 1)
            if pick < len(pool):  # else the key is missing
                metadata[key] = pool[pick]
        node = TextNode(id_=f"n{i:02d}", text=f"node {i}", metadata=metadata, embedding=_unit(angle))
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc{i % 3}")
        nodes.append(node)
    return nodes


@pytest.fixture(scope="module")
def stores() -> Iterator[tuple[SimpleVectorStore, TurnkitVectorStore]]:
    reference = SimpleVectorStore()
    reference.add(_nodes())
    ours = TurnkitVectorStore(create_vector_store(uri="memory://"), collection="ref")
    ours.add(_nodes())
    yield reference, ours


def _query(filters: MetadataFilters | None, angle: float = 7.0, k: int = 12, **kw: Any) -> VectorStoreQuery:
    return VectorStoreQuery(query_embedding=_unit(angle), similarity_top_k=k, filters=filters, **kw)


def _leaf_matches(leaf: MetadataFilter, metadata: dict[str, Any]) -> bool:
    return build_metadata_filter_fn(lambda _: metadata, MetadataFilters(filters=[leaf]))("x")


def _reference_matches(filters: MetadataFilters, metadata: dict[str, Any]) -> bool:
    """LlamaIndex's leaf and condition semantics, applied recursively (the reference refuses nesting)."""
    if not filters.filters:
        return True
    hits = [
        _reference_matches(f, metadata) if isinstance(f, MetadataFilters) else _leaf_matches(f, metadata)
        for f in filters.filters
    ]
    if filters.condition == FilterCondition.OR:
        return any(hits)
    if filters.condition == FilterCondition.NOT:
        return not any(hits)
    return all(hits)


# -- the filters hypothesis draws: (key, operator, value) combinations the reference evaluates -------------
_scalar = st.sampled_from([1, 2, 2.0, 3.5, -4, 0, "1", "a", "cat", "Cat", "", "zzz"])


def _homogeneous_list() -> st.SearchStrategy[list[Any]]:
    return st.one_of(
        st.lists(st.sampled_from([1, 2, 2.5, -4, 10]), max_size=3),
        st.lists(st.sampled_from(["a", "b", "1", "cat", "", "dog"]), max_size=3),
    )


def _leaf() -> st.SearchStrategy[MetadataFilter]:
    any_key = st.sampled_from([*_KEYS, "absent"])
    order_ops = st.sampled_from(
        [FilterOperator.GT, FilterOperator.GTE, FilterOperator.LT, FilterOperator.LTE]
    )
    return st.one_of(
        st.builds(
            lambda k, op, v: MetadataFilter(key=k, operator=op, value=v),
            any_key,
            st.sampled_from([FilterOperator.EQ, FilterOperator.NE]),
            _scalar,
        ),
        st.builds(
            lambda k, op, v: MetadataFilter(key=k, operator=op, value=v),
            any_key,
            st.sampled_from([FilterOperator.IN, FilterOperator.NIN]),
            _homogeneous_list(),
        ),
        st.builds(
            lambda op, v: MetadataFilter(key="num", operator=op, value=v),
            order_ops,
            st.sampled_from([-5, 1, 2, 2.5, 3.5, 10]),
        ),
        st.builds(
            lambda op, v: MetadataFilter(key="txt", operator=op, value=v),
            order_ops,
            st.sampled_from(["", "C", "cat", "d", "z"]),
        ),
        st.builds(
            lambda k, v: MetadataFilter(key=k, operator=FilterOperator.TEXT_MATCH, value=v),
            st.just("txt"),
            st.sampled_from(["at", "C", "%", "_", "\\", "", "%_", "x"]),
        ),
        st.builds(
            lambda k, v: MetadataFilter(key=k, operator=FilterOperator.CONTAINS, value=v),
            st.sampled_from(["txt", "tags"]),
            st.sampled_from(["a", "at", "b", "c", ""]),
        ),
        st.builds(  # a number is an element of a list (a string would make the reference raise)
            lambda v: MetadataFilter(key="tags", operator=FilterOperator.CONTAINS, value=v),
            st.sampled_from([1, -4]),
        ),
        st.builds(
            lambda k, op, v: MetadataFilter(key=k, operator=op, value=v),
            st.sampled_from(["txt", "tags"]),
            st.sampled_from([FilterOperator.ANY, FilterOperator.ALL]),
            st.lists(st.sampled_from(["a", "b", "c", "at"]), max_size=3),
        ),
        st.builds(lambda k: MetadataFilter(key=k, operator=FilterOperator.IS_EMPTY, value=None), any_key),
    )


_conditions = st.sampled_from([FilterCondition.AND, FilterCondition.OR, FilterCondition.NOT])
_flat = st.builds(
    lambda fs, c: MetadataFilters(filters=fs, condition=c), st.lists(_leaf(), max_size=3), _conditions
)
_nested = st.recursive(
    _flat,
    lambda inner: st.builds(
        lambda fs, c: MetadataFilters(filters=fs, condition=c),
        st.lists(st.one_of(_leaf(), inner), max_size=3),
        _conditions,
    ),
    max_leaves=6,
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(filters=_flat, angle=st.sampled_from(_QUERIES), k=st.integers(1, 12))
def test_flat_filters_give_the_references_ids_in_its_order(
    stores: tuple[SimpleVectorStore, TurnkitVectorStore], filters: MetadataFilters, angle: float, k: int
) -> None:
    reference, ours = stores
    expected = reference.query(_query(filters, angle, k))
    got = ours.query(_query(filters, angle, k))
    assert got.ids == expected.ids
    assert [n.node_id for n in got.nodes or []] == got.ids
    # Scores differ in scale ((1 + cosine) / 2) but not in order.
    for ours_s, ref_s in zip(got.similarities or [], expected.similarities or [], strict=True):
        assert ours_s == pytest.approx((1 + ref_s) / 2, abs=1e-5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(filters=_nested)
def test_nested_filters_compose_the_references_semantics(
    stores: tuple[SimpleVectorStore, TurnkitVectorStore], filters: MetadataFilters
) -> None:
    reference, ours = stores
    everything = reference.query(_query(None))
    expected = [
        i for i in everything.ids or [] if _reference_matches(filters, reference.data.metadata_dict[i])
    ]
    assert ours.query(_query(filters)).ids == expected


def test_every_operator_matches_the_reference_or_is_refused(
    stores: tuple[SimpleVectorStore, TurnkitVectorStore],
) -> None:
    reference, ours = stores
    examples: dict[FilterOperator, tuple[str, Any]] = {
        FilterOperator.EQ: ("num", 2),
        FilterOperator.NE: ("txt", "cat"),
        FilterOperator.GT: ("num", 1),
        FilterOperator.GTE: ("num", 2),
        FilterOperator.LT: ("txt", "cat"),
        FilterOperator.LTE: ("num", 3.5),
        FilterOperator.IN: ("mix", ["a", "1"]),
        FilterOperator.NIN: ("num", [1, 10]),
        FilterOperator.ANY: ("tags", ["a", "c"]),
        FilterOperator.ALL: ("tags", ["a", "b"]),
        FilterOperator.TEXT_MATCH: ("txt", "at"),
        FilterOperator.CONTAINS: ("tags", "b"),
        FilterOperator.IS_EMPTY: ("tags", None),
    }
    for op in FilterOperator:
        filters = MetadataFilters(filters=[MetadataFilter(key="txt", operator=op, value="cat")])
        if op == FilterOperator.TEXT_MATCH_INSENSITIVE:
            with pytest.raises(InvalidFilterError) as refused:
                ours.query(_query(filters))
            assert refused.value.code == "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR"
            assert "lower-cased" in (refused.value.hint or "")
            continue
        key, value = examples[op]
        filters = MetadataFilters(filters=[MetadataFilter(key=key, operator=op, value=value)])
        expected = reference.query(_query(filters)).ids
        assert expected, op  # each example selects something
        assert ours.query(_query(filters)).ids == expected, op


@pytest.mark.parametrize(
    ("op", "value", "error"),
    [
        (
            FilterOperator.IN,
            "a",
            InvalidFilterError,
        ),  # the reference would test "stored in 'a'" (a substring)
        (FilterOperator.NIN, None, InvalidFilterError),
        (FilterOperator.ANY, "ab", InvalidFilterError),  # the reference would iterate the characters
        (FilterOperator.ALL, 1, InvalidFilterError),
        (FilterOperator.CONTAINS, ["a"], InvalidFilterError),
        (FilterOperator.CONTAINS, 1.5, InvalidFilterError),  # LanceDB cannot find fractions in arrays
        (FilterOperator.TEXT_MATCH, 1, InvalidFilterError),
        (FilterOperator.GT, None, InvalidFilterError),
        (FilterOperator.EQ, ["a"], InvalidFilterError),
    ],
)
def test_values_an_operator_cannot_take_are_refused_with_a_code(
    stores: tuple[SimpleVectorStore, TurnkitVectorStore],
    op: FilterOperator,
    value: Any,
    error: type[Exception],
) -> None:
    _, ours = stores
    filters = MetadataFilters(filters=[MetadataFilter(key="tags", operator=op, value=value)])
    with pytest.raises(error) as refused:
        ours.query(_query(filters))
    assert refused.value.code.startswith("E_")  # type: ignore[attr-defined]
    assert refused.value.hint  # type: ignore[attr-defined]


def test_keys_turnkit_cannot_address_are_refused(
    stores: tuple[SimpleVectorStore, TurnkitVectorStore],
) -> None:
    _, ours = stores
    for key in ("a.b", "two words"):
        with pytest.raises(UnknownFieldError):
            ours.query(_query(MetadataFilters(filters=[MetadataFilter(key=key, value=1)])))


def test_type_mismatch_is_no_match_where_the_reference_raises(
    stores: tuple[SimpleVectorStore, TurnkitVectorStore],
) -> None:
    reference, ours = stores
    for op, key, value in [
        (FilterOperator.GT, "mix", 0),  # str > int
        (FilterOperator.TEXT_MATCH, "mix", "a"),  # on a number
        (FilterOperator.CONTAINS, "num", 1),  # int is not a container
    ]:
        filters = MetadataFilters(filters=[MetadataFilter(key=key, operator=op, value=value)])
        with pytest.raises(TypeError):
            reference.query(_query(filters))
        metadata = reference.data.metadata_dict
        # turnkit: the records whose value has the comparable type still match; the others do not.
        got = set(ours.query(_query(filters)).ids or [])
        for node_id in got:
            stored = metadata[node_id].get(key)
            assert _leaf_matches(filters.filters[0], {key: stored})  # type: ignore[arg-type]


def test_node_ids_and_doc_ids(stores: tuple[SimpleVectorStore, TurnkitVectorStore]) -> None:
    reference, ours = stores
    allowed = ["n03", "n05", "n08"]
    filters = MetadataFilters(filters=[MetadataFilter(key="num", operator=FilterOperator.NE, value=1)])
    assert (
        ours.query(_query(filters, node_ids=allowed)).ids
        == reference.query(_query(filters, node_ids=allowed)).ids
    )
    # Differences, on purpose: an empty list is no restriction (VectorStoreIndex.from_vector_store
    # sends node_ids=[]), and doc_ids restrict to those source documents (SimpleVectorStore ignores them).
    assert reference.query(_query(None, node_ids=[])).ids == []
    assert ours.query(_query(None, node_ids=[])).ids == reference.query(_query(None)).ids
    by_doc = ours.query(_query(None, doc_ids=["doc1"])).ids or []
    assert by_doc and all(int(i[1:]) % 3 == 1 for i in by_doc)
    assert by_doc == [i for i in reference.query(_query(None)).ids or [] if int(i[1:]) % 3 == 1]


def test_delete_by_ref_doc_and_delete_nodes_match_the_reference() -> None:
    reference = SimpleVectorStore()
    reference.add(_nodes())
    ours = TurnkitVectorStore(create_vector_store(uri="memory://"), collection="ref")
    ours.add(_nodes())
    for store in (reference, ours):
        store.delete("doc1")
        store.delete_nodes(
            ["n00", "n03", "n04"],
            filters=MetadataFilters(filters=[MetadataFilter(key="num", operator=FilterOperator.NE, value=1)]),
        )
        store.delete_nodes([])  # an empty list deletes nothing
    assert ours.query(_query(None)).ids == reference.query(_query(None)).ids
    for store in (reference, ours):
        store.delete_nodes(
            filters=MetadataFilters(
                filters=[MetadataFilter(key="tags", operator=FilterOperator.IS_EMPTY, value=None)]
            )
        )
    assert ours.query(_query(None)).ids == reference.query(_query(None)).ids
    for store in (reference, ours):
        store.clear()
    assert ours.query(_query(None)).ids == reference.query(_query(None)).ids == []
