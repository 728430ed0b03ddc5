"""The per-query shortcuts give what the code they replace gives, to the bit."""

from __future__ import annotations

import dataclasses
from datetime import UTC
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import VectorMatch, create_vector_store
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store._bulk_matches import _match, _scores, scores_from_distances

_distances = st.lists(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.0, -0.0, 2.0, 1e-300, -1e-300, 4.0]),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(metric=st.sampled_from(["cosine", "dot", "l2"]), values=_distances, single=st.booleans())
def test_python_scores_are_numpys_bit_for_bit(metric: Any, values: list[float], single: bool) -> None:
    with np.errstate(over="ignore"):  # beyond float32's range becomes inf, as LanceDB's would
        array = np.array(values, dtype=np.float32 if single else np.float64)
    fast = _scores(metric, array.astype(np.float64).tolist())
    assert (
        np.array(fast, dtype=np.float64).tobytes()
        == np.array(scores_from_distances(metric, array), dtype=np.float64).tobytes()
    )


_values = {
    "near": st.none(),
    "filter": st.none(),
    "select": st.none() | st.tuples(st.sampled_from(["id", "document", "metadata"])),
    "limit": st.integers(1, 100),
    "offset": st.integers(0, 10),
    "min_score": st.none() | st.floats(0, 1),
    "max_distance": st.none() | st.floats(0, 2),
    "nprobes": st.none() | st.integers(1, 64),
    "refine_factor": st.none() | st.integers(1, 10),
    "ef": st.none() | st.integers(10, 4096),
    "prefilter": st.booleans(),
}


@settings(max_examples=100, deadline=None)
@given(changes=st.fixed_dictionaries({}, optional=_values))
def test_a_builder_step_makes_the_spec_dataclasses_replace_makes(changes: dict[str, Any]) -> None:
    vs = create_vector_store(uri="memory://")
    builder = vs("c").limit(7).where("metadata.kind", "note")
    assert builder._with(**changes).spec == dataclasses.replace(builder.spec, **changes)
    assert builder.spec.limit == 7  # the builder it came from is unchanged


def test_a_builder_step_refuses_a_field_the_spec_does_not_have() -> None:
    builder = create_vector_store(uri="memory://")("c")
    with pytest.raises(TypeError, match="limt"):
        builder._with(limt=3)
    assert [f.name for f in dataclasses.fields(QuerySpec)][0] == "collection"
    # The copy skips __init__: a check added there later would be skipped too, so there is none.
    assert not hasattr(QuerySpec, "__post_init__")


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.sampled_from([2**64 - 1, 2**64, -(2**63), -(2**63) - 1]),  # the 64-bit edges
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=6),
    st.sampled_from(["\ud800", "caf\u00e9", "\udfff x"]),  # lone surrogates, and plain non-ASCII
)
_json_like = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=4) | st.sampled_from(["\ud800"]), inner, max_size=4),
        st.dictionaries(st.integers(0, 3), inner, min_size=1, max_size=2),  # non-string keys
    ),
    max_leaves=20,
)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = {"k": value} if level % 2 else [value]
    return value


@settings(max_examples=400, deadline=None)
@given(metadata=_json_like, deep=st.sampled_from([0, 62, 63, 64, 65]))
def test_the_quick_metadata_check_agrees_with_the_walk_that_names_the_problem(
    metadata: Any, deep: int
) -> None:
    """A record the quick check passes is one the full walk passes, and the other way round."""
    from turnkit.batteries.vector.store._records import _json_clean, _json_problem

    value = {"m": metadata, "deep": _nested(deep)} if deep else metadata
    assert _json_clean(value, 0) == (_json_problem(value) is None)


_anything = st.none() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)


@settings(max_examples=200, deadline=None)
@given(
    rid=st.text(max_size=8),
    values=st.tuples(*[_anything] * 3),
    metadata=st.none() | st.dictionaries(st.text(max_size=3), _anything, max_size=3),
    vector=st.none() | st.lists(st.floats(allow_nan=False), max_size=4),
    stamps=st.tuples(*[st.none() | st.datetimes(timezones=st.just(UTC))] * 2),
)
def test_a_match_built_from_columns_is_the_one_the_dataclass_builds(
    rid: str, values: tuple[Any, Any, Any], metadata: Any, vector: Any, stamps: tuple[Any, Any]
) -> None:
    score, distance, document = values
    fast = _match(rid, score, distance, document, metadata, vector, *stamps)
    slow = VectorMatch(rid, score, distance, document, metadata, vector, *stamps)
    assert type(fast) is VectorMatch
    assert fast == slow and repr(fast) == repr(slow)
    assert [getattr(fast, f.name) for f in dataclasses.fields(VectorMatch)] == [
        getattr(slow, f.name) for f in dataclasses.fields(VectorMatch)
    ]
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.id = "other"  # type: ignore[misc]
    assert dataclasses.replace(fast, score=0.5) == dataclasses.replace(slow, score=0.5)
