import asyncio
import json

import numpy as np
import pytest

from turnkit.batteries.vector import HashEncoder, condition, create_vector_store
from turnkit.tools import (
    ToolUsageError,
    VectorQueryResult,
    create_vector_query_tool,
)
from turnkit.tools.vector_query._tool import DEFAULT_DESCRIPTION


def run(tool, args, **ctx):
    return tool.execute_sync(args, request_context=ctx or None)


# -- output ----------------------------------------------------------------------------------


def test_relevant_context_is_chunk_text_and_sources_cite(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll)
    result = run(tool, {"query_text": "refunds paid business days", "top_k": 2})
    assert result.status == "ok" and result.ok
    # The chunks' text, one entry per source in source order; never the metadata objects.
    assert result.relevant_context == [s.document for s in result.sources]
    assert result.relevant_context[0] == "Refunds are paid within 5 business days."
    first = result.sources[0]
    assert first.id == "acme-refund"
    assert first.document == "Refunds are paid within 5 business days."
    assert first.source_uri == "file:///kb/acme/policy.pdf"
    assert first.source_display_name == "policy.pdf"
    assert (first.page_span.first_page, first.page_span.last_page) == (3, 4)
    assert 0 <= first.score <= 1 and first.distance >= 0
    assert first.metadata["kind"] == "faq"
    assert first.vector is None  # include_vectors is off by default
    assert len(result.sources) == 2 and result.top_k == 2


def test_include_vectors_and_sources_at_creation_and_per_request(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll, settings={"include_vectors": True})
    result = run(tool, {"query_text": "refunds", "top_k": 1})
    assert len(result.sources[0].vector) == 128
    hidden = run(tool, {"query_text": "refunds", "top_k": 1}, include_sources=False, include_vectors=False)
    assert hidden.sources == [] and len(hidden.relevant_context) == 1
    quiet = create_vector_query_tool(store=store, collection=coll, settings={"include_sources": False})
    assert run(quiet, {"query_text": "refunds"}).sources == []
    assert len(run(quiet, {"query_text": "refunds"}, include_sources=True).sources) == 4


def test_no_results_differs_from_failure(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll, enable_filter=True)
    empty = run(tool, {"query_text": "refunds", "filter": {"kind": "missing-kind"}})
    assert empty.status == "no_results" and empty.ok and empty.error is None
    assert empty.relevant_context == [] and empty.sources == []
    missing = run(tool, {"query_text": "refunds"}, collection="no_such_collection")
    assert missing.status == "error" and not missing.ok
    assert missing.error.code == "E_VECTOR_STORE_COLLECTION_NOT_FOUND"
    assert missing.error.kind == "configuration"


def test_backend_failure_is_reported_and_hides_details(kb):
    store, coll = kb
    # A collection built with another dimension: the query vector cannot be searched there.
    store("wide").upsert_sync([{"id": "w", "vector": [0.1] * 8}])
    tool = create_vector_query_tool(store=store, collection="wide")
    result = run(tool, {"query_text": "refunds"})
    assert result.status == "error"
    assert result.error.code == "E_VECTOR_STORE_DIMENSION_MISMATCH"

    def broken(texts, kind):
        raise RuntimeError("model server down: secret-host:1234")

    from turnkit.batteries.vector import FunctionEncoder

    bad_store = create_vector_store(uri="memory://", encoder=FunctionEncoder(broken, name="x", dimension=4))
    bad_store("c").upsert_sync([{"id": "a", "vector": [1, 0, 0, 0]}])
    failed = run(create_vector_query_tool(store=bad_store, collection="c"), {"query_text": "hi"})
    assert failed.status == "error" and failed.error.kind == "failed"
    assert failed.error.code == "E_VECTOR_STORE_ENCODER_FAILED"  # the stable code; the details are logged
    assert "secret-host" not in failed.to_json()


# -- model input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "field"),
    [
        ({}, "E_TOOL_INVALID_INPUT", "query_text"),
        ({"query_text": "   "}, "E_TOOL_INVALID_INPUT", "query_text"),
        ({"query_text": 42}, "E_TOOL_INVALID_INPUT", "query_text"),
        ({"query_text": "x", "top_k": "five"}, "E_TOOL_INVALID_INPUT", "top_k"),
        ({"query_text": "x", "top_k": 2.5}, "E_TOOL_INVALID_INPUT", "top_k"),
        ({"query_text": "x", "top_k": True}, "E_TOOL_INVALID_INPUT", "top_k"),
        ({"query_text": "x", "queryText": "y"}, "E_TOOL_INVALID_INPUT", None),
        ({"query_text": "x", "filter": '{"kind": "faq"}'}, "E_TOOL_INVALID_INPUT", "filter"),
        ({"query_text": "x", "filter": ["kind"]}, "E_TOOL_INVALID_INPUT", "filter"),
        (
            {"query_text": "x", "filter": {"kind": {"$regex": "f.*"}}},
            "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
            None,
        ),
        ({"query_text": "x", "filter": {"year": {"$gt": [1]}}}, "E_VECTOR_STORE_INVALID_FILTER", None),
        (
            {"query_text": "x", "filter": {"$where": "1=1"}},
            "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
            None,
        ),
        (
            {"query_text": "x", "filter": {"kind'; DROP TABLE x; --": "a"}},
            "E_VECTOR_STORE_UNKNOWN_FIELD",
            None,
        ),
    ],
)
def test_bad_model_input_is_a_structured_error(kb, args, code, field):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll, enable_filter=True)
    result = run(tool, args)
    assert result.status == "error"
    assert result.error.code == code
    assert result.error.kind == "invalid_input"
    assert result.error.message and result.error.hint
    json.loads(result.to_json())  # a model-readable payload


def test_json_text_arguments_are_accepted_and_bad_json_reported(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll)
    assert run(tool, '{"query_text": "refunds", "top_k": 1}').status == "ok"
    bad = run(tool, '{"query_text": ')
    assert bad.error.code == "E_TOOL_INVALID_INPUT" and "JSON" in bad.error.message


def test_filter_refused_when_filtering_is_off(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll)
    assert "filter" not in tool.input_schema["properties"]
    result = run(tool, {"query_text": "refunds", "filter": {"kind": "faq"}})
    assert result.status == "error" and result.error.kind == "invalid_input"
    assert "does not take a filter" in result.error.message


def test_a_request_context_filter_turns_filtering_on(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll)
    result = run(
        tool, {"query_text": "refunds orders", "filter": {"kind": "howto"}}, filter={"tenant": "acme"}
    )
    assert [s.id for s in result.sources] == ["acme-ship"]


def test_model_filter_compiles_every_operator(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll, enable_filter=True)

    def ids(flt):
        result = run(tool, {"query_text": "refunds orders ship", "filter": flt})
        assert result.ok, result.error
        return sorted(s.id for s in result.sources)

    assert ids({"kind": "faq"}) == ["acme-refund", "globex-refund"]
    assert ids({"year": {"$gte": 2023}}) == ["acme-refund", "globex-refund"]
    assert ids({"year": {"$lt": 2021}}) == ["globex-ship"]
    assert ids({"tenant": {"$in": ["acme"]}, "kind": {"$ne": "faq"}}) == ["acme-ship"]
    assert ids({"$or": [{"year": 2019}, {"year": 2021}]}) == ["acme-ship", "globex-ship"]
    assert ids({"page_span.first_page": {"$exists": True}}) == ["acme-refund"]
    assert ids({"source_display_name": {"$like": "%.pdf"}}) == ["acme-refund"]
    assert ids({"$nor": [{"kind": "faq"}]}) == ["acme-ship", "globex-ship"]
    assert ids({"kind": {"$nin": ["faq"]}, "year": {"$not": {"$gt": 2020}}}) == ["globex-ship"]
    assert ids({}) == ["acme-refund", "acme-ship", "globex-refund", "globex-ship"]


def test_filter_depth_and_size_limits(kb):
    store, coll = kb
    tool = create_vector_query_tool(
        store=store,
        collection=coll,
        enable_filter=True,
        limits={"max_filter_depth": 3, "max_filter_conditions": 5},
    )
    deep = {"$and": [{"$and": [{"$and": [{"$and": [{"kind": "faq"}]}]}]}]}
    result = run(tool, {"query_text": "x", "filter": deep})
    assert result.error.code == "E_VECTOR_STORE_INVALID_FILTER" and "deeper" in result.error.message
    wide = {"$or": [{"year": y} for y in range(10)]}
    result = run(tool, {"query_text": "x", "filter": wide})
    assert result.error.code == "E_VECTOR_STORE_INVALID_FILTER" and "more than 5" in result.error.message


def test_declared_filter_fields_restrict_and_describe(kb):
    store, coll = kb
    tool = create_vector_query_tool(
        store=store,
        collection=coll,
        enable_filter=True,
        filter_fields={"kind": "string: faq or howto", "year": "number", "page_span": "pages"},
    )
    description = tool.input_schema["properties"]["filter"]["description"]
    assert "- kind: string: faq or howto" in description and "$gte" in description
    assert "tenant" not in description
    assert (
        run(tool, {"query_text": "refunds", "filter": {"page_span.last_page": 4}}).sources[0].id
        == "acme-refund"
    )
    refused = run(tool, {"query_text": "refunds", "filter": {"$or": [{"kind": "faq"}, {"tenant": "globex"}]}})
    assert refused.error.code == "E_VECTOR_STORE_UNKNOWN_FIELD"
    assert "kind, page_span, year" in refused.error.hint


def test_filter_fields_auto_reads_the_collection(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll, enable_filter=True, filter_fields="auto")
    # For a known request (here: no guard at all) the values seen are shown too.
    description = tool.input_schema_for_sync({})["properties"]["filter"]["description"]
    assert "- kind: string; values seen: 'faq', 'howto'" in description
    assert "- year: number" in description and "- page_span.first_page: number" in description
    # The static schema may serve any request, so without a creation-time guard it shows keys only.
    static = tool.input_schema["properties"]["filter"]["description"]
    assert "- kind: string\n" in static and "values seen" not in static
    unknown = run(tool, {"query_text": "refunds", "filter": {"color": "red"}})
    assert unknown.error.code == "E_VECTOR_STORE_UNKNOWN_FIELD" and "color" in unknown.error.message
    # With a resolver the keys are read per request, from the store the request resolves.
    dynamic = create_vector_query_tool(store=lambda ctx: store, enable_filter=True)
    schema = dynamic.input_schema_for_sync({"collection": coll})
    assert "- kind: string; values seen: 'faq', 'howto'" in schema["properties"]["filter"]["description"]
    assert (
        "Only the collection's own metadata keys"
        in dynamic.input_schema["properties"]["filter"]["description"]
    )


def test_auto_filter_fields_reveal_nothing_outside_the_guard(kb):
    store, coll = kb
    tool = create_vector_query_tool(
        store=store,
        collection=coll,
        enable_filter=True,
        filter_fields="auto",
        guard={"tenant": "acme"},
    )
    shown = json.dumps(tool.to_openai_tool())
    # Neither the guard's key nor any value from another tenant's rows reaches the model.
    assert "tenant" not in shown and "globex" not in shown and "Oslo" not in shown
    assert (
        "- kind: string; values seen: 'faq', 'howto'"
        in tool.input_schema["properties"]["filter"]["description"]
    )


# -- top_k ----------------------------------------------------------------------------------------


def test_top_k_default_clamp_and_report(kb):
    store, coll = kb
    tool = create_vector_query_tool(
        store=store, collection=coll, settings={"top_k": 2}, limits={"max_top_k": 3}
    )
    assert tool.input_schema["properties"]["top_k"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 3,
        "default": 2,
        "description": tool.input_schema["properties"]["top_k"]["description"],
    }
    assert len(run(tool, {"query_text": "refunds"}).sources) == 2
    clamped = run(tool, {"query_text": "refunds", "top_k": 500})
    assert clamped.top_k == 3 and len(clamped.sources) == 3
    assert any("500" in n and "maximum of 3" in n for n in clamped.notes)
    low = run(tool, {"query_text": "refunds", "top_k": 0})
    assert low.top_k == 1 and len(low.sources) == 1 and any("below 1" in n for n in low.notes)
    assert run(tool, {"query_text": "refunds", "top_k": 2.0}).top_k == 2
    # The host's request context overrides the model's top_k (and is still clamped).
    assert run(tool, {"query_text": "refunds", "top_k": 3}, top_k=1).top_k == 1
    forced = run(tool, {"query_text": "refunds"}, top_k=99)
    assert forced.top_k == 3 and forced.notes


# -- schema and export ------------------------------------------------------------------------


def test_input_schema_and_openai_export(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll, enable_filter=True)
    schema = tool.input_schema
    assert schema["type"] == "object" and schema["required"] == ["query_text"]
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == {"query_text", "top_k", "filter"}
    assert schema["properties"]["filter"]["type"] == "object"  # an object, never a JSON string
    assert tool.id == f"VectorQuery lancedb {coll} Tool"
    assert tool.description == DEFAULT_DESCRIPTION
    exported = tool.to_openai_tool()
    assert exported["type"] == "function"
    fn = exported["function"]
    assert fn["name"] == f"VectorQuery_lancedb_{coll}_Tool"
    assert fn["description"] == DEFAULT_DESCRIPTION and fn["parameters"] == schema
    json.dumps(exported)
    assert tool.to_openai_tool(name="search_kb")["function"]["name"] == "search_kb"
    custom = create_vector_query_tool(
        store=store, collection=coll, id="kb-search", description="Search policies"
    )
    assert (custom.id, custom.name, custom.description) == ("kb-search", "kb-search", "Search policies")


def test_schema_validates_real_arguments(kb):
    jsonschema = pytest.importorskip("jsonschema")
    store, coll = kb
    tool = create_vector_query_tool(
        store=store, collection=coll, enable_filter=True, limits={"max_top_k": 20}
    )
    jsonschema.validate({"query_text": "a", "top_k": 5, "filter": {"kind": "faq"}}, tool.input_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query_text": "a", "filter": '{"kind": "faq"}'}, tool.input_schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query_text": "a", "top_k": 21}, tool.input_schema)


# -- async, request context, resolver ---------------------------------------------------------


def test_async_execute_matches_sync(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll)

    async def main():
        return await tool.execute({"query_text": "orders ship", "top_k": 2})

    result = asyncio.run(main())
    assert isinstance(result, VectorQueryResult)
    assert result == run(tool, {"query_text": "orders ship", "top_k": 2})


def test_collection_from_request_context_and_missing_everywhere(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store)
    assert tool.id == "VectorQuery lancedb dynamic Tool"
    missing = run(tool, {"query_text": "refunds"})
    assert missing.error.code == "E_TOOL_OPTION_MISSING" and missing.error.kind == "configuration"
    assert "collection" in missing.error.message
    assert run(tool, {"query_text": "refunds"}, collection=coll).status == "ok"


def test_store_resolver_per_tenant_and_its_errors(collection):
    stores = {}
    for tenant in ("acme", "globex"):
        vs = create_vector_store(uri="memory://", encoder=HashEncoder(128), auto_optimize=None)
        vs(collection).upsert_sync([{"id": f"{tenant}-doc", "document": f"{tenant} handbook refunds"}])
        stores[tenant] = vs

    async def resolver(ctx):
        return stores[ctx["tenant_id"]]

    tool = create_vector_query_tool(store=resolver, collection=collection)
    assert run(tool, {"query_text": "refunds"}, tenant_id="globex").sources[0].id == "globex-doc"
    assert run(tool, {"query_text": "refunds"}, tenant_id="acme").sources[0].id == "acme-doc"
    failed = run(tool, {"query_text": "refunds"})
    assert failed.error.code == "E_TOOL_STORE_RESOLVER_FAILED" and failed.error.kind == "configuration"
    assert "KeyError" not in failed.error.message and "host's log" in failed.error.message
    wrong = create_vector_query_tool(store=lambda ctx: "not a store", collection=collection)
    assert "not a VectorStore" in run(wrong, {"query_text": "x"}).error.message


def test_bad_request_context_values_are_configuration_errors(kb):
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll)
    cases = [
        {"include_vectors": "yes"},
        {"top_k": "3"},
        {"reranker": {"weights": {"semantic": 0.5, "vector": 0.5}}},
        {"database_config": {"pinecone": {"namespace": "x"}}},
        {"database_config": {"nprobes": 0}},
        {"database_config": {"min_score": 1.5}},
        {"database_config": {"probes": 3}},
        {"hybrid": 3},
        {"settings": {"top_k": 0}},
        {"settings": {"hybird": True}},
        {"settings": "hybrid"},
        {"filter": "tenant = 'acme'"},
        {"filter": {}},
        {"collection": ""},
    ]
    for ctx in cases:
        result = run(tool, {"query_text": "refunds"}, **ctx)
        assert result.status == "error" and result.error.kind == "configuration", ctx


# -- reranker, database config, encoder, provider options --------------------------------------


def test_database_config_knobs_reach_the_query(kb):
    store, coll = kb
    vector_only = {"hybrid": False}  # min_score reads the dense similarity, which is the score here
    all_rows = run(
        create_vector_query_tool(store=store, collection=coll, settings=vector_only),
        {"query_text": "refunds paid"},
    )
    cutoff = sorted(s.score for s in all_rows.sources)[-2]
    knobs = {"nprobes": 4, "refine_factor": 2, "ef": 32, "prefilter": False, "min_score": cutoff}
    tool = create_vector_query_tool(store=store, collection=coll, settings={**vector_only, **knobs})
    assert tool.options.settings.ef == 32 and tool.options.settings.prefilter is False
    strict = run(tool, {"query_text": "refunds paid"})
    assert strict.ok and len(strict.sources) == 2 and all(s.score >= cutoff for s in strict.sources)
    # Mastra's database_config, per request (also under a "lancedb" key), merges into the settings.
    loose = run(tool, {"query_text": "refunds paid"}, database_config={"min_score": 0.0})
    assert len(loose.sources) == 4
    assert (
        len(
            run(tool, {"query_text": "refunds paid"}, database_config={"lancedb": {"min_score": 0.0}}).sources
        )
        == 4
    )
    with pytest.raises(ToolUsageError) as bad:
        create_vector_query_tool(store=store, collection=coll, settings={"nprobes": 0})
    assert bad.value.code == "E_INVALID_TOOL_CONFIG"
    assert bad.value.option == "settings.nprobes"


class RecordingEncoder:
    """A real encoder that accepts provider options and records them."""

    def __init__(self):
        self.inner = HashEncoder(128)
        self.name = self.inner.name
        self.dimension = 128
        self.seen = []

    def encode(self, texts, *, kind, provider_options=None):
        self.seen.append((kind, provider_options))
        return self.inner.encode(texts, kind=kind)


def test_tool_encoder_and_provider_options(kb):
    store, coll = kb
    encoder = RecordingEncoder()
    tool = create_vector_query_tool(
        store=store, collection=coll, encoder=encoder, provider_options={"hash": {"dimensions": 128}}
    )
    result = run(tool, {"query_text": "refunds paid", "top_k": 1})
    assert result.sources[0].id == "acme-refund"
    assert encoder.seen == [("query", {"hash": {"dimensions": 128}})]
    run(tool, {"query_text": "refunds"}, provider_options={"hash": {"dimensions": 64}})
    assert encoder.seen[-1] == ("query", {"hash": {"dimensions": 64}})
    with pytest.raises(ToolUsageError, match="provider_options") as exc_info:
        create_vector_query_tool(store=store, collection=coll, provider_options={"x": {"a": 1}})
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    other = HashEncoder(128)
    other.name = "another-model"
    mismatch = run(create_vector_query_tool(store=store, collection=coll, encoder=other), {"query_text": "x"})
    # The store's meaning (an encoder mismatch), and a hint that names both encoders.
    assert mismatch.error.code == "E_VECTOR_STORE_ENCODER_MISMATCH"
    assert mismatch.error.kind == "configuration"
    assert "another-model" in mismatch.error.message
    assert "another-model" in mismatch.error.hint and store.encoder.name in mismatch.error.hint


def test_provider_options_reach_the_stores_own_encoder(tmp_path):
    """Without encoder=, provider options go to the store's encoder when it takes them."""
    encoder = RecordingEncoder()
    vs = create_vector_store(uri=str(tmp_path / "db"), encoder=encoder, auto_optimize=None)
    vs("kb").upsert_sync([{"id": "r", "document": "refunds are paid in five days"}])
    tool = create_vector_query_tool(store=vs, collection="kb", provider_options={"hash": {"dimensions": 128}})
    assert run(tool, {"query_text": "refunds", "top_k": 1}).sources[0].id == "r"
    assert encoder.seen[-1] == ("query", {"hash": {"dimensions": 128}})
    run(tool, {"query_text": "refunds"}, provider_options={"hash": {"dimensions": 64}})
    assert encoder.seen[-1] == ("query", {"hash": {"dimensions": 64}})


def test_creation_errors_raise():
    vs = create_vector_store(uri="memory://", encoder=HashEncoder())
    bad = [
        {"store": "memory://"},
        {"store": vs, "collection": ""},
        {"store": vs, "limits": {"max_top_k": 0}},
        {"store": vs, "limits": {"max_query_chars": True}},
        {"store": vs, "limits": {"fields_ttl": -1}},
        {"store": vs, "limits": {"max_top_k": 5, "maximum": 9}},
        {"store": vs, "limits": 50},
        {"store": vs, "settings": {"top_k": 60}, "limits": {"max_top_k": 50}},
        {"store": vs, "settings": {"hybrid": "yes"}},
        {"store": vs, "settings": 5},
        {"store": vs, "enable_filter": "yes"},
        {"store": vs, "guard": {}},
        {"store": vs, "guard": {"tenant": {"$bogus": 1}}},
        {"store": vs, "filter_fields": "kind"},
        {"store": vs, "filter_fields": ["bad key!"]},
        {"store": vs, "encoder": object()},
        {"store": vs, "description": ""},
    ]
    for kwargs in bad:
        with pytest.raises(ToolUsageError) as exc_info:
            create_vector_query_tool(**kwargs)
        assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"


def test_guard_nodes_and_records_without_document(store, collection):
    store(collection).upsert_sync(
        [
            {
                "id": "v1",
                "vector": HashEncoder(128).encode(["alpha beta"], kind="document")[0],
                "metadata": {"text": "alpha beta", "t": "x"},
            },
            {"id": "v2", "document": "alpha gamma", "metadata": {"t": "y"}},
        ]
    )
    tool = create_vector_query_tool(
        store=store, collection=collection, guard=condition("metadata.t", "eq", "x")
    )
    result = run(tool, {"query_text": "alpha"})
    assert [s.id for s in result.sources] == ["v1"]
    # The chunk text falls back to metadata.text when a record has no document.
    assert result.relevant_context == ["alpha beta"]
    assert isinstance(result.sources[0].score, float) and not np.isnan(result.sources[0].score)


def test_the_factory_takes_one_settings_value_and_few_parameters(kb):
    import inspect

    from turnkit.batteries.vector import RetrievalSettings

    params = inspect.signature(create_vector_query_tool).parameters
    assert len(params) <= 12
    # No retrieval knob has a parameter of its own: they are all RetrievalSettings fields.
    assert not set(params) & set(RetrievalSettings.model_fields)
    store, coll = kb
    assert create_vector_query_tool(store=store, collection=coll).options.settings == RetrievalSettings()
    given = RetrievalSettings(top_k=2, hybrid=False)
    tool = create_vector_query_tool(store=store, collection=coll, settings=given)
    assert tool.options.settings is given
    # A request merges into the settings: the keys it sets change, the others stay the tool's.
    merged = tool.options.for_request({"hybrid": 0.3, "database_config": {"ef": 16}}, tool.id)
    assert merged.settings.hybrid.alpha == 0.3 and merged.settings.ef == 16 and merged.settings.top_k == 2
    assert merged.settings.collapse_duplicates is True
