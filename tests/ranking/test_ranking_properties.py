"""Invariants of fusion, MMR and weight validation, by property."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    InvalidRankingConfigError,
    LinearFusion,
    RerankOptions,
    RerankWeights,
    RRFFusion,
)
from turnkit.batteries.vector.ranking._mmr import mmr_select
from turnkit.batteries.vector.ranking._rerank_options import DEFAULT_RERANK_WEIGHTS

ids = st.lists(st.sampled_from([f"d{i}" for i in range(12)]), max_size=12, unique=True)
alphas = st.floats(min_value=0.0, max_value=1.0)
unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def _ranked(ids: list[str]) -> list[tuple[str, float]]:
    """A leg as RRF reads it: only the order counts."""
    return [(d, 0.0) for d in ids]


@given(ids, ids, alphas, st.integers(min_value=1, max_value=200))
def test_rrf_scores_are_in_unit_range_sorted_and_cover_the_weighted_legs(dense, lexical, alpha, k) -> None:
    fused = RRFFusion(alpha, k=k).fuse(_ranked(dense), _ranked(lexical))
    scores = [s for _, s in fused]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    expected = (set(dense) if alpha > 0 else set()) | (set(lexical) if alpha < 1 else set())
    assert {d for d, _ in fused} == expected
    assert len(fused) == len(expected)


@given(ids, ids, st.integers(min_value=1, max_value=200))
def test_rrf_at_the_extremes_is_one_legs_order(dense, lexical, k) -> None:
    assert [d for d, _ in RRFFusion(1.0, k=k).fuse(_ranked(dense), _ranked(lexical))] == dense
    assert [d for d, _ in RRFFusion(0.0, k=k).fuse(_ranked(dense), _ranked(lexical))] == lexical


@given(ids.filter(bool), alphas)
def test_rrf_first_in_both_legs_scores_one(dense, alpha) -> None:
    fused = RRFFusion(alpha).fuse(_ranked(dense), _ranked(list(dense)))
    assert fused[0][0] == dense[0]
    assert math.isclose(fused[0][1], 1.0)


@given(ids.filter(lambda xs: len(xs) >= 2), alphas.filter(lambda a: a > 0))
def test_rrf_promoting_a_document_in_a_leg_never_lowers_its_score(dense, alpha) -> None:
    lexical = list(reversed(dense))
    target = dense[-1]
    before = dict(RRFFusion(alpha).fuse(_ranked(dense), _ranked(lexical)))[target]
    promoted = [target, *[d for d in dense if d != target]]
    after = dict(RRFFusion(alpha).fuse(_ranked(promoted), _ranked(lexical)))[target]
    assert after >= before


scored = st.lists(st.tuples(st.sampled_from([f"d{i}" for i in range(10)]), unit), max_size=10)


@given(
    scored,
    st.lists(st.tuples(st.sampled_from([f"d{i}" for i in range(10)]), st.floats(0, 50)), max_size=10),
    alphas,
)
def test_linear_scores_in_unit_range_and_sorted(dense, lexical, alpha) -> None:
    fused = LinearFusion(alpha).fuse(dense, lexical)
    scores = [s for _, s in fused]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert len({d for d, _ in fused}) == len(fused)


def test_linear_alpha_means_what_vertex_says() -> None:
    dense = [("a", 0.9), ("b", 0.5)]
    lexical = [("b", 12.0), ("a", 1.0)]
    assert [d for d, _ in LinearFusion(1.0).fuse(dense, lexical)] == ["a", "b"]
    assert [d for d, _ in LinearFusion(0.0).fuse(dense, lexical)] == ["b", "a"]


vectors = st.integers(min_value=1, max_value=12).flatmap(
    lambda n: st.tuples(
        st.lists(unit, min_size=n, max_size=n),
        st.lists(st.lists(st.floats(-1, 1), min_size=4, max_size=4), min_size=n, max_size=n),
    )
)


@settings(max_examples=60)
@given(vectors, st.integers(min_value=0, max_value=15), alphas)
def test_mmr_picks_distinct_indices_starting_with_the_most_relevant(data, k, lam) -> None:
    relevance, rows = data
    picked = mmr_select(relevance, np.array(rows), k, lambda_mult=lam)
    assert len(picked) == min(k, len(relevance))
    assert len(set(picked)) == len(picked)
    if picked:
        assert picked[0] == int(np.argmax(relevance))


@given(vectors)
def test_mmr_with_lambda_one_is_the_relevance_order(data) -> None:
    relevance, rows = data
    picked = mmr_select(relevance, np.array(rows), len(relevance), lambda_mult=1.0)
    assert picked == sorted(range(len(relevance)), key=lambda i: (-relevance[i], i))


def test_mmr_spreads_near_duplicates() -> None:
    rows = np.array([[1, 0], [1, 0.01], [0, 1]])
    assert mmr_select([0.9, 0.89, 0.6], rows, 2, lambda_mult=0.5) == [0, 2]
    assert mmr_select([0.9, 0.89, 0.6], rows, 2, lambda_mult=1.0) == [0, 1]


@given(st.floats(-0.5, 1.5), st.floats(-0.5, 1.5), st.floats(-0.5, 1.5))
def test_weights_are_valid_exactly_when_each_is_in_range_and_they_sum_to_one(s, v, p) -> None:
    ok = all(0 <= w <= 1 for w in (s, v, p)) and math.isclose(s + v + p, 1.0, abs_tol=1e-9)
    if ok:
        assert RerankWeights(semantic=s, vector=v, position=p).semantic == s
    else:
        with pytest.raises(InvalidRankingConfigError) as info:
            RerankWeights(semantic=s, vector=v, position=p)
        assert info.value.code == "E_VECTOR_RANKING_INVALID_CONFIG"


@given(st.integers(0, 10), st.integers(0, 10))
def test_weights_summing_to_one_in_float_are_accepted(a, b) -> None:
    if a + b > 10:
        return
    w = RerankWeights(semantic=a / 10, vector=b / 10, position=(10 - a - b) / 10)
    assert math.isclose(w.semantic + w.vector + w.position, 1.0)


def test_weights_are_never_merged_with_defaults() -> None:
    with pytest.raises(InvalidRankingConfigError, match="missing \\['position'\\]. Weights are never merged"):
        RerankOptions(weights={"semantic": 0.5, "vector": 0.5})
    with pytest.raises(InvalidRankingConfigError, match="'weights': 'magnitude' is not a field"):
        RerankOptions(weights={"semantic": 0.4, "vector": 0.4, "position": 0.2, "magnitude": 0})
    with pytest.raises(InvalidRankingConfigError, match="missing \\['position'\\]"):
        RerankWeights(semantic=0.8, vector=0.2)  # type: ignore[call-arg]
    assert RerankOptions().weights == DEFAULT_RERANK_WEIGHTS
    assert RerankOptions(weights={"semantic": 0.7, "vector": 0.2, "position": 0.1}).weights.semantic == 0.7


@given(st.integers(1, 50), st.integers(1, 20), st.integers(1, 500))
def test_pool_over_fetches_within_bounds(top_k, factor, max_pool) -> None:
    pool = RerankOptions(top_k=top_k, pool_factor=factor, max_pool=max_pool).pool()
    assert pool >= top_k
    assert pool <= max(top_k, max_pool)
    assert pool == max(top_k, min(max_pool, top_k * factor))
