"""One request with no ranking options through every surface: each answers turnkit's default.

The default is `RetrievalSettings()`: hybrid search with turnkit's fusion and duplicate texts
collapsed. The corpus holds a page twice (its Markdown source and its HTML rendering) and a
question that vector search alone answers differently, so a surface that falls back to
vector-only search, or that skips the collapse, gives other ids.
"""

from __future__ import annotations

import gc
import json
import os
import re
import subprocess
import sys

import mcp
import pytest

from turnkit import InMemoryMessageStore, Message, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import (
    WordLlamaEncoder,
    create_vector_retrievable_callbacks,
    create_vector_store,
    retrieve_sync,
)
from turnkit.mcp import create_mcp_server
from turnkit.tools import create_vector_query_tool, retrieve_contexts

pytestmark = pytest.mark.anyio

EXIT = (
    "process.exitCode is the number the process exits with when it ends on its own; set it "
    "instead of calling process.exit() so pending writes to stdout finish first."
)
DOCS = {
    "process-md": ("process.md", f"# Process\n\n{EXIT} See [exit codes](exit-codes.md#list)."),
    "process-html": ("process.html", f"Process# {EXIT} See exit codes."),
    "exit-codes": (
        "exit-codes.md",
        "Exit codes: 1 uncaught exception, 9 bad argument, 13 unsettled await.",
    ),
    "events": ("events.md", "An EventEmitter calls every listener of an event in the order they were added."),
    "stdout": (
        "stream.md",
        "Writes to stdout may be asynchronous on a pipe; the process waits for them.",
    ),
    "signals": ("process-signals.md", "Signal events fire when the process receives SIGINT or SIGTERM."),
    "timers": (
        "timers.md",
        "setTimeout schedules a callback once the given milliseconds have passed.",
    ),
    "buffer": ("buffer.md", "A Buffer holds raw bytes outside the JavaScript heap, fixed in size."),
}
QUERY = "what number does my program end with if I set exitCode"
TOP_K = 5  # the settings' default: every surface answers that many when nothing is asked


@pytest.fixture(scope="module", autouse=True)
def _collect_garbage_here():
    # Anything these tests leave unclosed (an event loop, a socket) is reported here, not in a later module.
    yield
    gc.collect()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("default") / "db")
    vs = create_vector_store(uri=uri, encoder=WordLlamaEncoder(), auto_optimize=None)
    vs("kb").upsert_sync(
        [
            {"id": key, "document": text, "metadata": {"source_uri": name, "source_display_name": name}}
            for key, (name, text) in DOCS.items()
        ]
    )
    return uri, vs


@pytest.fixture(scope="module")
def expected(corpus):
    """The default's answer, checked to differ from vector-only search and from uncollapsed hybrid search."""
    _, vs = corpus
    found = retrieve_sync(vs("kb").near_text(QUERY)).matches
    want = [m.id for m in found]
    assert len(want) == TOP_K
    vector = [m.id for m in vs("kb").near_text(QUERY).select("id").limit(TOP_K).search_sync()]
    hybrid = [m.id for m in vs("kb").near_text(QUERY).hybrid().select("id").limit(TOP_K).search_sync()]
    assert want != vector, "the case must tell the default from vector-only search"
    assert {"process-md", "process-html"} <= set(hybrid), "plain hybrid search returns both copies"
    assert len({"process-md", "process-html"} & set(want)) == 1, "the default keeps one copy"
    return want


async def test_retrieval_callbacks(corpus, expected) -> None:
    _, vs = corpus
    callbacks = create_vector_retrievable_callbacks(store=vs, collection="kb", trust_tier="first-party")
    history = InMemoryMessageStore()
    runner = TurnRunner(
        TurnRunnerConfig(
            model=ScriptedModel(["ok"]),
            fetch_messages=history.fetch_messages,
            store_message=history.store_message,
            **callbacks,
        )
    )
    ctx = runner.new_context()
    await history.store_message(ctx, Message(role="user", content=QUERY))
    got = await ctx.fetch_retrievables()
    assert [r.id for r in got] == expected
    copy = next(r for r in got if r.id.startswith("process-"))
    assert len(copy.metadata["duplicates"]) == 1  # the other copy is named, not hidden


async def test_vector_query_tool(corpus, expected) -> None:
    _, vs = corpus
    result = await create_vector_query_tool(store=vs, collection="kb").execute({"query_text": QUERY})
    assert result.status == "ok"
    assert [s.id for s in result.sources] == expected


async def test_retrieve_contexts(corpus, expected) -> None:
    _, vs = corpus
    request = {"vertex_rag_store": {"rag_resources": [{"rag_corpus": "kb"}]}, "query": {"text": QUERY}}
    response = await retrieve_contexts(request, store=vs)
    by_name = {name: key for key, (name, _) in DOCS.items()}
    assert [by_name[c.source_uri] for c in response.contexts.contexts] == expected


async def test_mcp(corpus, expected) -> None:
    _, vs = corpus
    async with mcp.Client(create_mcp_server(vs, collections="kb")) as client:
        hit = await client.call_tool("vector_query", {"query_text": QUERY})
        contexts = await client.call_tool("retrieve_contexts", {"query": {"text": QUERY}})
    assert not hit.is_error and not contexts.is_error
    assert [s["id"] for s in hit.structured_content["sources"]] == expected
    by_name = {name: key for key, (name, _) in DOCS.items()}
    got = [by_name[c["sourceUri"]] for c in contexts.structured_content["contexts"]["contexts"]]
    assert got == expected


def test_turnkit_query(corpus, expected) -> None:
    uri, _ = corpus
    argv = [sys.executable, "-m", "turnkit.cli", "query", QUERY, "--uri", uri, "--collection", "kb", "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)["results"]] == expected


async def test_langchain_retriever(corpus, expected) -> None:
    pytest.importorskip("langchain_core")
    from turnkit.integrations.langchain import TurnkitRetriever

    _, vs = corpus
    retriever = TurnkitRetriever(tool=create_vector_query_tool(store=vs, collection="kb"))
    documents = await retriever.ainvoke(QUERY)
    assert [d.id for d in documents] == expected


async def test_llamaindex_retriever(corpus, expected) -> None:
    pytest.importorskip("llama_index.core")
    from turnkit.integrations.llamaindex import TurnkitRetriever

    _, vs = corpus
    nodes = await TurnkitRetriever(create_vector_query_tool(store=vs, collection="kb")).aretrieve(QUERY)
    assert [n.node.node_id for n in nodes] == expected


def _rendered_ids(text: str) -> list[str]:
    return re.findall(r'<document id="([^"]+)"', text)


async def test_pydantic_ai_tool(corpus, expected) -> None:
    pytest.importorskip("pydantic_ai")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from turnkit.integrations.pydantic_ai import vector_query_tool

    _, vs = corpus

    def model(messages, info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:  # pydantic-ai's own model runner: one call with the question, then answer
            return ModelResponse(parts=[ToolCallPart(info.function_tools[0].name, {"query_text": QUERY})])
        return ModelResponse(parts=[TextPart("done")])

    tool = vector_query_tool(create_vector_query_tool(store=vs, collection="kb"), trust_tier="first-party")
    # Awaited on the test's loop: run_sync would leave an event loop of its own open.
    result = await Agent(FunctionModel(model), tools=[tool]).run(QUERY)
    returned = [
        p.content
        for m in result.all_messages()
        if isinstance(m, ModelRequest)
        for p in m.parts
        if isinstance(p, ToolReturnPart)
    ]
    assert [_rendered_ids(str(r)) for r in returned] == [expected]


async def test_openai_agents_function_tool(corpus, expected) -> None:
    pytest.importorskip("agents")
    from agents import RunContextWrapper

    from turnkit.integrations.openai_agents import vector_query_function_tool

    _, vs = corpus
    tool = vector_query_function_tool(
        create_vector_query_tool(store=vs, collection="kb"), trust_tier="first-party"
    )
    # The SDK's own entry point for a function tool call (what its Runner invokes).
    output = await tool.on_invoke_tool(RunContextWrapper(context=None), json.dumps({"query_text": QUERY}))
    assert _rendered_ids(str(output)) == expected
