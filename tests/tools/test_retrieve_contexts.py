import asyncio
import math

import pytest

from turnkit.batteries.vector import InvalidFilterError
from turnkit.tools import (
    RetrieveContextsRequest,
    RetrieveContextsResponse,
    ToolUsageError,
    retrieve_contexts,
    retrieve_contexts_sync,
)

VECTOR_ONLY = {"hybrid": False}


def ask(store, request, **kwargs):
    return retrieve_contexts_sync(request, store=store, **kwargs)


def texts(response):
    return [c.text for c in response.contexts.contexts]


def test_response_shape_with_page_span_and_distance_score(kb):
    store, coll = kb
    response = ask(
        store,
        {"query": {"text": "refunds paid business days", "rag_retrieval_config": {"top_k": 2}}},
        collection=coll,
    )
    assert isinstance(response, RetrieveContextsResponse)
    first, second = response.contexts.contexts
    assert first.source_uri == "file:///kb/acme/policy.pdf"
    assert first.source_display_name == "policy.pdf"
    assert first.text == first.chunk.text == "Refunds are paid within 5 business days."
    assert (first.chunk.page_span.first_page, first.chunk.page_span.last_page) == (3, 4)
    assert second.chunk.page_span is None and second.source_uri is None
    # Default score: the raw cosine distance, in [0, 2], lower is more relevant.
    assert 0 <= first.score <= second.score <= 2
    dumped = response.model_dump(mode="json", exclude_none=True)
    assert set(dumped["contexts"]["contexts"][0]) == {
        "source_uri",
        "source_display_name",
        "text",
        "score",
        "chunk",
    }


def test_similarity_score_option(kb):
    store, coll = kb
    request = {"query": {"text": "refunds paid", "rag_retrieval_config": {"top_k": 2}}}
    # Vector only: the similarity is then the dense one (under hybrid search it is the fused score).
    sims = ask(store, request, collection=coll, score="similarity", settings=VECTOR_ONLY).contexts.contexts
    dists = ask(store, request, collection=coll, settings=VECTOR_ONLY).contexts.contexts
    assert 1 >= sims[0].score >= sims[1].score >= 0
    assert sims[0].score == pytest.approx(1 - dists[0].score / 2, abs=1e-6)
    with pytest.raises(ToolUsageError) as exc_info:
        ask(store, request, collection=coll, score="cosine")
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"


def test_camel_case_and_corpus_resource_names(kb):
    store, coll = kb
    request = {
        "parent": "projects/p/locations/us-central1",
        "query": {"text": "orders ship", "ragRetrievalConfig": {"topK": 1}},
        "vertexRagStore": {"ragResources": [{"ragCorpus": f"projects/p/locations/l/ragCorpora/{coll}"}]},
    }
    assert texts(ask(store, request)) == ["Orders ship from Lyon within 2 days."]
    assert RetrieveContextsRequest.model_validate(request).query.rag_retrieval_config.top_k == 1


def test_metadata_filter_grammar(kb):
    store, coll = kb

    def run(expr):
        req = {
            "query": {"text": "refunds orders", "rag_retrieval_config": {"filter": {"metadata_filter": expr}}}
        }
        return sorted(texts(ask(store, req, collection=coll)))

    assert run('kind = "faq" AND year >= 2024') == [
        "Refunds are paid within 30 business days, globex secret."
    ]
    assert len(run('tenant = "acme" AND (kind = "howto" OR page_span.first_page = 3)')) == 2
    assert run('source_display_name LIKE "%.pdf"') == ["Refunds are paid within 5 business days."]
    assert len(run("")) == 4
    # Text that would be SQL injection is a syntax error of the grammar, never SQL.
    with pytest.raises(InvalidFilterError) as info:
        run("kind = 'faq' OR 1=1; DROP TABLE x")
    assert info.value.code == "E_VECTOR_STORE_INVALID_FILTER" and info.value.position
    with pytest.raises(InvalidFilterError):
        run("kind ~ 'faq'")


def test_thresholds_are_strict_and_exclusive(kb):
    store, coll = kb
    base = {"query": {"text": "refunds paid business days", "rag_retrieval_config": {"top_k": 10}}}
    scores = [c.score for c in ask(store, base, collection=coll, settings=VECTOR_ONLY).contexts.contexts]
    cut = scores[1]

    def with_filter(**flt):
        req = {
            "query": {
                "text": "refunds paid business days",
                "rag_retrieval_config": {"top_k": 10, "filter": flt},
            }
        }
        return ask(store, req, collection=coll, settings=VECTOR_ONLY)

    kept = with_filter(vector_distance_threshold=cut).contexts.contexts
    assert [c.score for c in kept] == [s for s in scores if s < cut]
    sims = [
        c.score
        for c in ask(store, base, collection=coll, score="similarity", settings=VECTOR_ONLY).contexts.contexts
    ]
    above = with_filter(vector_similarity_threshold=sims[1]).contexts.contexts
    assert len(above) == len([s for s in sims if s > sims[1]])
    # 0.0 is a value, not "unset": it keeps nothing (no distance is below 0).
    assert with_filter(vector_distance_threshold=0.0).contexts.contexts == []
    with pytest.raises(ToolUsageError, match="only one of") as exc_info:
        with_filter(vector_distance_threshold=1.0, vector_similarity_threshold=0.1)
    assert exc_info.value.code == "E_TOOL_INVALID_INPUT"
    legacy = {**base, "vertex_rag_store": {"vector_distance_threshold": cut}}
    assert len(ask(store, legacy, collection=coll, settings=VECTOR_ONLY).contexts.contexts) == len(kept)
    both = {
        "query": {"text": "x", "rag_retrieval_config": {"filter": {"vector_distance_threshold": 1}}},
        "vertex_rag_store": {"vector_distance_threshold": 1},
    }
    with pytest.raises(ToolUsageError, match="deprecated") as exc_info:
        ask(store, both, collection=coll, settings=VECTOR_ONLY)
    assert exc_info.value.code == "E_TOOL_INVALID_INPUT"
    # The deprecated threshold refuses what the filter's refuses: a non-finite cut keeps everything.
    for cut in (math.inf, math.nan):
        with pytest.raises(ToolUsageError, match="finite") as exc_info:
            ask(store, {**base, "vertex_rag_store": {"vector_distance_threshold": cut}}, collection=coll)
        assert exc_info.value.code == "E_TOOL_INVALID_INPUT"


def test_rag_file_ids_restrict_to_source_files(kb):
    store, coll = kb

    def run(ids):
        req = {
            "query": {"text": "refunds orders"},
            "vertex_rag_store": {"rag_resources": [{"rag_corpus": coll, "rag_file_ids": ids}]},
        }
        return texts(ask(store, req))

    assert run(["file:///kb/acme/policy.pdf"]) == ["Refunds are paid within 5 business days."]
    assert run(["policy.pdf"]) == ["Refunds are paid within 5 business days."]
    assert run(["file:///nowhere.txt"]) == []
    assert len(run([])) == 4  # an empty list does not restrict


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"query": {}},
        {"query": {"text": "  "}},
        {"query": {"text": "x", "rag_retrieval_config": {"top_k": 0}}},
        {"query": {"text": "x", "rag_retrieval_config": {"top_k": "many"}}},
        {"query": {"text": "x", "rag_retrieval_config": {"filter": {"vector_similarity_threshold": 2}}}},
        {"query": {"text": "x"}, "vertex_rag_store": {"rag_resources": [{}, {}]}},
        {"query": {"text": "x", "similarity_top_k": 3}},
        "query=x",
    ],
)
def test_invalid_requests(kb, request_):
    store, coll = kb
    with pytest.raises(ToolUsageError) as info:
        ask(store, request_, collection=coll)
    assert info.value.code == "E_TOOL_INVALID_INPUT" and info.value.hint


def test_top_k_default_and_clamp(kb):
    store, coll = kb
    assert (
        len(
            ask(
                store, {"query": {"text": "refunds"}}, collection=coll, settings={"top_k": 2}
            ).contexts.contexts
        )
        == 2
    )
    big = {"query": {"text": "refunds", "rag_retrieval_config": {"top_k": 1000}}}
    assert len(ask(store, big, collection=coll, limits={"max_top_k": 3}).contexts.contexts) == 3


def test_collection_resolution_and_allow_list(kb):
    store, coll = kb
    with pytest.raises(ToolUsageError) as exc_info:
        ask(store, {"query": {"text": "x"}})
    assert exc_info.value.code == "E_TOOL_OPTION_MISSING"
    other = {"query": {"text": "x"}, "vertex_rag_store": {"rag_resources": [{"rag_corpus": "secret"}]}}
    with pytest.raises(ToolUsageError) as info:
        ask(store, other, collection=coll, allowed_collections=[coll])
    assert info.value.code == "E_TOOL_COLLECTION_NOT_ALLOWED"
    assert coll in info.value.hint


def test_async_form_and_schema(kb):
    store, coll = kb
    response = asyncio.run(retrieve_contexts({"query": {"text": "orders"}}, store=store, collection=coll))
    assert len(response.contexts.contexts) == 4
    schema = RetrieveContextsRequest.model_json_schema(by_alias=False)
    assert schema["required"] == ["query"]
    assert "vertex_rag_store" in schema["properties"]
    assert "rag_retrieval_config" in schema["$defs"]["RagQuery"]["properties"]


def test_query_text_length_is_capped(kb):
    store, collection = kb
    with pytest.raises(ToolUsageError, match="at most 50") as exc_info:
        ask(store, {"query": {"text": "refund " * 20}}, collection=collection, limits={"max_query_chars": 50})
    assert exc_info.value.code == "E_TOOL_INVALID_INPUT"
    assert texts(
        ask(
            store, {"query": {"text": "refund policy"}}, collection=collection, limits={"max_query_chars": 50}
        )
    )


def test_response_keeps_snake_case_in_python_and_dumps_the_rest_spelling() -> None:
    from turnkit.batteries.vector import PageSpan

    context = {
        "source_uri": "file:///a.pdf",
        "source_display_name": "a.pdf",
        "text": "t",
        "score": 0.1,
        "chunk": {"text": "t", "page_span": PageSpan(first_page=1, last_page=2)},
    }
    response = RetrieveContextsResponse.model_validate({"contexts": {"contexts": [context]}})
    assert response.contexts.contexts[0].source_uri == "file:///a.pdf"
    assert response.model_dump()["contexts"]["contexts"][0]["source_uri"] == "file:///a.pdf"
    rest = response.model_dump(by_alias=True, exclude_none=True)
    assert rest == {
        "contexts": {
            "contexts": [
                {
                    "sourceUri": "file:///a.pdf",
                    "sourceDisplayName": "a.pdf",
                    "text": "t",
                    "score": 0.1,
                    "chunk": {"text": "t", "pageSpan": {"firstPage": 1, "lastPage": 2}},
                }
            ]
        }
    }
    # The REST spelling reads back into the same model.
    assert RetrieveContextsResponse.model_validate(rest) == response
