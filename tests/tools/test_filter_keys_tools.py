"""The agent tools take ``kind`` and ``metadata.kind`` alike, say "did you mean", and keep guards tight."""

from __future__ import annotations

import pytest

from turnkit.batteries.vector import FilterKeyNotFoundError
from turnkit.tools import create_vector_query_tool, retrieve_contexts_sync

SECRET = {
    "id": "globex-secret",
    "document": "Refunds for the board are approved by the CFO.",
    "metadata": {"tenant": "globex", "kind": "faq", "globex_board": "yes"},
}


def run(tool, args, **ctx):
    return tool.execute_sync(args, request_context=ctx or None)


def ids(result):
    return sorted(s.id for s in result.sources)


@pytest.mark.parametrize("fields", ["auto", "any", {"kind": "faq or howto", "year": "number"}])
def test_the_vector_query_tool_takes_both_spellings(kb, fields) -> None:
    store, coll = kb
    tool = create_vector_query_tool(store=store, collection=coll, enable_filter=True, filter_fields=fields)
    bare = run(tool, {"query_text": "refunds", "filter": {"kind": "faq"}})
    full = run(tool, {"query_text": "refunds", "filter": {"metadata.kind": "faq"}})
    assert bare.status == "ok" and ids(bare) == ids(full) == ["acme-refund", "globex-refund"]
    both = run(
        tool, {"query_text": "refunds", "filter": {"$and": [{"metadata.kind": "faq"}, {"year": 2024}]}}
    )
    assert ids(both) == ["globex-refund"]


def test_the_vector_query_tool_says_did_you_mean(kb) -> None:
    store, coll = kb
    for fields, code in (
        ("auto", "E_VECTOR_STORE_UNKNOWN_FIELD"),
        ("any", "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND"),
    ):
        tool = create_vector_query_tool(
            store=store, collection=coll, enable_filter=True, filter_fields=fields
        )
        result = run(tool, {"query_text": "refunds", "filter": {"knd": "faq"}})
        assert result.status == "error" and result.error.kind == "invalid_input"
        assert result.error.code == code and "Did you mean 'kind'?" in result.error.hint
        twice = run(tool, {"query_text": "refunds", "filter": {"metadata.metadata.kind": "faq"}})
        assert "Did you mean 'kind'?" in twice.error.hint
        # A key that is held, with a value no record has: an honest empty answer.
        assert run(tool, {"query_text": "refunds", "filter": {"kind": "blog"}}).status == "no_results"


def test_inside_a_guard_a_missing_key_tells_nothing_about_other_tenants(kb) -> None:
    store, coll = kb
    store(coll).upsert_sync([SECRET])
    tool = create_vector_query_tool(
        store=store, collection=coll, enable_filter=True, filter_fields="any", guard={"tenant": "acme"}
    )
    held_elsewhere = run(tool, {"query_text": "refunds", "filter": {"globex_board": "yes"}})
    held_nowhere = run(tool, {"query_text": "refunds", "filter": {"zzz_board": "yes"}})
    assert held_elsewhere.error.code == held_nowhere.error.code == "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND"
    assert held_elsewhere.error.hint == held_nowhere.error.hint  # the same answer: nothing leaks
    assert "globex" not in held_elsewhere.error.hint and "tenant" not in held_elsewhere.error.hint
    # The guard's own key is held inside it: an empty answer, never its name in a hint.
    assert run(tool, {"query_text": "refunds", "filter": {"tenant": "globex"}}).status == "no_results"
    near = run(tool, {"query_text": "refunds", "filter": {"knd": "faq"}})
    assert "Did you mean 'kind'?" in near.error.hint
    # A guard key no record holds answers nothing, and says nothing about the guard.
    empty = create_vector_query_tool(
        store=store, collection=coll, enable_filter=True, filter_fields="any", guard={"team": "x"}
    )
    assert run(empty, {"query_text": "refunds"}).status == "no_results"


def test_retrieve_contexts_takes_both_spellings_and_says_did_you_mean(kb) -> None:
    store, coll = kb

    def ask(expr, **kwargs):
        req = {"query": {"text": "refunds", "rag_retrieval_config": {"filter": {"metadata_filter": expr}}}}
        return sorted(
            c.text
            for c in retrieve_contexts_sync(req, store=store, collection=coll, **kwargs).contexts.contexts
        )

    assert ask('metadata.kind = "faq"') == ask('kind = "faq"') and len(ask('kind = "faq"')) == 2
    with pytest.raises(FilterKeyNotFoundError) as info:
        ask('knd = "faq"')
    assert "Did you mean 'kind'?" in info.value.hint
    store(coll).upsert_sync([SECRET])
    guard = {"tenant": "acme"}
    with pytest.raises(FilterKeyNotFoundError) as scoped:
        ask('globex_board = "yes"', guard=guard)
    assert "globex" not in scoped.value.hint and "globex_board" in scoped.value.message
    assert "tenant" not in scoped.value.hint
    assert ask('kind = "blog"', guard=guard) == ask('tenant = "globex"', guard=guard) == []
