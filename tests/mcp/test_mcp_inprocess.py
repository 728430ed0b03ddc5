"""The MCP server through the real `mcp` client, in process."""

import json

import mcp
import pytest
from mcp import MCPError
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND

from turnkit.batteries.vector import HashEncoder, condition, create_vector_store
from turnkit.mcp import create_mcp_server
from turnkit.mcp._encoders import spec_encoder
from turnkit.mcp._errors import MCPUsageError
from turnkit.mcp._tools import READ_ONLY_ANNOTATIONS, WRITE_ANNOTATIONS

pytestmark = pytest.mark.anyio


async def raw_request(client, method, params):
    # The public client only sends well-formed requests; a malformed one needs the dispatcher.
    return await client.session._dispatcher.send_raw_request(method, params, {})


async def test_tools_schemas_and_annotations(mem_store):
    server = create_mcp_server(mem_store, collections="kb")
    async with mcp.Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == {"vector_query", "retrieve_contexts"}
    for tool in tools.values():
        ann = tool.annotations
        assert (ann.read_only_hint, ann.idempotent_hint, ann.destructive_hint, ann.open_world_hint) == (
            True,
            True,
            False,
            False,
        )
    vq = tools["vector_query"].input_schema
    assert vq["required"] == ["query_text"] and set(vq["properties"]) == {"query_text", "top_k", "filter"}
    # Filterable keys are read from the collection; the tenant key is offered, the guard never is.
    assert "- kind: string; values seen: 'faq', 'howto'" in vq["properties"]["filter"]["description"]
    rc = tools["retrieve_contexts"]
    assert rc.input_schema["required"] == ["query"]
    assert rc.output_schema["properties"]["contexts"]
    assert "kb" in rc.description and "distance" in rc.description


async def test_vector_query_and_retrieve_contexts_calls(mem_store):
    server = create_mcp_server(mem_store, collections="kb")
    async with mcp.Client(server) as client:
        hit = await client.call_tool("vector_query", {"query_text": "refunds paid", "top_k": 1})
        assert not hit.is_error
        body = hit.structured_content
        assert body["status"] == "ok"
        assert body["relevant_context"][0] == "Refunds are paid within 5 business days."
        assert body["sources"][0]["page_span"] == {"first_page": 2, "last_page": 2}
        assert json.loads(hit.content[0].text) == body
        none = await client.call_tool(
            "vector_query", {"query_text": "refunds", "filter": {"kind": "nothing"}}
        )
        assert not none.is_error and none.structured_content["status"] == "no_results"
        ctx = await client.call_tool(
            "retrieve_contexts",
            {
                "query": {
                    "text": "refunds paid",
                    "rag_retrieval_config": {"top_k": 2, "filter": {"metadata_filter": "year >= 2024"}},
                },
                "vertex_rag_store": {
                    "rag_resources": [{"rag_corpus": "projects/p/locations/l/ragCorpora/kb"}]
                },
            },
        )
        assert not ctx.is_error
        contexts = ctx.structured_content["contexts"]["contexts"]
        assert [c["text"] for c in contexts] == ["Refunds are paid within 30 business days."]
        assert 0 <= contexts[0]["score"] <= 2


async def test_retrieve_contexts_answers_in_the_seeds_rest_spelling(mem_store):
    """A client written against Vertex's REST JSON reads sourceUri, sourceDisplayName and pageSpan."""
    server = create_mcp_server(mem_store, collections="kb")
    async with mcp.Client(server) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        defs = listed["retrieve_contexts"].output_schema["$defs"]
        rag_context = set(defs["RagContext"]["properties"])
        # Vertex's fields, and turnkit's duplicates (the copies collapsed into a context).
        assert rag_context == {"sourceUri", "sourceDisplayName", "text", "score", "chunk", "duplicates"}
        assert set(defs["CollapsedCopy"]["properties"]) == {"id", "sourceUri", "sourceDisplayName"}
        assert set(defs["PageSpan"]["properties"]) == {"firstPage", "lastPage"}
        ctx = await client.call_tool(
            "retrieve_contexts", {"query": {"text": "refunds paid", "ragRetrievalConfig": {"topK": 3}}}
        )
    assert not ctx.is_error
    contexts = ctx.structured_content["contexts"]["contexts"]
    paged = next(c for c in contexts if "chunk" in c and "pageSpan" in c["chunk"])
    assert paged["sourceUri"] == "file:///kb/policy.pdf"
    assert paged["sourceDisplayName"] == "policy.pdf"
    assert paged["chunk"]["pageSpan"] == {"firstPage": 2, "lastPage": 2}
    text = json.dumps(ctx.structured_content)
    assert "source_uri" not in text and "page_span" not in text and "first_page" not in text


async def test_tool_errors_are_structured_and_the_server_keeps_serving(mem_store):
    server = create_mcp_server(mem_store, collections="kb")
    async with mcp.Client(server) as client:
        bad = await client.call_tool("vector_query", {"query_text": 7})
        assert bad.is_error and bad.structured_content["error"]["code"] == "E_TOOL_INVALID_INPUT"
        assert bad.structured_content["error"]["kind"] == "invalid_input"
        op = await client.call_tool("vector_query", {"query_text": "x", "filter": {"kind": {"$where": "1"}}})
        assert (
            op.is_error
            and op.structured_content["error"]["code"] == "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR"
        )
        unknown_key = await client.call_tool("vector_query", {"query_text": "x", "filter": {"colour": "red"}})
        assert unknown_key.structured_content["error"]["code"] == "E_VECTOR_STORE_UNKNOWN_FIELD"
        grammar = await client.call_tool(
            "retrieve_contexts",
            {"query": {"text": "x", "rag_retrieval_config": {"filter": {"metadata_filter": "1=1 --"}}}},
        )
        assert (
            grammar.is_error
            and grammar.structured_content["error"]["code"] == "E_VECTOR_STORE_INVALID_FILTER"
        )
        corpus = await client.call_tool(
            "retrieve_contexts",
            {"query": {"text": "x"}, "vertex_rag_store": {"rag_resources": [{"rag_corpus": "other"}]}},
        )
        assert corpus.structured_content["error"]["code"] == "E_TOOL_COLLECTION_NOT_ALLOWED"
        missing_tool = await client.call_tool("no_such_tool", {})
        assert missing_tool.is_error
        # Malformed protocol requests are JSON-RPC errors, not crashes.
        with pytest.raises(MCPError) as info:
            await raw_request(client, "tools/frobnicate", None)
        assert info.value.error.code == METHOD_NOT_FOUND
        for params in (
            {"name": "vector_query", "arguments": "not an object"},
            {"arguments": {}},
            {"name": 5},
        ):
            with pytest.raises(MCPError) as info:
                await raw_request(client, "tools/call", params)
            assert info.value.error.code == INVALID_PARAMS
        ok = await client.call_tool("vector_query", {"query_text": "orders ship", "top_k": 1})
        assert ok.structured_content["sources"][0]["id"] == "acme-ship"


async def test_guard_filter_is_applied_and_never_shown(mem_store):
    server = create_mcp_server(mem_store, collections="kb", guard={"tenant": "acme"})
    async with mcp.Client(server) as client:
        listing = json.dumps([t.model_dump(mode="json") for t in (await client.list_tools()).tools])
        assert "acme" not in listing and "guard" not in listing
        for flt in ({}, {"tenant": "globex"}, {"$or": [{"tenant": "globex"}, {"tenant": {"$ne": "x"}}]}):
            r = await client.call_tool(
                "vector_query", {"query_text": "refunds paid", "top_k": 10, "filter": flt}
            )
            sources = r.structured_content.get("sources", [])
            assert all(s["id"].startswith("acme-") and "tenant" not in s["metadata"] for s in sources)
        ctx = await client.call_tool(
            "retrieve_contexts",
            {
                "query": {
                    "text": "refunds",
                    "rag_retrieval_config": {"filter": {"metadata_filter": 'tenant = "globex" OR TRUE'}},
                }
            },
        )
        assert {c["text"] for c in ctx.structured_content["contexts"]["contexts"]} == {
            "Refunds are paid within 5 business days.",
            "Orders ship from Lyon within 2 days.",
        }


async def test_write_tools_only_with_the_flag_and_marked_destructive(mem_store):
    async with mcp.Client(create_mcp_server(mem_store, collections="kb")) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"vector_query", "retrieve_contexts"}
        refused = await client.call_tool("store_documents", {"records": [{"id": "x", "text": "y"}]})
        assert refused.is_error
    assert mem_store("kb").count_sync() == 3
    server = create_mcp_server(mem_store, collections="kb", enable_writes=True)
    async with mcp.Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        for name in ("store_documents", "delete_documents"):
            ann = tools[name].annotations
            assert ann.destructive_hint is True and ann.read_only_hint is False
            assert ann.open_world_hint is False
        stored = await client.call_tool(
            "store_documents",
            {"records": [{"id": "new", "text": "Gift cards never expire.", "metadata": {"kind": "faq"}}]},
        )
        assert stored.structured_content == {"inserted": 1, "updated": 0}
        found = await client.call_tool("vector_query", {"query_text": "gift cards expire", "top_k": 1})
        assert found.structured_content["sources"][0]["id"] == "new"
        bad = await client.call_tool("store_documents", {"records": [{"id": "", "text": "x"}]})
        assert bad.is_error and bad.structured_content["error"]["kind"] == "invalid_input"
        deleted = await client.call_tool("delete_documents", {"ids": ["new", "missing"]})
        assert deleted.structured_content == {"deleted": 1}
        assert (await client.call_tool("delete_documents", {"ids": []})).is_error
    assert mem_store("kb").count_sync() == 3


async def test_writes_respect_the_guard(mem_store):
    server = create_mcp_server(mem_store, collections="kb", enable_writes=True, guard={"tenant": "acme"})
    async with mcp.Client(server) as client:
        outside = await client.call_tool(
            "store_documents", {"records": [{"id": "x", "text": "y", "metadata": {"tenant": "globex"}}]}
        )
        assert outside.is_error
        globex = condition("metadata.tenant", "eq", "globex")
        before = mem_store("kb").where(globex).get_sync(["globex-refund"])
        overwrite = await client.call_tool(
            "store_documents",
            {"records": [{"id": "globex-refund", "text": "mine now", "metadata": {"tenant": "acme"}}]},
        )
        # Stored in acme's scope like any insert (no tenant learns another's ids); globex's row is untouched.
        assert overwrite.structured_content == {"inserted": 1, "updated": 0}
        assert mem_store("kb").where(globex).get_sync(["globex-refund"]) == before
        mine = await client.call_tool("vector_query", {"query_text": "mine now", "top_k": 5})
        assert "mine now" in str(mine.structured_content)
        deleted = await client.call_tool("delete_documents", {"ids": ["globex-refund", "acme-ship"]})
        assert deleted.structured_content == {"deleted": 2}  # acme's own globex-refund, and acme-ship
    assert mem_store("kb").where(globex).get_sync(["globex-refund"]) == before
    assert {m.id for m in mem_store("kb").select("id").search_sync()} == {"acme-refund", "globex-refund"}


async def test_several_collections_take_a_collection_argument(disk_store):
    uri, _ = disk_store
    server = create_mcp_server(uri=uri, encoder="hash:64")
    async with mcp.Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        prop = tools["vector_query"].input_schema["properties"]["collection"]
        assert prop["enum"] == ["kb", "notes"]
        notes = await client.call_tool("vector_query", {"collection": "notes", "query_text": "refunds"})
        assert [s["id"] for s in notes.structured_content["sources"]] == ["n1"]
        missing = await client.call_tool("vector_query", {"query_text": "refunds"})
        assert missing.is_error and missing.structured_content["error"]["code"] == "E_TOOL_INVALID_INPUT"
        ctx = await client.call_tool(
            "retrieve_contexts",
            {"query": {"text": "refunds"}, "vertex_rag_store": {"rag_resources": [{"rag_corpus": "notes"}]}},
        )
        assert len(ctx.structured_content["contexts"]["contexts"]) == 1


def test_server_configuration_errors(disk_store, mem_store):
    uri, _ = disk_store
    with pytest.raises(MCPUsageError) as exc_info:
        create_mcp_server()
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    with pytest.raises(MCPUsageError) as exc_info:
        create_mcp_server(mem_store, uri=uri)
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    with pytest.raises(MCPUsageError) as exc_info:
        create_mcp_server(mem_store, encoder="hash")
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    with pytest.raises(MCPUsageError) as exc_info:
        create_mcp_server(uri=uri, encoder="bert")
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    with pytest.raises(MCPUsageError) as exc_info:
        create_mcp_server(uri=uri, collections=[])
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    with pytest.raises(MCPUsageError, match="No database at") as exc_info:
        create_mcp_server(uri=uri + "-missing")
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    create_vector_store(uri=uri + "-empty").list_collections_sync()  # an existing, empty database
    with pytest.raises(MCPUsageError, match="no collections") as exc_info:
        create_mcp_server(uri=uri + "-empty")
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    assert spec_encoder("hash:32").dimension == 32
    assert isinstance(spec_encoder("HASH"), HashEncoder)
    assert READ_ONLY_ANNOTATIONS.read_only_hint and WRITE_ANNOTATIONS.destructive_hint
