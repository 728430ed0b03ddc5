"""`RetrievalSettings`: defaults, shorthands, validation codes, merging; the pipeline it drives."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    HybridSpec,
    InvalidFilterError,
    InvalidRankingConfigError,
    MmrSpec,
    RerankOptions,
    RetrievalSettings,
    condition,
    retrieve_sync,
)


def test_defaults_are_the_measured_best() -> None:
    s = RetrievalSettings()
    assert s.hybrid == HybridSpec()  # turnkit's fusion: z-score, alpha by query length
    assert s.collapse_duplicates is True
    assert (s.top_k, s.min_score, s.rerank, s.diversify) == (5, None, None, None)
    assert RetrievalSettings.of(None) == s
    assert RetrievalSettings.of({}) == s


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (True, HybridSpec()),
        (0.3, HybridSpec(alpha=0.3)),
        ({"alpha": 0.7, "fusion": "rrf"}, HybridSpec(alpha=0.7, fusion="rrf")),
        (False, None),
        (None, None),
    ],
)
def test_hybrid_shorthands(value, want) -> None:
    assert RetrievalSettings(hybrid=value).hybrid == want


def test_other_shorthands() -> None:
    s = RetrievalSettings(diversify=0.3, rerank=True, filter={"metadata.kind": "faq"})
    assert s.diversify == MmrSpec(lambda_mult=0.3)
    assert s.rerank == RerankOptions(top_k=5)  # the rerank keeps top_k results
    assert s.filter == condition("metadata.kind", "eq", "faq")
    assert RetrievalSettings(diversify=True).diversify == MmrSpec()
    assert RetrievalSettings(rerank={"pool_factor": 2}, top_k=7).rerank == RerankOptions(
        top_k=7, pool_factor=2
    )


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"top_k": 0}, "top_k"),
        ({"top_k": 10_001}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"top_k": "5"}, "top_k"),
        ({"min_score": 1.5}, "min_score"),
        ({"min_score": True}, "min_score"),
        ({"min_score": float("nan")}, "min_score"),
        ({"max_distance": -1}, "max_distance"),
        ({"collapse_duplicates": "yes"}, "collapse_duplicates"),
        ({"diversify": 2}, "diversify"),
        ({"rerank": {"bogus": 1}}, "rerank"),
        ({"rerank_scorer": "bm25"}, "rerank_scorer"),
        ({"rerank_model": object()}, "rerank_model"),
        ({"ef": 0}, "ef"),
        ({"topk": 3}, "topk"),
    ],
)
def test_bad_values_name_the_knob(data, field) -> None:
    with pytest.raises(InvalidRankingConfigError) as info:
        RetrievalSettings(**data)
    assert info.value.code == "E_VECTOR_RANKING_INVALID_CONFIG"
    assert info.value.context["field"] == field
    assert field in info.value.message


def test_hybrid_and_filter_errors_keep_their_codes() -> None:
    with pytest.raises(InvalidRankingConfigError, match="alpha must be a number in") as info:
        RetrievalSettings(hybrid=1.5)
    assert "0 full-text only" in info.value.hint  # the knob's own hint
    with pytest.raises(InvalidFilterError):
        RetrievalSettings(filter={"metadata.year": {"$in": 1}})


def test_frozen() -> None:
    s = RetrievalSettings()
    with pytest.raises(Exception, match="frozen"):
        s.top_k = 3  # type: ignore[misc]


def test_merge_keeps_what_the_overrides_do_not_name() -> None:
    base = RetrievalSettings(top_k=8, hybrid=0.4, min_score=0.2)
    merged = base.merge({"hybrid": False})
    assert (merged.top_k, merged.hybrid, merged.min_score) == (8, None, 0.2)
    # A value's explicit fields override; its defaults do not.
    merged = base | RetrievalSettings(top_k=3)
    assert (merged.top_k, merged.hybrid, merged.min_score) == (3, HybridSpec(alpha=0.4), 0.2)
    assert base.merge(top_k=2).top_k == 2
    # A merged value remembers which fields were set, so merging it again keeps them.
    assert (RetrievalSettings() | merged).hybrid == HybridSpec(alpha=0.4)


def test_merge_resizes_the_rerank() -> None:
    assert RetrievalSettings(rerank=True).merge(top_k=9).rerank == RerankOptions(top_k=9)


_FIELDS = {
    "top_k": st.integers(1, 50),
    "hybrid": st.sampled_from([True, False, 0.0, 0.5, 1.0, {"fusion": "rrf"}]),
    "collapse_duplicates": st.booleans(),
    "diversify": st.sampled_from([None, True, 0.2]),
    "min_score": st.one_of(st.none(), st.floats(0, 1)),
    "ef": st.one_of(st.none(), st.integers(1, 500)),
}


@settings(max_examples=100, deadline=None)
@given(
    st.fixed_dictionaries({}, optional=_FIELDS),
    st.fixed_dictionaries({}, optional=_FIELDS),
)
def test_merge_is_a_dict_update(base, overrides) -> None:
    assert RetrievalSettings(**base).merge(overrides) == RetrievalSettings(**{**base, **overrides})


def test_retrieve_uses_the_settings(vs, collection) -> None:
    vs(collection).upsert_sync(
        [
            {
                "id": "md",
                "document": "Refunds reach the card in five days.",
                "metadata": {"source_uri": "a.md"},
            },
            {
                "id": "html",
                "document": "Refunds reach the card in five days",
                "metadata": {"source_uri": "a.html"},
            },
            {"id": "ship", "document": "Orders ship within two days.", "metadata": {"source_uri": "b.md"}},
        ]
    )
    q = vs(collection).near_text("refunds reach the card")
    found = retrieve_sync(q, {"top_k": 2})
    # The default collapses the copy and fills its slot with the next distinct text.
    first, second = found.matches
    assert second.id == "ship"
    assert {first.id, *(d.id for d in first.duplicates)} == {"md", "html"}
    assert found.settings == RetrievalSettings(top_k=2)
    # Hybrid by default: the query ran both legs.
    kept = retrieve_sync(q, {"top_k": 2, "collapse_duplicates": False, "hybrid": False})
    assert {m.id for m in kept.matches} == {"md", "html"}
    assert kept.settings is not None and kept.settings.hybrid is None


def test_the_default_is_plain_hybrid_search_with_the_copies_taken_out(vs, collection) -> None:
    rnd = random.Random(7)
    words = "refund card ship order return parcel warehouse island gift warranty lunch email days".split()
    docs = [" ".join(rnd.choice(words) for _ in range(rnd.randint(6, 14))) for _ in range(40)]
    # Each of the first ten texts is stored a second time, as an HTML rendering would be.
    records = [{"id": f"d{i}", "document": d} for i, d in enumerate(docs)]
    records += [{"id": f"copy{i}", "document": f"{docs[i]}."} for i in range(10)]
    vs(collection).upsert_sync(records)
    for query in ("refund card", "warehouse island parcel", "gift warranty lunch email", "ship"):
        for top_k in (1, 3, 5):
            plain = (
                vs(collection).near_text(query).hybrid().select("id", "document").limit(top_k).search_sync()
            )
            got = retrieve_sync(vs(collection).near_text(query), {"top_k": top_k}).matches
            # The fused order is the plain hybrid search's: read as texts (a match and its copies are one;
            # exact copies tie, in either order), the plain results come first, in their order.
            group = {d.id: m.id for m in got for d in (m, *m.duplicates)}
            texts = list(dict.fromkeys(group[m.id] for m in plain if m.id in group))
            assert [m.id for m in got][: len(texts)] == texts
            assert all(m.id in group for m in plain)
            assert len(got) == top_k


@pytest.mark.parametrize("hybrid", [True, False])
def test_a_pool_of_copies_is_widened_until_top_k_texts_are_found(vs, collection, hybrid: bool) -> None:
    # 40 copies of one text rank first: the first pool (3 x top_k) holds nothing else.
    text = "refund card ship order return parcel warehouse island gift warranty"
    records = [{"id": f"copy{i:02d}", "document": text} for i in range(40)]
    others = ["refund card lunch email days", "ship order island", "gift warranty parcel return", "card days"]
    others += [f"{d} and {n} more" for n, d in enumerate(others)]
    records += [{"id": f"other{i}", "document": d} for i, d in enumerate(others)]
    vs(collection).upsert_sync(records)
    got = retrieve_sync(vs(collection).near_text(text), {"top_k": 5, "hybrid": hybrid}).matches
    assert len(got) == 5  # one text and four others, where the first pool gave one
    assert got[0].id.startswith("copy") and len(got[0].duplicates) == 39
    assert len({m.document for m in got}) == 5


def test_the_prefilter_setting_reaches_the_query_and_the_querys_own_wins(vs, collection) -> None:
    vs(collection).upsert_sync([{"id": "a", "document": "refunds reach the card"}])
    q = vs(collection).near_text("refunds")
    assert q.spec.prefilter is None  # not set: a pre-filter
    assert RetrievalSettings(prefilter=False).apply(q).spec.prefilter is False
    assert RetrievalSettings(prefilter=True).apply(q).spec.prefilter is True
    assert RetrievalSettings(prefilter=False).apply(q.prefilter(True)).spec.prefilter is True
    assert RetrievalSettings().apply(q.prefilter(False)).spec.prefilter is False
    assert q.spec.to_dict()["prefilter"] is True and q.prefilter(False).spec.to_dict()["prefilter"] is False
