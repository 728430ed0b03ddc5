"""The per-query shortcuts give what the code they replace gives, to the bit."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import create_vector_store
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store._bulk_matches import _scores, scores_from_distances

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
    assert np.array(fast, dtype=np.float64).tobytes() == np.array(
        scores_from_distances(metric, array), dtype=np.float64
    ).tobytes()


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
