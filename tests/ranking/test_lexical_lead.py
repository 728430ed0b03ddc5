"""The full-text leg's phrases and lead: pure properties, and through a real hybrid search."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import HashEncoder, HybridSpec, ZScoreFusion, create_vector_store
from turnkit.batteries.vector.query._ranking_specs import LEXICAL_LEAD_Z, PASSAGE_WORDS
from turnkit.batteries.vector.ranking._phrases import MAX_PHRASES, query_phrases

ids = st.lists(st.text("abcdefgh", min_size=1, max_size=3), unique=True, max_size=12)


@st.composite
def legs(draw: st.DrawFn) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    dense = sorted(((d, draw(st.floats(0.0, 1.0))) for d in draw(ids)), key=lambda p: -p[1])
    lexical = sorted(((d, draw(st.floats(0.0, 50.0))) for d in draw(ids)), key=lambda p: -p[1])
    return dense, lexical


def _lexical_z(dense: list[tuple[str, float]], lexical: list[tuple[str, float]], pool: int) -> float:
    """The best lexical hit's z-score over both legs' candidates, as `ZScoreFusion` computes it."""
    union = list(dict.fromkeys([d for d, _ in dense] + [d for d, _ in lexical]))
    scores = dict(lexical)
    floor = 0.0 if len(lexical) < pool else min(scores.values())
    values = [scores.get(d, floor) for d in union]
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5
    return 0.0 if std <= 1e-12 else (max(scores.values()) - mean) / std


@settings(max_examples=300, deadline=None)
@given(pair=legs(), alpha=st.floats(0.0, 0.99), lead=st.floats(0.0, 4.0))
def test_a_confident_lexical_hit_leads_and_scores_stay_ordered(pair, alpha, lead) -> None:  # type: ignore[no-untyped-def]
    dense, lexical = pair
    fused = ZScoreFusion(alpha, pool=10, lead=lead).fuse(dense, lexical)
    plain = ZScoreFusion(alpha, pool=10).fuse(dense, lexical)
    assert {d for d, _ in fused} == {d for d, _ in plain}
    assert all(0.0 < s < 1.0 for _, s in fused)
    assert [s for _, s in fused] == sorted((s for _, s in fused), reverse=True)
    if lexical and _lexical_z(dense, lexical, 10) >= lead + 1e-9:
        best = max(lexical, key=lambda p: p[1])[1]
        assert dict(lexical)[fused[0][0]] == best  # the lexical leg's best hit (or one tied with it)
    if not fused:
        return
    # Everything but the leader keeps the plain fusion's relative order.
    leader = fused[0][0]
    assert [d for d, _ in fused if d != leader] == [d for d, _ in plain if d != leader]


@settings(max_examples=200, deadline=None)
@given(pair=legs(), alpha=st.floats(0.0, 0.99))
def test_the_lead_never_moves_a_document_that_both_legs_rank_first(pair, alpha) -> None:  # type: ignore[no-untyped-def]
    dense, lexical = pair
    if not (dense and lexical and dense[0][0] == lexical[0][0]):
        return
    alone = [leg[0][1] > max((s for _, s in leg[1:]), default=-1) for leg in (dense, lexical)]
    if all(alone):
        assert ZScoreFusion(alpha, pool=10, lead=LEXICAL_LEAD_Z).fuse(dense, lexical)[0][0] == dense[0][0]


@settings(max_examples=200, deadline=None)
@given(pair=legs(), alpha=st.floats(0.0, 1.0), seed=st.randoms())
def test_fusion_does_not_depend_on_the_order_the_legs_list_their_hits(pair, alpha, seed) -> None:  # type: ignore[no-untyped-def]
    dense, lexical = pair
    if len(set(s for _, s in dense)) < len(dense) or len(set(s for _, s in lexical)) < len(lexical):
        return  # with ties the list order is the tie-break, on purpose
    shuffled_dense, shuffled_lexical = list(dense), list(lexical)
    seed.shuffle(shuffled_dense)
    seed.shuffle(shuffled_lexical)
    for lead in (None, 1.0):
        a = ZScoreFusion(alpha, pool=10, lead=lead).fuse(dense, lexical)
        b = ZScoreFusion(alpha, pool=10, lead=lead).fuse(shuffled_dense, shuffled_lexical)
        assert {d: round(s, 9) for d, s in a} == {d: round(s, 9) for d, s in b}


def test_the_lead_is_the_default_for_short_queries_only() -> None:
    spec = HybridSpec()
    assert spec.lead_for("socket_options") == LEXICAL_LEAD_Z == 2.5
    assert spec.lead_for(" ".join(["word"] * (PASSAGE_WORDS + 1))) is None
    assert HybridSpec(alpha=0.2).lead_for("socket_options") is None
    assert HybridSpec(fusion="linear").lead_for("socket_options") is None


def test_query_phrases() -> None:
    assert query_phrases("socket_options") == ["socket options"]
    assert query_phrases("call os.path.join, then os.path.join") == ["os path join"]
    assert query_phrases('the "exact words" and s3.buckets.all') == ["exact words", "s3 buckets all"]
    assert query_phrases("__spam plain words") == []  # one piece: the plain match finds it
    assert query_phrases("“curly quotes here”") == ["curly quotes here"]
    assert len(query_phrases(" ".join(f"a{i}.b{i}" for i in range(20)))) == MAX_PHRASES


def test_an_identifier_matches_as_a_phrase_not_as_two_common_words() -> None:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(64), auto_optimize=None)
    filler = [{"id": f"f{i}", "document": f"socket level {i}; the options you pass"} for i in range(6)]
    vs("kb").upsert_sync(
        [
            *filler,
            {"id": "noise", "document": "options options options, socket socket: a socket has options"},
            {"id": "target", "document": "set socket_options before you connect"},
        ]
    )
    for text in ("socket_options", '"socket options"'):
        got = vs("kb").near_text(text).hybrid(alpha=0.0).select("id").limit(3).search_sync()
        assert got[0].id == "target", (text, [m.id for m in got])
        default = vs("kb").near_text(text).hybrid().select("id").limit(3).search_sync()
        assert default[0].id == "target"
