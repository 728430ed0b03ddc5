"""Hybrid search, diversity and their builder steps against real LanceDB."""

from __future__ import annotations

import numpy as np
import pytest

from turnkit.batteries.vector import (
    QueryBuilder,
    VectorStore,
    VectorStoreUsageError,
    create_vector_store,
)

# Vectors chosen so the dense order is the reverse of the lexical order for the query "quasar telescope".
DOCS = [
    ("a", "quasar telescope quasar telescope observations", [0.0, 1.0, 0.0]),
    ("b", "telescope mirrors and quasar spectra", [0.3, 0.95, 0.0]),
    ("c", "gardening tips for spring", [0.9, 0.1, 0.0]),
    ("d", "cooking pasta at home", [1.0, 0.0, 0.0]),
]
QUERY_VECTOR = [1.0, 0.0, 0.0]


@pytest.fixture
def q(collection: str) -> QueryBuilder:
    vs = create_vector_store(uri="memory://", auto_optimize=None)
    vs(collection).upsert_sync(
        [{"id": i, "document": d, "vector": v, "metadata": {"n": n}} for n, (i, d, v) in enumerate(DOCS)]
    )
    return vs(collection).near_vector(QUERY_VECTOR).select("id", "document", "metadata")


def ids(matches) -> list[str]:
    return [m.id for m in matches]


def test_alpha_one_is_the_vector_order_and_alpha_zero_the_full_text_order(q: QueryBuilder) -> None:
    dense = ids(q.limit(4).search_sync())
    assert ids(q.hybrid(1.0, text="quasar telescope").limit(4).search_sync()) == dense
    lexical = ids(q.hybrid(0.0, text="quasar telescope").limit(4).search_sync())
    assert lexical == ["a", "b"]  # only documents with the words; "a" has them twice


@pytest.mark.parametrize("fusion", ["rrf", "linear"])
def test_balanced_hybrid_mixes_both_legs(q: QueryBuilder, fusion: str) -> None:
    matches = q.hybrid(0.5, fusion=fusion, text="quasar telescope").limit(4).search_sync()
    assert set(ids(matches)) == {"a", "b", "c", "d"}
    assert all(0.0 <= m.score <= 1.0 for m in matches)
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    if fusion == "rrf":  # "b" is second in both legs, so it beats documents only one leg ranked high
        assert ids(matches).index("b") < ids(matches).index("c")
    lexical_only = [m for m in matches if m.id == "a"][0]
    assert lexical_only.distance is not None  # the dense leg saw every row here, so it has a distance


def test_filter_applies_to_both_legs(q: QueryBuilder) -> None:
    matches = q.where("metadata.n", ">=", 1).hybrid(0.5, text="quasar telescope").limit(4).search_sync()
    assert "a" not in ids(matches)
    assert set(ids(matches)) == {"b", "c", "d"}


def test_min_score_applies_to_the_dense_similarity_and_paging_is_consistent(q: QueryBuilder) -> None:
    h = q.hybrid(0.5, text="quasar telescope")
    full = h.limit(4).search_sync()
    assert ids(h.limit(2).offset(2).search_sync()) == ids(full)[2:]
    dense = {m.id: m.score for m in q.limit(4).search_sync()}
    cut = sorted(dense.values())[1]
    # Not the fused score: "a" is first by full text but least similar to the query vector.
    assert ids(h.limit(4).min_score(cut).search_sync()) == [m.id for m in full if dense[m.id] >= cut]
    assert "a" not in ids(h.limit(4).min_score(cut).search_sync())
    assert ids(q.hybrid(0.0, text="quasar telescope").limit(4).min_score(cut).search_sync()) == ["b"]


def test_near_text_hybrid_uses_its_text_and_finds_rows_written_after_the_index(
    vs: VectorStore, collection: str
) -> None:
    vs(collection).upsert_sync([{"id": "x", "document": "alpha beta"}, {"id": "y", "document": "gamma"}])
    assert ids(vs(collection).near_text("gamma").hybrid(0.0).select("id").search_sync()) == ["y"]
    vs(collection).upsert_sync([{"id": "z", "document": "zeta gamma gamma"}])
    found = ids(vs(collection).near_text("gamma").hybrid(0.0).select("id").search_sync())
    assert set(found) == {"y", "z"}
    info = vs(collection).info_sync()
    assert any(i.endswith(":FTS") or "INVERTED" in i.upper() for i in info.indexes), info.indexes
    assert len(info.indexes) == 1


def test_lexical_only_search_does_not_encode(collection: str) -> None:
    calls: list[str] = []

    class Counting:
        name, dimension = "count", 3

        def encode(self, texts, *, kind):
            calls.append(kind)
            return np.ones((len(texts), 3), dtype=np.float32)

    vs = create_vector_store(uri="memory://", encoder=Counting(), auto_optimize=None)
    vs(collection).upsert_sync([{"id": "x", "document": "hello world"}])
    calls.clear()
    assert ids(vs(collection).near_text("hello").hybrid(0).select("id").search_sync()) == ["x"]
    assert calls == []


def test_query_syntax_characters_are_plain_text(vs: VectorStore, collection: str) -> None:
    vs(collection).upsert_sync([{"id": "x", "document": "bar baz foo"}])
    odd = 'what\'s "foo" AND bar:baz (x OR y* -z'
    assert "x" in ids(vs(collection).near_text(odd).hybrid(0.5).select("id").search_sync())


def test_builder_validates_hybrid_and_diversify(q: QueryBuilder, vs: VectorStore) -> None:
    for bad in (-0.1, 1.5, True, "0.5"):
        with pytest.raises(VectorStoreUsageError) as exc_info:
            q.hybrid(bad)  # type: ignore[arg-type]
        assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        q.hybrid(fusion="max")  # type: ignore[arg-type]
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        q.hybrid(rrf_k=0)
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        q.diversify(2.0)
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError, match="hybrid\\(text") as exc_info:
        q.hybrid().search_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError, match="near_text") as exc_info:
        vs("c").select("id").hybrid().search_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    spec = q.hybrid(0.3, fusion="linear", text="t").diversify(0.7, fetch_k=9).spec.to_dict()
    assert spec["hybrid"] == {"alpha": 0.3, "fusion": "linear", "rrf_k": 60, "text": "t", "candidates": None}
    assert spec["mmr"] == {"lambda_mult": 0.7, "fetch_k": 9}


def test_diversify_skips_near_duplicates_and_drops_unasked_vectors(collection: str) -> None:
    vs = create_vector_store(uri="memory://", auto_optimize=None)
    vs(collection).upsert_sync(
        [
            {"id": "dup1", "vector": [1.0, 0.0, 0.0]},
            {"id": "dup2", "vector": [0.999, 0.02, 0.0]},
            {"id": "other", "vector": [0.6, 0.0, 0.8]},
        ]
    )
    base = vs(collection).near_vector([1.0, 0.0, 0.1]).select("id").limit(2)
    assert ids(base.search_sync()) == ["dup1", "dup2"]
    diverse = base.diversify(0.3).search_sync()
    assert ids(diverse) == ["dup1", "other"]
    assert all(m.vector is None for m in diverse)
    assert ids(base.diversify(1.0).search_sync()) == ["dup1", "dup2"]
    with_vectors = base.select("id", "vector").diversify(0.3).search_sync()
    assert all(m.vector is not None for m in with_vectors)
