"""Ranking and hybrid options passed through the MCP server, with the real in-process client."""

import json
import re

import mcp
import pytest

from turnkit import ScriptedModel
from turnkit.mcp import create_mcp_server

pytestmark = pytest.mark.anyio

WEIGHTS = {"semantic": 0.6, "vector": 0.3, "position": 0.1}


def judge_liking(word):
    def reply(messages):
        passages = re.findall(r"^\[(\d+)\] (.*)$", messages[-1].content, re.M)
        return json.dumps({n: 1.0 if word in text else 0.0 for n, text in passages})

    return ScriptedModel(reply)


async def test_server_reranks_and_searches_hybrid(mem_store):
    judge = judge_liking("Lyon")
    server = create_mcp_server(
        mem_store,
        collections="kb",
        # One settings value for both tools: vector_query reranks every call with it.
        settings={"top_k": 1, "hybrid": 0.5, "rerank": {"weights": WEIGHTS}, "rerank_model": judge},
        models={"judge": judge},
    )
    async with mcp.Client(server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "ranking.llm_ranker.model_name: judge" in tools["retrieve_contexts"].description
        hit = await client.call_tool("vector_query", {"query_text": "refunds paid"})
        body = hit.structured_content
        assert not hit.is_error and [s["id"] for s in body["sources"]] == ["acme-ship"]
        assert any(n.startswith("Reranked") for n in body["notes"])
        ranked = await client.call_tool(
            "retrieve_contexts",
            {
                "query": {
                    "text": "refunds paid",
                    "rag_retrieval_config": {
                        "top_k": 1,
                        "ranking": {"llm_ranker": {"model_name": "judge"}},
                        "hybrid_search": {"alpha": 0.5},
                    },
                }
            },
        )
        assert not ranked.is_error
        texts = [c["text"] for c in ranked.structured_content["contexts"]["contexts"]]
        assert texts == ["Orders ship from Lyon within 2 days."]
        unknown = await client.call_tool(
            "retrieve_contexts",
            {
                "query": {
                    "text": "x",
                    "rag_retrieval_config": {"ranking": {"llm_ranker": {"model_name": "g"}}},
                }
            },
        )
        assert unknown.is_error
        error = unknown.structured_content["error"]
        assert error["code"] == "E_TOOL_UNKNOWN_MODEL" and "judge" in error["hint"]
        # The server keeps serving after the error.
        again = await client.call_tool("vector_query", {"query_text": "orders"})
        assert not again.is_error
    assert len(judge.calls) == 3
