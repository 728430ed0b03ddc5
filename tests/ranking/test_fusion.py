"""The contract every hybrid fusion keeps, by property, and how a `HybridSpec` picks its fusion."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import HybridSpec, LinearFusion, RRFFusion, VectorMatch, ZScoreFusion
from turnkit.batteries.vector.query._ranking_specs import LEXICAL_LEAD_Z
from turnkit.batteries.vector.ranking._fusion import FUSIONS, Fusion, fusion_for

names = st.sampled_from([f"d{i}" for i in range(8)])
# Similarities, BM25 values, and the repeated values that make ties.
score = st.one_of(st.floats(0.0, 1.0), st.floats(0.0, 50.0), st.sampled_from([0.0, 0.5, 1.0, 3.0]))
leg = st.lists(st.tuples(names, score), max_size=12)
alpha = st.one_of(st.sampled_from([0.0, 0.2, 0.5, 1.0]), st.floats(0.0, 1.0))


@st.composite
def fusions(draw: st.DrawFn) -> Fusion:
    a = draw(alpha)
    kind = draw(st.sampled_from(sorted(FUSIONS)))
    if kind == "rrf":
        return RRFFusion(a, k=draw(st.integers(1, 200)))
    if kind == "zscore":
        pool = draw(st.one_of(st.none(), st.integers(1, 15)))
        return ZScoreFusion(a, pool=pool, lead=draw(st.one_of(st.none(), st.floats(-3, 4))))
    return LinearFusion(a)


@settings(max_examples=600, deadline=None)
@given(fusions(), leg, leg)
def test_each_id_once_best_first_in_unit_range_covering_the_weighted_legs(fusion, dense, lexical) -> None:
    fused = fusion.fuse(dense, lexical)
    ids = [d for d, _ in fused]
    scores = [s for _, s in fused]
    assert len(ids) == len(set(ids))
    assert scores == sorted(scores, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in scores)
    expected = ({d for d, _ in dense} if fusion.alpha > 0 else set()) | (
        {d for d, _ in lexical} if fusion.alpha < 1 else set()
    )
    assert set(ids) == expected


@settings(max_examples=300, deadline=None)
@given(fusions(), leg, leg)
def test_matches_are_fused_as_their_ids_and_keep_the_dense_copy(fusion, dense, lexical) -> None:
    dense_matches = [VectorMatch(id=d, score=s, distance=1.0 - s if s <= 1 else 0.0) for d, s in dense]
    lexical_matches = [VectorMatch(id=d, document=f"text of {d}") for d, _ in lexical]
    bm25 = [s for _, s in lexical]
    # A match's own score is what the dense leg reads (its similarity); the lexical leg reads bm25.
    out = fusion.fuse_matches(dense_matches, lexical_matches, bm25)
    assert [(m.id, m.score) for m in out] == fusion.fuse(dense, lexical)
    in_dense = {m.id for m in dense_matches}
    for match in out:
        assert (match.distance is not None) == (match.id in in_dense)  # the dense copy, with its distance


def test_a_spec_names_its_fusion_and_its_options() -> None:
    short, long = "one lookup", " ".join(["word"] * 50)
    assert fusion_for(HybridSpec(fusion="rrf", rrf_k=7, alpha=0.3), short, 30) == RRFFusion(0.3, k=7)
    assert fusion_for(HybridSpec(fusion="linear", alpha=0.6), short, 30) == LinearFusion(0.6)
    # The default: z-score over a pool, alpha from the query's length, and the lead for a short query only.
    assert fusion_for(HybridSpec(), short, 30) == ZScoreFusion(0.2, pool=30, lead=LEXICAL_LEAD_Z)
    assert fusion_for(HybridSpec(), long, 30) == ZScoreFusion(0.5, pool=30, lead=None)
    assert fusion_for(HybridSpec(alpha=0.2), short, 12) == ZScoreFusion(0.2, pool=12, lead=None)
    assert set(FUSIONS) == {"rrf", "linear", "zscore"}
