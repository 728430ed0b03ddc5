"""MCP lists the keys every other surface lists, and takes ``kind`` and ``metadata.kind`` alike."""

import mcp
import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.mcp import create_mcp_server
from turnkit.tools import create_vector_query_tool

pytestmark = pytest.mark.anyio

# The PDF chunks come after the first 500 records, where a small sample stops.
MARKDOWN = [
    {
        "id": f"md{i}",
        "document": f"Markdown page {i} about setup",
        "metadata": {"kind": "md", "path": f"p{i}.md"},
    }
    for i in range(600)
]
PDF = [
    {
        "id": f"pdf{i}",
        "document": f"PDF manual page {i} about refunds",
        "metadata": {"kind": "pdf", "page_span": {"first_page": i, "last_page": i}},
    }
    for i in range(3)
]


@pytest.fixture
def store():
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(64), auto_optimize=None)
    vs("docs").upsert_sync(MARKDOWN + PDF)
    return vs


async def test_the_listing_is_the_tools_listing(store) -> None:
    server = create_mcp_server(store, collections="docs")
    async with mcp.Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    listed = tools["vector_query"].input_schema["properties"]["filter"]["description"]
    assert "- kind: string; values seen: 'md', 'pdf'" in listed
    assert "- page_span.first_page: number" in listed
    # The pydantic-ai, LangChain, LlamaIndex and OpenAI Agents adapters describe a request this way.
    tool = create_vector_query_tool(store=store, collection="docs", enable_filter=True)
    schema = await tool.input_schema_for({})
    assert schema["properties"]["filter"]["description"] == listed


async def test_both_spellings_and_did_you_mean(store) -> None:
    server = create_mcp_server(store, collections="docs")
    async with mcp.Client(server) as client:
        bare = await client.call_tool("vector_query", {"query_text": "refunds", "filter": {"kind": "pdf"}})
        full = await client.call_tool(
            "vector_query", {"query_text": "refunds", "filter": {"metadata.kind": "pdf"}}
        )
        near = await client.call_tool("vector_query", {"query_text": "refunds", "filter": {"knd": "pdf"}})
        text = await client.call_tool(
            "retrieve_contexts",
            {
                "query": {
                    "text": "refunds",
                    "rag_retrieval_config": {"filter": {"metadata_filter": 'metadata.kind = "pdf"'}},
                }
            },
        )
        typo = await client.call_tool(
            "retrieve_contexts",
            {
                "query": {
                    "text": "refunds",
                    "rag_retrieval_config": {"filter": {"metadata_filter": 'knd = "pdf"'}},
                }
            },
        )
    ids = sorted(s["id"] for s in bare.structured_content["sources"])
    assert ids == sorted(s["id"] for s in full.structured_content["sources"]) == ["pdf0", "pdf1", "pdf2"]
    assert near.is_error and "Did you mean 'kind'?" in near.structured_content["error"]["hint"]
    assert len(text.structured_content["contexts"]["contexts"]) == 3
    error = typo.structured_content["error"]
    assert typo.is_error and error["code"] == "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND"
    assert error["kind"] == "invalid_input" and "Did you mean 'kind'?" in error["hint"]
