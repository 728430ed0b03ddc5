"""Reranking and hybrid search in both tools, against real LanceDB."""

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import turnkit.batteries.vector as battery
from turnkit import ScriptedModel
from turnkit.batteries.vector import (
    EncoderScorer,
    HashEncoder,
    InvalidRankingConfigError,
    RerankOptions,
    RerankWeights,
)
from turnkit.batteries.vector.ranking._scorers import _minilm_installed
from turnkit.tools import (
    ToolUsageError,
    create_vector_query_tool,
    retrieve_contexts_sync,
)


def judge_liking(word):
    """A judge model: 1 for passages containing ``word``, 0 for the rest, as one JSON object per batch."""

    def reply(messages):
        passages = re.findall(r"^\[(\d+)\] (.*)$", messages[-1].content, re.M)
        return json.dumps({n: 1.0 if word in text else 0.0 for n, text in passages})

    return ScriptedModel(reply)


class KeywordScorer:
    """A host's relevance scorer: passages containing the word are relevant."""

    def __init__(self, word):
        self.word = word
        self.name = f"keyword:{word}"

    def score(self, query, passages):
        return [1.0 if self.word in p else 0.0 for p in passages]


class BrokenScorer:
    name = "broken"

    def score(self, query, passages):
        raise RuntimeError("scorer offline")


JUDGE_WEIGHTS = {"semantic": 0.6, "vector": 0.3, "position": 0.1}


def run(tool, args, **ctx):
    return tool.execute_sync(args, request_context=ctx or None)


# -- configuration -----------------------------------------------------------------------------


def test_rerank_settings_reuse_the_battery_weights_and_never_merge_defaults(kb):
    store, coll = kb
    assert RerankWeights is battery.RerankWeights
    make = create_vector_query_tool
    tool = make(store=store, collection=coll, settings={"rerank": True})
    assert tool.options.settings.rerank.weights == RerankWeights(semantic=0.4, vector=0.4, position=0.2)
    make(
        store=store,
        collection=coll,
        settings={"rerank": {"weights": {"semantic": 0.7, "vector": 0.2, "position": 0.1}}},
    )
    with pytest.raises(ToolUsageError, match="never merged") as missing:
        make(store=store, collection=coll, settings={"rerank": {"weights": {"semantic": 0.5, "vector": 0.5}}})
    assert missing.value.code == "E_INVALID_TOOL_CONFIG"
    assert missing.value.option.startswith("settings.")
    with pytest.raises(ToolUsageError, match="sum to 0.9") as exc_info:
        make(
            store=store,
            collection=coll,
            settings={"rerank": {"weights": {"semantic": 0.5, "vector": 0.3, "position": 0.1}}},
        )
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    with pytest.raises(InvalidRankingConfigError):
        RerankWeights(semantic=-0.1, vector=0.9, position=0.2)
    with pytest.raises(InvalidRankingConfigError, match="missing \\['position'\\]"):
        RerankWeights(semantic=0.5, vector=0.5)  # type: ignore[call-arg]
    # Mastra's reranker, per request: each bad value is a configuration error, never a crash.
    judge = judge_liking("Oslo")
    for bad in (
        {"top_k": 0},
        {"model": ""},
        {"model": 42},
        {"scorer": "bm25"},
        {"scorer": object()},
        {"model": judge, "scorer": "encoder"},
        {"pool_factor": 0},
        {"on_error": "ignore"},
        {"weights": {"semantic": 1.0, "vektor": 0.0}},
        {"ranker": "x"},
        "yes",
    ):
        result = run(tool, {"query_text": "refunds"}, reranker=bad)
        assert result.error is not None and result.error.kind == "configuration", bad
    mastra = {
        "model": "judge",
        "options": {"weights": {"semantic": 0.6, "vector": 0.3, "position": 0.1}, "topK": 1},
    }
    ranked = create_vector_query_tool(store=store, collection=coll, models={"judge": judge})
    assert [s.id for s in run(ranked, {"query_text": "refunds paid"}, reranker=mastra).sources] == [
        "globex-ship"
    ]
    # The schema a request is shown reads the same context, its model named through `models`.
    auto = create_vector_query_tool(
        store=store, collection=coll, models={"judge": judge}, enable_filter=True, filter_fields="auto"
    )
    schema = auto.input_schema_for_sync({"reranker": mastra})
    assert "filter" in schema["properties"] and auto.filter_fields_for_sync({"reranker": mastra}) != {}


def test_model_names_are_resolved_through_models(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll)
    unknown = run(tool, {"query_text": "refunds"}, reranker={"model": "judge"})
    assert unknown.error.code == "E_TOOL_UNKNOWN_MODEL" and "no model named 'judge'" in unknown.error.message
    other = create_vector_query_tool(store=store, collection=coll, models={"other": judge_liking("x")})
    assert (
        "Known models: other" in run(other, {"query_text": "refunds"}, reranker={"model": "judge"}).error.hint
    )
    with pytest.raises(ToolUsageError) as exc_info:
        create_vector_query_tool(store=store, collection=coll, models=["judge"])
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    with pytest.raises(ToolUsageError, match="ChatModel") as exc_info:
        create_vector_query_tool(
            store=store, collection=coll, settings={"rerank": True, "rerank_model": "judge"}
        )
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"


# -- the vector query tool ----------------------------------------------------------------------


def test_llm_judge_over_fetches_and_promotes(kb):
    store, coll = kb
    plain = run(create_vector_query_tool(store=store, collection=coll), {"query_text": "refunds paid"})
    assert plain.sources[0].id != "globex-ship"
    model = judge_liking("Oslo")
    tool = create_vector_query_tool(
        store=store,
        collection=coll,
        settings={"top_k": 1, "rerank": {"pool_factor": 4, "weights": JUDGE_WEIGHTS}, "rerank_model": model},
    )
    result = run(tool, {"query_text": "refunds paid"})
    assert result.ok and [s.id for s in result.sources] == ["globex-ship"]
    # One batched call saw the whole pool (4 = top_k 1 × pool_factor 4), not one call per passage.
    assert len(model.calls) == 1
    assert len(re.findall(r"^\[\d+\] ", model.calls[0][-1].content, re.M)) == 4
    assert any(n.startswith("Reranked 4 candidates with llm:") for n in result.notes)
    assert 0 <= result.sources[0].score <= 1 and result.sources[0].distance is not None


def test_model_top_k_and_reranker_top_k_both_bound_the_results(kb):
    store, coll = kb
    tool = create_vector_query_tool(
        store=store,
        collection=coll,
        settings={"top_k": 3, "rerank": True, "rerank_model": judge_liking("Lyon")},
    )
    assert len(run(tool, {"query_text": "orders ship"}).sources) == 3
    assert len(run(tool, {"query_text": "orders ship", "top_k": 2}).sources) == 2


def test_reranker_per_request_by_model_name(kb):
    store, coll = kb
    model = judge_liking("Lyon")
    tool = create_vector_query_tool(store=store, collection=coll, models={"judge": model})
    ranked = run(
        tool,
        {"query_text": "refunds paid"},
        reranker={"model": "judge", "top_k": 1, "weights": {"semantic": 1.0, "vector": 0.0, "position": 0.0}},
    )
    assert [s.id for s in ranked.sources] == ["acme-ship"] and len(model.calls) == 1
    unknown = run(tool, {"query_text": "refunds"}, reranker={"model": "gpt-9"})
    assert unknown.error.code == "E_TOOL_UNKNOWN_MODEL" and unknown.error.kind == "configuration"
    assert "judge" in unknown.error.hint
    merged = run(tool, {"query_text": "refunds"}, reranker={"weights": {"semantic": 0.5, "vector": 0.5}})
    assert merged.error.kind == "configuration" and "never merged" in merged.error.message
    off = run(
        create_vector_query_tool(
            store=store, collection=coll, settings={"rerank": True, "rerank_model": model}
        ),
        {"query_text": "refunds paid"},
        reranker=False,
    )
    assert len(off.sources) == 4 and not any("Reranked" in n for n in off.notes)


def test_local_scorers(kb):
    store, coll = kb
    own = run(
        create_vector_query_tool(
            store=store, collection=coll, settings={"top_k": 2, "rerank": True, "rerank_scorer": "encoder"}
        ),
        {"query_text": "refunds paid"},
    )
    assert len(own.sources) == 2
    assert any(f"with encoder:{store.encoder.name}" in n for n in own.notes)
    scores = [s.score for s in own.sources]
    assert scores == sorted(scores, reverse=True)
    second = EncoderScorer(HashEncoder(32))
    other = run(
        create_vector_query_tool(
            store=store, collection=coll, settings={"rerank": True, "rerank_scorer": second}
        ),
        {"query_text": "refunds paid"},
    )
    assert any(f"with {second.name};" in n for n in other.notes) and second.name.endswith("hash-32")
    keyword = run(
        create_vector_query_tool(
            store=store,
            collection=coll,
            settings={
                "top_k": 1,
                "rerank": {"weights": JUDGE_WEIGHTS},
                "rerank_scorer": KeywordScorer("Oslo"),
            },
        ),
        {"query_text": "refunds paid"},
    )
    assert [s.id for s in keyword.sources] == ["globex-ship"]
    # The default picks MiniLM when its extra is installed, else the collection's encoder.
    default = run(
        create_vector_query_tool(store=store, collection=coll, settings={"rerank": True}), {"query_text": "x"}
    )
    assert default.ok and any("Reranked" in n for n in default.notes)
    if not _minilm_installed():
        assert any(f"encoder:{store.encoder.name}" in n for n in default.notes)
        minilm = run(
            create_vector_query_tool(
                store=store, collection=coll, settings={"rerank": True, "rerank_scorer": "minilm"}
            ),
            {"query_text": "x"},
        )
        assert minilm.error.kind == "configuration" and "turnkit[minilm]" in minilm.error.hint


def test_semantic_weight_zero_needs_no_scorer(kb):
    store, coll = kb
    weights = {"semantic": 0.0, "vector": 0.5, "position": 0.5}
    result = run(
        create_vector_query_tool(
            store=store, collection=coll, settings={"top_k": 2, "rerank": {"weights": weights}}
        ),
        {"query_text": "refunds paid"},
    )
    plain = run(create_vector_query_tool(store=store, collection=coll), {"query_text": "refunds paid"})
    assert [s.id for s in result.sources] == [s.id for s in plain.sources][:2]
    assert any("retrieval scores only" in n for n in result.notes)


def test_scorer_failure_is_reported_or_falls_back(kb):
    store, coll = kb
    failing = create_vector_query_tool(
        store=store, collection=coll, settings={"rerank": True, "rerank_scorer": BrokenScorer()}
    )
    result = run(failing, {"query_text": "refunds"})
    assert result.status == "error" and result.error.code == "E_VECTOR_RERANK_FAILED"
    assert result.error.kind == "failed"
    fallback = create_vector_query_tool(
        store=store,
        collection=coll,
        settings={"top_k": 3, "rerank": {"on_error": "fallback"}, "rerank_scorer": BrokenScorer()},
    )
    kept = run(fallback, {"query_text": "refunds"})
    assert kept.ok and len(kept.sources) == 3
    assert any("no usable scores" in n for n in kept.notes)


def test_hybrid_search_in_the_tool(kb):
    store, coll = kb
    plain = create_vector_query_tool(store=store, collection=coll, settings={"hybrid": False})
    assert len(run(plain, {"query_text": "Oslo"}).sources) == 4
    lexical = create_vector_query_tool(store=store, collection=coll, settings={"hybrid": {"alpha": 0.0}})
    assert [s.id for s in run(lexical, {"query_text": "Oslo"}).sources] == ["globex-ship"]
    assert len(run(lexical, {"query_text": "Oslo"}, hybrid=False).sources) == 4
    assert [s.id for s in run(plain, {"query_text": "Oslo"}, hybrid=0.0).sources] == ["globex-ship"]
    mixed = run(create_vector_query_tool(store=store, collection=coll), {"query_text": "Oslo"})  # the default
    assert mixed.sources[0].id == "globex-ship" and len(mixed.sources) == 4
    # The tool's own encoder (near_vector) still gets the words for the full-text leg.
    own = create_vector_query_tool(
        store=store, collection=coll, encoder=HashEncoder(128), settings={"hybrid": 0.0}
    )
    assert [s.id for s in run(own, {"query_text": "Lyon"}).sources] == ["acme-ship"]
    with pytest.raises(ToolUsageError, match="alpha") as exc_info:
        create_vector_query_tool(store=store, collection=coll, settings={"hybrid": 1.5})
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    with pytest.raises(ToolUsageError, match="unknown keys") as exc_info:
        create_vector_query_tool(
            store=store, collection=coll, settings={"hybrid": {"alpha": 0.5, "text": "x"}}
        )
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    bad = run(plain, {"query_text": "Oslo"}, hybrid={"fusion": "max"})
    assert bad.error.kind == "configuration"


def test_hybrid_and_reranking_keep_the_guard(kb):
    store, coll = kb
    tool = create_vector_query_tool(
        store=store,
        collection=coll,
        enable_filter=True,
        guard={"tenant": "acme"},
        filter_fields="any",  # the strongest adversary: any key, the guard's own included
        settings={"top_k": 3, "hybrid": 0.0, "rerank": True, "rerank_model": judge_liking("globex")},
    )
    widen = {"$or": [{"tenant": "globex"}, {"kind": {"$ne": "x"}}]}
    result = run(tool, {"query_text": "globex secret Oslo refunds", "filter": widen})
    assert result.ok and {s.metadata["tenant"] for s in result.sources} == {"acme"}
    sneaky = run(tool, {"query_text": "globex secret Oslo refunds"})
    assert sneaky.ok and {s.metadata["tenant"] for s in sneaky.sources} == {"acme"}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    semantic=st.floats(0, 1),
    share=st.floats(0, 1),
    rerank_k=st.integers(1, 5),
    top_k=st.integers(1, 6),
    alpha=st.none() | st.floats(0, 1),
)
def test_any_complete_weight_set_reranks_within_bounds(kb, semantic, share, rerank_k, top_k, alpha):
    store, coll = kb
    vector = (1 - semantic) * share
    weights = {"semantic": semantic, "vector": vector, "position": 1 - semantic - vector}
    tool = create_vector_query_tool(
        store=store,
        collection=coll,
        guard={"tenant": "acme"},
        settings={"hybrid": alpha, "rerank": {"weights": weights}, "rerank_scorer": KeywordScorer("Lyon")},
    )
    # A Mastra reranker's topK caps the results, as the model's top_k does.
    result = run(
        tool,
        {"query_text": "orders ship refunds", "top_k": top_k},
        reranker={"scorer": KeywordScorer("Lyon"), "weights": weights, "top_k": rerank_k},
    )
    assert result.status in ("ok", "no_results")
    assert len(result.sources) <= min(top_k, rerank_k)
    assert all(s.metadata["tenant"] == "acme" for s in result.sources)
    scores = [s.score for s in result.sources]
    assert scores == sorted(scores, reverse=True) and all(0 <= x <= 1 for x in scores)


# -- retrieve_contexts ---------------------------------------------------------------------------


def ask(store, coll, config, **kwargs):
    request = {"query": {"text": "refunds paid", "rag_retrieval_config": config}}
    return retrieve_contexts_sync(request, store=store, collection=coll, **kwargs)


def ids(response):
    return [c.text for c in response.contexts.contexts]


def test_llm_ranker_uses_the_named_host_model(kb):
    store, coll = kb
    model = judge_liking("Oslo")
    ranking = {"llm_ranker": {"model_name": "gemini-2.0-flash"}}
    weights = RerankOptions(weights=JUDGE_WEIGHTS)
    response = ask(
        store,
        coll,
        {"top_k": 1, "ranking": ranking},
        models={"gemini-2.0-flash": model},
        settings={"rerank": weights},
    )
    assert ids(response) == ["Orders ship from Oslo within 9 days."]
    assert len(model.calls) == 1  # the pool (1 × 4 candidates) in one batch
    assert len(re.findall(r"^\[\d+\] ", model.calls[0][-1].content, re.M)) == 4
    with pytest.raises(ToolUsageError, match="no model named 'gemini-2.0-flash'") as unknown:
        ask(store, coll, {"ranking": ranking}, models={"other": model})
    assert unknown.value.code == "E_TOOL_UNKNOWN_MODEL"
    assert "other" in unknown.value.hint
    with pytest.raises(ToolUsageError) as exc_info:
        ask(store, coll, {"ranking": ranking})
    assert exc_info.value.code == "E_TOOL_UNKNOWN_MODEL"
    with pytest.raises(ToolUsageError, match="model_name") as exc_info:
        ask(store, coll, {"ranking": {"llm_ranker": {}}}, models={"x": model})
    assert exc_info.value.code == "E_TOOL_INVALID_INPUT"
    resolved = ask(
        store, coll, {"top_k": 1, "ranking": ranking}, models=lambda name: model, settings={"rerank": weights}
    )
    assert ids(resolved) == ["Orders ship from Oslo within 9 days."]


def test_rank_service_uses_host_scorers_or_the_offline_scorer(kb):
    store, coll = kb
    ranking = {"rank_service": {"model_name": "semantic-ranker-512@latest"}}
    scorers = {"semantic-ranker-512@latest": KeywordScorer("Lyon")}
    weights = RerankOptions(weights=JUDGE_WEIGHTS)
    named = ask(store, coll, {"top_k": 1, "ranking": ranking}, scorers=scorers, settings={"rerank": weights})
    assert ids(named) == ["Orders ship from Lyon within 2 days."]
    with pytest.raises(ToolUsageError, match="no scorer named") as exc_info:
        ask(store, coll, {"ranking": {"rank_service": {"model_name": "other"}}}, scorers=scorers)
    assert exc_info.value.code == "E_TOOL_UNKNOWN_MODEL"
    offline = ask(store, coll, {"top_k": 3, "ranking": ranking}, score="similarity")
    scores = [c.score for c in offline.contexts.contexts]
    assert len(scores) == 3 and scores == sorted(scores, reverse=True)
    with pytest.raises(ToolUsageError) as exc_info:
        ask(store, coll, {"ranking": ranking}, scorers={"x": object()})
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    with pytest.raises(ToolUsageError) as exc_info:
        ask(store, coll, {"ranking": ranking}, settings={"rerank": {"topK": 3}})
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"


def test_thresholds_apply_before_ranking(kb):
    store, coll = kb
    # Vector only: the similarity shown is then the dense one the threshold reads.
    base = ask(store, coll, {"top_k": 4}, score="similarity", settings={"hybrid": False})
    cutoff = sorted(c.score for c in base.contexts.contexts)[-3]  # keeps the best two (strictly larger)
    ranking = {"llm_ranker": {"model_name": "j"}}
    config = {"top_k": 4, "ranking": ranking, "filter": {"vector_similarity_threshold": cutoff}}
    ranked = ask(store, coll, config, models={"j": judge_liking("Oslo")}, settings={"hybrid": False})
    assert set(ids(ranked)) <= set(ids(base)[:2]) and len(ids(ranked)) == 2


def test_hybrid_search_alpha(kb):
    store, coll = kb
    request = {"query": {"text": "Lyon", "rag_retrieval_config": {"hybrid_search": {"alpha": 0.0}}}}
    lexical = retrieve_contexts_sync(request, store=store, collection=coll)
    assert ids(lexical) == ["Orders ship from Lyon within 2 days."]
    camel = {"query": {"text": "Lyon", "ragRetrievalConfig": {"hybridSearch": {}, "topK": 4}}}
    assert len(ids(retrieve_contexts_sync(camel, store=store, collection=coll))) == 4
    for alpha in (1.5, -0.1, "half"):
        bad = {"query": {"text": "x", "rag_retrieval_config": {"hybrid_search": {"alpha": alpha}}}}
        with pytest.raises(ToolUsageError) as exc_info:
            retrieve_contexts_sync(bad, store=store, collection=coll)
        assert exc_info.value.code == "E_TOOL_INVALID_INPUT"
