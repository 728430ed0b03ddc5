"""The LlamaIndex retriever, run inside LlamaIndex's own query engine with its MockLLM (offline)."""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import NodeWithScore, TextNode

import turnkit.integrations.llamaindex as adapter
from turnkit.batteries.vector import VectorMatch, VectorStore
from turnkit.integrations.llamaindex import TurnkitRetriever
from turnkit.tools import (
    ToolRuntimeError,
    create_vector_query_tool,
)

from .conftest import QUESTION, TENANTS


def test_all_lists_the_public_names() -> None:
    assert adapter.__all__ == ["TurnkitRetriever", "TurnkitVectorStore"]


def test_retriever_returns_nodes_with_scores_inside_the_guard(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb")
    retriever = TurnkitRetriever(tool, k=5, guard={"tenant": TENANTS[0]}, trust_tier="first-party")
    nodes = retriever.retrieve("refund policy")
    assert all(isinstance(n, NodeWithScore) and isinstance(n.node, TextNode) for n in nodes)
    assert {n.node.node_id for n in nodes} == {"a1", "a2"}
    first = nodes[0]
    assert first.node.node_id == "a1" and first.score is not None and 0 <= first.score <= 1
    assert first.node.get_content() == "refund policy: refunds are paid within 5 days"
    assert first.node.metadata == {
        "kind": "faq",
        "source_display_name": "policy.md",
        "trust_tier": "first-party",
    }


@pytest.mark.anyio
async def test_query_engine_prompt_never_shows_the_guard(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb")
    retriever = TurnkitRetriever(tool, k=5, guard={"tenant": TENANTS[1]})
    # MockLLM answers with the prompt it was given, so the answer is exactly what the model saw.
    engine = RetrieverQueryEngine.from_args(retriever, llm=MockLLM())
    for response in (engine.query("refund policy"), await engine.aquery("refund policy")):
        assert [n.node.node_id for n in response.source_nodes] == ["b1"]
        assert "refunds are paid within 9 days" in str(response)
        assert "5 days" not in str(response)
        assert TENANTS[1] not in str(response) and TENANTS[0] not in str(response)


def test_failed_search_raises_with_the_code(shared_store: VectorStore) -> None:
    retriever = TurnkitRetriever(create_vector_query_tool(store=shared_store, collection="missing"))
    with pytest.raises(ToolRuntimeError, match="E_VECTOR_STORE_COLLECTION_NOT_FOUND") as exc_info:
        retriever.retrieve("refund")
    assert exc_info.value.code == "E_TOOL_FAILED"


def test_with_no_options_the_retriever_gives_the_default_retrieval(
    copies_store: VectorStore, default_hits: list[VectorMatch]
) -> None:
    retriever = TurnkitRetriever(create_vector_query_tool(store=copies_store, collection="docs"))
    response = RetrieverQueryEngine.from_args(retriever, llm=MockLLM()).query(QUESTION)
    assert [n.node.node_id for n in response.source_nodes] == [m.id for m in default_hits]
    for node, hit in zip(response.source_nodes, default_hits, strict=True):
        copies = [c.metadata["source_display_name"] for c in hit.duplicates]
        assert node.node.metadata.get("duplicates", []) == copies
