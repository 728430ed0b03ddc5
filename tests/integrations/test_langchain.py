"""The LangChain adapters beyond the standard suites: guards, trust tiers, the tool in a tool-calling turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import StructuredTool
from langchain_core.utils.function_calling import convert_to_openai_tool

import turnkit.integrations.langchain as adapter
from turnkit.batteries.vector import VectorMatch, VectorStore
from turnkit.integrations.langchain import (
    TurnkitRetriever,
    TurnkitVectorStore,
    vector_query_structured_tool,
)
from turnkit.tools import (
    ToolRuntimeError,
    create_vector_query_tool,
)

from .conftest import QUESTION, TENANTS, rendered_ids


def test_all_lists_the_public_names() -> None:
    assert adapter.__all__ == sorted(adapter.__all__)
    assert set(adapter.__all__) == {"TurnkitRetriever", "TurnkitVectorStore", "vector_query_structured_tool"}


def _tool_call(args: dict[str, Any]) -> dict[str, Any]:
    """A tool call as LangChain's fake chat model emits it, in one model turn."""
    model = GenericFakeChatModel(
        messages=iter([AIMessage("", tool_calls=[{"name": "kb", "args": args, "id": "c1"}])])
    )
    reply = model.invoke("refund policy?")
    assert isinstance(reply, AIMessage)
    return dict(reply.tool_calls[0], type="tool_call")


def _kb(shared_store: VectorStore, **options: Any) -> StructuredTool:
    tool = create_vector_query_tool(
        store=shared_store, collection="kb", enable_filter=True, filter_fields="any"
    )
    return vector_query_structured_tool(
        tool, guard=lambda configurable: {"tenant": configurable["tenant"]}, name="kb", **options
    )


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_tool_guard_from_config_never_reaches_the_model(shared_store: VectorStore, mode: str) -> None:
    kb = _kb(shared_store, trust_tier="third-party")
    call = _tool_call(
        {"query_text": "refund policy", "filter": {"$or": [{"tenant": TENANTS[1]}, {"kind": "faq"}]}}
    )
    config = {"configurable": {"tenant": TENANTS[0]}}
    message = kb.invoke(call, config) if mode == "sync" else await kb.ainvoke(call, config)
    assert isinstance(message, ToolMessage) and message.status == "success"
    assert 'id="a1"' in message.content and 'id="b1"' not in message.content
    assert '<untrusted_content nonce="' in message.content
    assert [s["id"] for s in message.artifact["sources"]] == ["a1"]
    assert all("tenant" not in s["metadata"] for s in message.artifact["sources"])
    shown = json.dumps([convert_to_openai_tool(kb), message.content, message.artifact])
    assert TENANTS[0] not in shown and TENANTS[1] not in shown


@pytest.mark.anyio
async def test_tool_errors_go_back_to_the_model_with_the_hint(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb", enable_filter=True)
    kb = vector_query_structured_tool(
        tool, trust_tier="first-party", guard=lambda c: {"tenant": c["tenant"]}, name="kb"
    )
    call = _tool_call({"query_text": "refund", "filter": {"colour": "red"}})
    message = await kb.ainvoke(call, {"configurable": {"tenant": TENANTS[0]}})
    assert message.status == "error"
    assert (
        message.content.startswith("E_VECTOR_STORE_UNKNOWN_FIELD")
        and "Filter on these keys only: kind" in message.content
    )
    assert TENANTS[0] not in message.content


def test_retriever_guard_and_metadata(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb")
    retriever = TurnkitRetriever(tool=tool, guard={"tenant": TENANTS[1]}, k=5)
    documents = retriever.invoke("refund policy")
    assert [d.id for d in documents] == ["b1"]
    assert "tenant" not in documents[0].metadata and documents[0].metadata["kind"] == "faq"
    assert 0 <= documents[0].metadata["score"] <= 1
    other = retriever.model_copy(update={"guard": {"tenant": TENANTS[0]}})
    assert {d.id for d in other.invoke("refund policy")} == {"a1", "a2"}
    assert other.invoke("refund", k=1)[0].metadata["source_display_name"] == "policy.md"


def test_retriever_failure_raises_with_the_code(shared_store: VectorStore) -> None:
    retriever = TurnkitRetriever(tool=create_vector_query_tool(store=shared_store, collection="missing"))
    with pytest.raises(
        ToolRuntimeError, match=r"^\[E_TOOL_FAILED\] E_VECTOR_STORE_COLLECTION_NOT_FOUND: "
    ) as exc_info:
        retriever.invoke("refund")
    assert exc_info.value.code == "E_TOOL_FAILED"


@pytest.mark.anyio
async def test_vector_store_guard_scopes_reads_and_deletes(shared_store: VectorStore) -> None:
    scoped = TurnkitVectorStore(shared_store, "kb", guard={"tenant": TENANTS[0]})
    found = scoped.similarity_search("refund policy", k=5)
    assert {d.id for d in found} == {"a1", "a2"} and all("tenant" not in d.metadata for d in found)
    assert [d.id for d in await scoped.asimilarity_search("refund", k=5, filter={"kind": "howto"})] == ["a2"]
    assert scoped.get_by_ids(["b1", "a1"])[0].id == "a1" and len(scoped.get_by_ids(["b1"])) == 0
    scoped.delete(["b1"])  # another tenant's record: outside the guard, untouched
    assert shared_store("kb").get_sync(["b1"])[0].id == "b1"
    pairs = scoped.similarity_search_with_relevance_scores("refund policy", k=1)
    assert pairs[0][0].id == "a1" and 0 <= pairs[0][1] <= 1
    retrieved = scoped.as_retriever(search_kwargs={"k": 1}).invoke("shipping")
    assert [d.id for d in retrieved] == ["a2"]


@pytest.mark.anyio
async def test_with_no_options_the_adapters_give_the_default_retrieval(
    copies_store: VectorStore, default_hits: list[VectorMatch]
) -> None:
    tool = create_vector_query_tool(store=copies_store, collection="docs")
    documents = TurnkitRetriever(tool=tool).invoke(QUESTION)
    assert [d.id for d in documents] == [m.id for m in default_hits]
    for document, hit in zip(documents, default_hits, strict=True):
        copies = [c.metadata["source_display_name"] for c in hit.duplicates]
        assert document.metadata.get("duplicates", []) == copies
    kb = vector_query_structured_tool(tool, trust_tier="first-party", name="kb")
    message = await kb.ainvoke(_tool_call({"query_text": QUESTION}))
    assert rendered_ids(message.content) == [m.id for m in default_hits]
    assert [s["id"] for s in message.artifact["sources"]] == [m.id for m in default_hits]
