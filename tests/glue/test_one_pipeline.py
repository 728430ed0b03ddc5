"""One request through every surface: the same ids, in the same order, with the same threshold result.

The corpus and query are chosen so that hybrid search with ``min_score=0.6`` keeps a chunk
whose dense similarity clears the bar (0.61) while its fused score (0.48) does not: a surface
that compares the fused score drops it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import mcp
import pytest

from turnkit import InMemoryMessageStore, Message, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import (
    WordLlamaEncoder,
    create_vector_retrievable_callbacks,
    create_vector_store,
    retrieve,
    retrieve_sync,
)
from turnkit.mcp import create_mcp_server
from turnkit.tools import create_vector_query_tool, retrieve_contexts

pytestmark = pytest.mark.anyio

DOCS = [
    "Refunds are paid within five business days of the return.",
    "Orders ship from the Lyon warehouse within two days.",
    "Returned items must be unused and in their original packaging.",
    "Customer support answers refund questions by email.",
    "The warranty covers manufacturing defects for two years.",
    "Gift cards cannot be refunded or exchanged for cash.",
    "Shipping to islands takes an extra week.",
    "Our cafeteria serves lunch from noon until two.",
]
QUERY = "how long until my refund is paid"
ALPHA, MIN_SCORE, TOP_K = 0.5, 0.6, 5


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    uri = str(tmp_path_factory.mktemp("pipeline") / "db")
    vs = create_vector_store(uri=uri, encoder=WordLlamaEncoder(), auto_optimize=None)
    vs("kb").upsert_sync(
        [{"id": f"d{i}", "document": d, "metadata": {"source_uri": f"d{i}"}} for i, d in enumerate(DOCS)]
    )
    return uri, vs


@pytest.fixture(scope="module")
def expected(corpus):
    """The builder's answer, checked against plain vector search so the case really tests the bug."""
    _, vs = corpus
    dense = {m.id: m.score for m in vs("kb").near_text(QUERY).select("id").limit(8).search_sync()}
    fused = vs("kb").near_text(QUERY).hybrid(ALPHA).select("id").limit(8).search_sync()
    want = [m.id for m in fused if dense[m.id] >= MIN_SCORE][:TOP_K]
    # The case must hold a chunk the dense score keeps and the fused score would drop.
    assert any(dense[m.id] >= MIN_SCORE > m.score for m in fused if m.id in want)
    # And the threshold cuts the list below top_k, so a surface that ignores it returns more.
    assert 1 < len(want) < TOP_K
    got = vs("kb").near_text(QUERY).hybrid(ALPHA).min_score(MIN_SCORE).select("id").limit(TOP_K)
    assert [m.id for m in got.search_sync()] == want
    return want


async def test_retrieve(corpus, expected) -> None:
    _, vs = corpus
    q = vs("kb").near_text(QUERY).hybrid(ALPHA).select("id", "document")
    found = await retrieve(q, {"top_k": TOP_K, "min_score": MIN_SCORE, "collapse_duplicates": False})
    assert [m.id for m in found.matches] == expected
    # Candidates carry the score the threshold read: the dense similarity, not the fused one.
    assert all((c.score or 0) >= MIN_SCORE for c in found.candidates if c.id in expected)


async def test_retrieval_callbacks(corpus, expected) -> None:
    _, vs = corpus
    callbacks = create_vector_retrievable_callbacks(
        store=vs,
        collection="kb",
        trust_tier="first-party",
        min_score=MIN_SCORE,
        top_k=TOP_K,
        settings={"hybrid": ALPHA},
    )
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
    assert [r.id for r in await ctx.fetch_retrievables()] == expected


async def test_vector_query_tool(corpus, expected) -> None:
    _, vs = corpus
    tool = create_vector_query_tool(store=vs, collection="kb", settings={"hybrid": ALPHA})
    # Mastra's database_config, per request, merges its min_score into the tool's settings.
    context = {"database_config": {"min_score": MIN_SCORE}}
    result = await tool.execute({"query_text": QUERY, "top_k": TOP_K}, request_context=context)
    assert result.status == "ok"
    assert [s.id for s in result.sources] == expected


def _vertex_request() -> dict[str, object]:
    return {
        "vertex_rag_store": {"rag_resources": [{"rag_corpus": "kb"}]},
        "query": {
            "text": QUERY,
            "rag_retrieval_config": {
                "top_k": TOP_K,
                "hybrid_search": {"alpha": ALPHA},
                "filter": {"vector_similarity_threshold": MIN_SCORE},
            },
        },
    }


async def test_retrieve_contexts(corpus, expected) -> None:
    _, vs = corpus
    response = await retrieve_contexts(_vertex_request(), store=vs)
    assert [c.source_uri for c in response.contexts.contexts] == expected


async def test_retrieve_contexts_over_mcp(corpus, expected) -> None:
    _, vs = corpus
    async with mcp.Client(create_mcp_server(vs, collections="kb")) as client:
        hit = await client.call_tool("retrieve_contexts", _vertex_request())
    assert not hit.is_error
    assert [c["sourceUri"] for c in hit.structured_content["contexts"]["contexts"]] == expected


async def test_vector_query_over_mcp(corpus) -> None:
    """MCP's vector_query takes no threshold; its hybrid ranking is the tool's, through the same pipeline."""
    _, vs = corpus
    settings = {"hybrid": ALPHA}
    direct = await create_vector_query_tool(store=vs, collection="kb", settings=settings).execute(
        {"query_text": QUERY, "top_k": TOP_K}
    )
    async with mcp.Client(create_mcp_server(vs, collections="kb", settings=settings)) as client:
        hit = await client.call_tool("vector_query", {"query_text": QUERY, "top_k": TOP_K})
    assert not hit.is_error
    ranked = [m.id for m in vs("kb").near_text(QUERY).hybrid(ALPHA).select("id").limit(TOP_K).search_sync()]
    assert [s["id"] for s in hit.structured_content["sources"]] == [s.id for s in direct.sources] == ranked


def test_turnkit_query(corpus, expected) -> None:
    uri, _ = corpus
    argv = [sys.executable, "-m", "turnkit.cli", "query", QUERY, "--uri", uri, "--collection", "kb"]
    argv += ["--hybrid", str(ALPHA), "--min-score", str(MIN_SCORE), "--top-k", str(TOP_K), "--json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert [r["id"] for r in json.loads(out.stdout)["results"]] == expected


# -- a request with no ranking options: turnkit's default on every tool surface ---------------


@pytest.fixture(scope="module")
def copies(corpus):
    """The corpus with two texts stored twice more (another file each): the default collapses them."""
    _, vs = corpus
    rows = [{"id": f"d{i}", "document": d, "metadata": {"source_uri": f"d{i}"}} for i, d in enumerate(DOCS)]
    rows += [
        {"id": f"d{i}.html", "document": DOCS[i], "metadata": {"source_uri": f"d{i}.html"}} for i in (0, 3)
    ]
    vs("copies").upsert_sync(rows)
    found = retrieve_sync(vs("copies").near_text(QUERY))  # the settings' default
    vector_only = retrieve_sync(vs("copies").near_text(QUERY), {"hybrid": False})
    # The case must tell the default apart: copies collapsed, and another order than vector-only search.
    assert any(m.duplicates for m in found.matches)
    assert [m.id for m in found.matches] != [m.id for m in vector_only.matches]
    return vs, found.matches, vector_only.matches


def _copies_of(matches):
    return [sorted(d.id for d in m.duplicates) for m in matches]


async def test_no_options_give_the_default_through_the_tool(copies) -> None:
    vs, default, vector_only = copies
    tool = create_vector_query_tool(store=vs, collection="copies")
    result = await tool.execute({"query_text": QUERY})
    assert [s.id for s in result.sources] == [m.id for m in default]
    assert [sorted(d.id for d in s.duplicates or ()) for s in result.sources] == _copies_of(default)
    # Mastra's hybrid option, set explicitly, is the seed's vector-only search.
    seed = await tool.execute({"query_text": QUERY}, request_context={"hybrid": False})
    assert [s.id for s in seed.sources] == [m.id for m in vector_only]


async def test_no_options_give_the_default_through_retrieve_contexts(copies) -> None:
    vs, default, _ = copies
    response = await retrieve_contexts({"query": {"text": QUERY}}, store=vs, collection="copies")
    assert [c.source_uri for c in response.contexts.contexts] == [m.id for m in default]
    assert [sorted(d.id for d in c.duplicates or ()) for c in response.contexts.contexts] == _copies_of(
        default
    )
    # Vertex's alpha, set explicitly, is honoured exactly.
    alpha = {"query": {"text": QUERY, "rag_retrieval_config": {"hybrid_search": {"alpha": 0.9}}}}
    seed = await retrieve_contexts(alpha, store=vs, collection="copies")
    honoured = await retrieve(vs("copies").near_text(QUERY), {"hybrid": 0.9})
    assert [c.source_uri for c in seed.contexts.contexts] == [m.id for m in honoured.matches]


async def test_no_options_give_the_default_over_mcp(copies) -> None:
    vs, default, _ = copies
    async with mcp.Client(create_mcp_server(vs, collections="copies")) as client:
        hit = await client.call_tool("vector_query", {"query_text": QUERY})
        ctx = await client.call_tool("retrieve_contexts", {"query": {"text": QUERY}})
    assert not hit.is_error and not ctx.is_error
    assert [s["id"] for s in hit.structured_content["sources"]] == [m.id for m in default]
    contexts = ctx.structured_content["contexts"]["contexts"]
    assert [c["sourceUri"] for c in contexts] == [m.id for m in default]
    listed = [sorted(d["id"] for d in c.get("duplicates", ())) for c in contexts]
    assert listed == _copies_of(default)
