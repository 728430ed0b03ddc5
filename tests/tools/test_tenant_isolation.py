"""No filter a model can send returns a row outside the host's guard."""

import functools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    HashEncoder,
    and_,
    create_vector_store,
    evaluate,
    parse_filter_expression,
    parse_mongo,
)
from turnkit.tools import create_vector_query_tool, retrieve_contexts_sync

TENANTS = ("acme", "globex", "initech")
KINDS = ("faq", "howto", None)
WORDS = ("refund", "order", "ship", "secret", "policy", "invoice")


def _rows():
    rows = []
    for i in range(18):
        tenant = TENANTS[i % 3]
        meta = {"tenant": tenant, "year": 2015 + i % 7, "n": i}
        kind = KINDS[(i // 3) % 3]
        if kind is not None:
            meta["kind"] = kind
        if i % 4 == 0:
            meta["owner"] = {"tenant": TENANTS[(i + 1) % 3]}  # a decoy nested key
        words = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(3))
        rows.append({"id": f"{tenant}-{i}", "document": f"{words} {tenant}", "metadata": meta})
    return rows


ROWS = _rows()


@functools.cache
def _store():
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(64), auto_optimize=None)
    vs("shared").upsert_sync(ROWS)
    return vs


def _keys():
    return st.sampled_from(["tenant", "kind", "year", "n", "owner.tenant", "id", "missing", "tenant.x"])


def _values():
    return st.one_of(
        st.sampled_from([*TENANTS, "faq", "howto", "%", "acme%"]),
        st.integers(2010, 2025),
        st.booleans(),
        st.none(),
    )


def _field_condition():
    return st.one_of(
        _values(),
        st.lists(_values(), max_size=4),
        st.dictionaries(
            st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists", "$like"]),
            st.one_of(_values(), st.lists(_values(), max_size=3)),
            min_size=1,
            max_size=2,
        ),
        st.builds(lambda v: {"$not": {"$eq": v}}, _values()),
    )


def _filters():
    leaf = st.dictionaries(_keys(), _field_condition(), min_size=1, max_size=2)
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.builds(lambda xs: {"$or": xs}, st.lists(inner, min_size=1, max_size=3)),
            st.builds(lambda xs: {"$and": xs}, st.lists(inner, min_size=1, max_size=3)),
            st.builds(lambda xs: {"$nor": xs}, st.lists(inner, min_size=1, max_size=3)),
            st.builds(lambda x: {"$not": x}, inner),
        ),
        max_leaves=6,
    )


GUARD = {"tenant": "acme"}


def returned(result):
    """Every row a result names: its sources and the copies collapsed into them (same text, another id)."""
    return {s.id for s in result.sources} | {d.id for s in result.sources for d in s.duplicates or ()}


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(flt=_filters(), words=st.lists(st.sampled_from([*WORDS, *TENANTS]), min_size=1, max_size=3))
def test_guard_cannot_be_widened_by_any_model_filter(flt, words):
    # filter_fields="any": the strongest adversary, free to name any key (the guard's own included).
    tool = create_vector_query_tool(
        store=_store(),
        collection="shared",
        enable_filter=True,
        filter_fields="any",
        guard=GUARD,
        limits={"max_top_k": 50},
    )
    for ctx in (None, {"filter": {"year": {"$gte": 2015}}}):
        result = tool.execute_sync(
            {"query_text": " ".join(words), "top_k": 50, "filter": flt}, request_context=ctx
        )
        if result.status == "error":
            assert result.error.kind == "invalid_input", result.error
            continue
        got = returned(result)
        assert all(s.metadata["tenant"] == "acme" for s in result.sources)
        assert all(i.startswith("acme-") for i in got)  # the collapsed copies too
        # Exactly the rows both filters accept, per the reference evaluator (top_k exceeds the rows).
        model = parse_mongo(flt, field_prefix="metadata.")
        expected = {
            r["id"] for r in ROWS if evaluate(and_(parse_mongo(GUARD, field_prefix="metadata."), model), r)
        }
        assert got == expected


@SETTINGS
@given(tenant=st.sampled_from(TENANTS), flt=_filters())
def test_request_context_guard_isolates_each_tenant(tenant, flt):
    tool = create_vector_query_tool(
        store=_store(), collection="shared", filter_fields="any", limits={"max_top_k": 50}
    )
    guard = {"tenant": tenant}
    result = tool.execute_sync(
        {"query_text": "refund secret", "top_k": 50, "filter": flt}, request_context={"filter": guard}
    )
    if result.status == "error":
        assert result.error.kind == "invalid_input", result.error
        return
    assert all(i.startswith(f"{tenant}-") for i in returned(result))
    # And every one of the tenant's rows the model's filter accepts does come back (top_k exceeds the rows).
    both = and_(parse_mongo(guard, field_prefix="metadata."), parse_mongo(flt, field_prefix="metadata."))
    assert returned(result) == {r["id"] for r in ROWS if evaluate(both, r)}
    assert (result.status == "no_results") == (not result.sources)


def test_each_tenant_gets_its_own_rows_without_a_model_filter():
    tool = create_vector_query_tool(store=_store(), collection="shared", limits={"max_top_k": 50})
    for tenant in TENANTS:
        result = tool.execute_sync(
            {"query_text": "refund secret", "top_k": 50}, request_context={"filter": {"tenant": tenant}}
        )
        assert returned(result) == {r["id"] for r in ROWS if r["metadata"]["tenant"] == tenant}


@settings(max_examples=60, deadline=None)
@given(
    expr=st.sampled_from(
        [
            'tenant = "globex"',
            'tenant != "acme"',
            'NOT tenant = "acme"',
            'tenant = "acme" OR tenant = "globex"',
            "TRUE",
            'tenant IN ("acme", "globex", "initech")',
            "year >= 2000 OR NOT year >= 2000 OR year IS NULL",
            'owner.tenant = "globex"',
        ]
    ),
    top_k=st.integers(1, 30),
)
def test_retrieve_contexts_guard_holds_for_any_metadata_filter(expr, top_k):
    response = retrieve_contexts_sync(
        {
            "query": {
                "text": "refund secret",
                "rag_retrieval_config": {"top_k": top_k, "filter": {"metadata_filter": expr}},
            }
        },
        store=_store(),
        collection="shared",
        guard=GUARD,
    )
    texts = [c.text for c in response.contexts.contexts]
    assert all(t.endswith(" acme") for t in texts)
    copies = [d.id for c in response.contexts.contexts for d in c.duplicates or ()]
    assert all(i.startswith("acme-") for i in copies)  # the collapsed copies too
    # The guard's own rows that the expression accepts do come back: the best top_k of them.
    accepted = and_(
        parse_mongo(GUARD, field_prefix="metadata."), parse_filter_expression(expr, field_prefix="metadata.")
    )
    expected = [r["document"] for r in ROWS if evaluate(accepted, r)]
    # Copies of one text collapse into one context (the defaults): one context per distinct text.
    assert len(texts) == min(top_k, len(set(expected)))
    assert all(t in expected for t in texts)
