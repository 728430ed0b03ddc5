"""The hybrid defaults: z-score fusion, alpha by query length, a full-text index without stemming."""

from __future__ import annotations

import pytest

from turnkit.batteries.vector import HashEncoder, HybridSpec, create_vector_store
from turnkit.batteries.vector.query._ranking_specs import PASSAGE_ALPHA, PASSAGE_WORDS, SHORT_QUERY_ALPHA


def test_default_spec_is_zscore_with_alpha_by_query_length() -> None:
    spec = HybridSpec()
    assert spec.fusion == "zscore" and spec.alpha is None
    assert spec.alpha_for("refund policy") == SHORT_QUERY_ALPHA == 0.2
    assert spec.alpha_for(" ".join(["word"] * PASSAGE_WORDS)) == SHORT_QUERY_ALPHA
    assert spec.alpha_for(" ".join(["word"] * (PASSAGE_WORDS + 1))) == PASSAGE_ALPHA == 0.5
    assert HybridSpec(alpha=0.7).alpha_for("x " * 100) == 0.7
    assert HybridSpec.from_option(True) == HybridSpec()
    assert HybridSpec.from_option({"fusion": "rrf"}) == HybridSpec(fusion="rrf")
    assert HybridSpec.from_option(0.3) == HybridSpec(alpha=0.3)


@pytest.fixture
def kb():
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(64), auto_optimize=None)
    vs("kb").upsert_sync(
        [
            {"id": "run", "document": "We run the nightly job"},
            {"id": "running", "document": "The running total is kept"},
            {"id": "other", "document": "An unrelated line about lunch"},
        ]
    )
    return vs


def test_full_text_index_keeps_word_forms_and_stop_words(kb) -> None:
    def lexical(text: str) -> list[str]:
        q = kb("kb").near_text(text).hybrid(alpha=0.0).select("id").limit(3)
        return [m.id for m in q.search_sync()]

    # Not stemmed: "running" does not match "run"; a stemming index would return both.
    assert lexical("running") == ["running"]
    # Stop words are indexed: "the" finds the two rows that hold it (a default index finds none).
    assert sorted(lexical("the")) == ["run", "running"]


def test_default_hybrid_keeps_a_lone_exact_term_first(kb) -> None:
    kb("kb").upsert_sync([{"id": "err", "document": "Error E_VECTOR_STORE_UNSAFE_DELETE raised"}])
    hits = kb("kb").near_text("E_VECTOR_STORE_UNSAFE_DELETE").hybrid().select("id").limit(3).search_sync()
    assert hits[0].id == "err"
