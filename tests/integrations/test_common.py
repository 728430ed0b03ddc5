"""The framework-free core every adapter shares: guard keys, scrubbing, rendering (no framework needed)."""

from __future__ import annotations

import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit import UsageError
from turnkit.batteries.vector import PageSpan, VectorStore
from turnkit.integrations._common import ToolBridge, guard_keys, render_sources, scrub, source_metadata
from turnkit.tools import (
    ToolUsageError,
    VectorQueryResult,
    VectorQuerySource,
    create_vector_query_tool,
)

from .conftest import TENANTS

keys = st.text(string.ascii_lowercase, min_size=1, max_size=6)
values = st.one_of(st.integers(-5, 5), st.text(string.ascii_letters, max_size=5), st.booleans())


def _conditions(key_strategy: st.SearchStrategy[str]) -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.dictionaries(
        key_strategy, st.one_of(values, st.fixed_dictionaries({"$ne": values})), min_size=1, max_size=3
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
            st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
            st.builds(lambda x: {"$not": x}, inner),
        ),
        max_leaves=8,
    )


def _named(guard: Any) -> set[str]:
    """Every key a Mongo guard names, read directly from the dict (the reference for guard_keys)."""
    if isinstance(guard, dict):
        found: set[str] = set()
        for k, v in guard.items():
            if k in ("$and", "$or"):
                for item in v:
                    found |= _named(item)
            elif k == "$not":
                found |= _named(v)
            else:
                found.add(k.split(".")[0])
        return found
    return set()


@settings(max_examples=200, deadline=None)
@given(guard=_conditions(keys), metadata=st.dictionaries(keys, values, max_size=8))
def test_no_guard_key_survives_scrubbing(guard: dict[str, Any], metadata: dict[str, Any]) -> None:
    hidden = guard_keys(guard)
    assert hidden == _named(guard)
    result = VectorQueryResult(
        status="ok", relevant_context=["x"], sources=[VectorQuerySource(id="r", metadata=metadata)]
    )
    shown = scrub(result, hidden).sources[0].metadata or {}
    assert not (set(shown) & hidden)
    assert shown == {k: v for k, v in metadata.items() if k not in hidden}


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(max_size=40), min_size=1, max_size=5, unique=True))
def test_rendered_third_party_records_are_fenced_once_each(texts: list[str]) -> None:
    sources = [
        VectorQuerySource(id=f"r{i}", document=t, metadata={"tenant": TENANTS[0]})
        for i, t in enumerate(texts)
    ]
    rendered = render_sources(
        VectorQueryResult(status="ok", relevant_context=texts, sources=sources), "third-party"
    )
    shown = [t for t in texts if t.strip()]  # a record without text is left out
    assert rendered.count("<untrusted_content nonce=") == len(shown) == rendered.count("</untrusted_content")
    assert TENANTS[0] not in rendered  # metadata is never rendered


def test_render_labels_pages_and_refuses_unknown_tiers() -> None:
    source = VectorQuerySource(
        id="p", document="text", source_display_name="a.pdf", page_span=PageSpan(first_page=2, last_page=3)
    )
    result = VectorQueryResult(status="ok", relevant_context=["text"], sources=[source])
    assert 'source="a.pdf, pp. 2-3"' in render_sources(result, "first-party")
    assert source_metadata(source, "first-party") == {
        "source_display_name": "a.pdf",
        "page_span": {"first_page": 2, "last_page": 3},
        "trust_tier": "first-party",
    }
    with pytest.raises(Exception, match="E_UNKNOWN_TRUST_TIER|trust tier"):
        render_sources(result, lambda s: "First-Party")  # type: ignore[arg-type,return-value]
    assert "E_INVALID_RETRIEVABLE" in UsageError.hints  # the renderer's own validation is what refuses it


def test_bridge_refuses_a_guard_given_twice_and_a_non_tool(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb")
    bridge: ToolBridge[None] = ToolBridge(
        tool,
        trust_tier="first-party",
        guard=lambda _: {"tenant": "x"},
        request_context=lambda _: {"filter": {"a": 1}},
    )
    with pytest.raises(ToolUsageError, match="given twice") as exc_info:
        bridge.context_for(None)
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    with pytest.raises(ToolUsageError) as exc_info:
        ToolBridge(object(), trust_tier="first-party")  # type: ignore[arg-type]
    assert exc_info.value.code == "E_INVALID_TOOL_CONFIG"
    with pytest.raises(Exception, match="E_UNKNOWN_TRUST_TIER|tier"):
        ToolBridge(tool, trust_tier="trusted")  # type: ignore[arg-type]


def test_include_sources_off_still_renders_numbered_records(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb", settings={"include_sources": False})
    bridge: ToolBridge[None] = ToolBridge(
        tool, trust_tier="third-party", guard=lambda _: {"tenant": TENANTS[0]}
    )
    outcome = bridge.call_sync({"query_text": "refund policy", "top_k": 1}, None)
    assert outcome.error is None and 'id="1"' in outcome.text and "5 days" in outcome.text
