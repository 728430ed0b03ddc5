"""z-score fusion over both legs' candidates: properties, and through a real hybrid search."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import HashEncoder, RRFFusion, ZScoreFusion, create_vector_store

ids = st.lists(st.text("abcdefgh", min_size=1, max_size=3), unique=True, max_size=12)
scores = st.floats(min_value=0.0, max_value=50.0, allow_nan=False)


@st.composite
def legs(draw: st.DrawFn) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    dense_ids, lexical_ids = draw(ids), draw(ids)
    dense = sorted(((d, draw(st.floats(0.0, 1.0))) for d in dense_ids), key=lambda p: -p[1])
    lexical = sorted(((d, draw(scores)) for d in lexical_ids), key=lambda p: -p[1])
    return dense, lexical


@settings(max_examples=200, deadline=None)
@given(pair=legs(), alpha=st.floats(0.0, 1.0))
def test_scores_in_unit_interval_and_every_candidate_once(pair, alpha) -> None:  # type: ignore[no-untyped-def]
    dense, lexical = pair
    fused = ZScoreFusion(alpha, pool=10).fuse(dense, lexical)
    got = [d for d, _ in fused]
    assert len(got) == len(set(got))
    expected = (
        {d for d, _ in dense}
        if alpha >= 1
        else {d for d, _ in lexical}
        if alpha <= 0
        else ({d for d, _ in dense} | {d for d, _ in lexical})
    )
    assert set(got) == expected
    assert all(0.0 < s < 1.0 for _, s in fused)
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)


@settings(max_examples=200, deadline=None)
@given(pair=legs())
def test_one_leg_alone_keeps_that_legs_order(pair) -> None:  # type: ignore[no-untyped-def]
    dense, lexical = pair
    only_dense = [d for d, _ in ZScoreFusion(1.0).fuse(dense, lexical)]
    assert only_dense == [d for d, _ in dense] or _same_scores_reordered(only_dense, dense)
    only_lexical = [d for d, _ in ZScoreFusion(0.0).fuse(dense, lexical)]
    assert only_lexical == [d for d, _ in lexical] or _same_scores_reordered(only_lexical, lexical)


def _same_scores_reordered(order: list[str], leg: list[tuple[str, float]]) -> bool:
    # Equal raw scores may come back in any stable order of equals; the scores must still be sorted.
    value = dict(leg)
    return [value[d] for d in order] == sorted(value.values(), reverse=True)


def test_a_lone_exact_lexical_hit_stays_first_where_rrf_drops_it() -> None:
    # The known-item case: the dense leg ranks the target last, BM25 finds only it clearly.
    dense = [(f"d{i}", 0.80 - i * 0.002) for i in range(20)] + [("target", 0.70)]
    lexical = [("target", 25.0), ("d5", 2.0), ("d7", 1.5)]
    fused = ZScoreFusion(0.2, pool=30).fuse(dense, lexical)  # the measured alpha for short queries
    assert fused[0][0] == "target"
    rrf = RRFFusion(0.2).fuse(dense, lexical)
    assert rrf[0][0] != "target"


def test_hybrid_search_takes_fusion_zscore() -> None:
    vs = create_vector_store("memory://", encoder=HashEncoder(32), auto_optimize=None)
    vs("c").upsert_sync(
        [
            {"id": "a", "document": "refunds reach the original card"},
            {"id": "b", "document": "orders ship from Lyon within two days"},
            {"id": "c", "document": "the quarterly zorblax report"},
        ]
    )
    q = vs("c").near_text("zorblax").hybrid(alpha=0.5, fusion="zscore").select("id").limit(3)
    matches = q.search_sync()
    assert matches[0].id == "c"
    assert all(0.0 < (m.score or 0.0) < 1.0 for m in matches)
    with pytest.raises(Exception, match="zscore"):
        vs("c").near_text("x").hybrid(fusion="bogus")  # type: ignore[arg-type]
