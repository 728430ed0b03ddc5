"""One key, two spellings: ``kind`` and ``metadata.kind`` build the same filter in every filter form.

The property tests rewrite random filter trees with each metadata field
spelled either way (builder calls, Mongo dicts, text expressions) and check
that the SQL is the same, that `evaluate` agrees, and that LanceDB selects the
same records.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import format_filter_expression, parse_filter_expression
from turnkit.batteries.vector._errors import UnknownFieldError
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or
from turnkit.batteries.vector.filters._core import condition, evaluate, parse_mongo, to_sql
from turnkit.batteries.vector.filters._keys import close_keys, required_keys

PREFIX = "metadata."
FilterTable = Any  # conftest.FilterTable: .table, .records, .ids(sql)
_MONGO_OPS = {"eq": "$eq", "ne": "$ne", "gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte"}
_MONGO_OPS |= {"in": "$in", "nin": "$nin", "like": "$like", "contains": "$contains", "exists": "$exists"}


def lance_settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def spelled(field: str, bare: bool) -> str:
    return field[len(PREFIX) :] if bare and field.startswith(PREFIX) else field


def respell(node: FilterNode, draw: st.DrawFn) -> FilterNode:
    """The same tree built again through `condition`, each metadata field spelled as drawn."""
    if isinstance(node, Condition):
        return condition(spelled(node.field, draw(st.booleans())), node.op, node.value)
    if isinstance(node, And):
        return And(tuple(respell(child, draw) for child in node.children))
    if isinstance(node, Or):
        return Or(tuple(respell(child, draw) for child in node.children))
    assert isinstance(node, Not)
    return Not(respell(node.child, draw))


def to_mongo(node: FilterNode, draw: st.DrawFn) -> dict[str, Any]:
    """A Mongo-style dict of the tree, each metadata field spelled as drawn."""
    if isinstance(node, And):
        return {"$and": [to_mongo(child, draw) for child in node.children]}
    if isinstance(node, Or):
        return {"$or": [to_mongo(child, draw) for child in node.children]}
    if isinstance(node, Not):
        return {"$not": to_mongo(node.child, draw)}
    assert isinstance(node, Condition)
    field = spelled(node.field, draw(st.booleans()))
    if node.op == "null":
        return {field: {"$eq" if node.value else "$ne": None}}
    value = list(node.value) if node.op in ("in", "nin") else node.value
    return {field: {_MONGO_OPS[node.op]: value}}


def metadata_only(node: FilterNode) -> bool:
    if isinstance(node, Condition):
        return node.field.startswith(PREFIX)
    if isinstance(node, And | Or):
        return all(metadata_only(child) for child in node.children)
    return isinstance(node, Not) and metadata_only(node.child)


def same_meaning(table: FilterTable, a: FilterNode, b: FilterNode) -> None:
    for record in table.records:
        assert evaluate(a, record) == evaluate(b, record), record
    assert table.ids(to_sql(a)) == table.ids(to_sql(b)) == {r["id"] for r in table.records if evaluate(a, r)}


@lance_settings(150)
@given(data=st.data())
def test_builder_spellings_compile_to_the_same_sql(
    fixed_table: FilterTable, strategies: dict[str, Any], data: Any
) -> None:
    node = data.draw(strategies["trees"])
    other = respell(node, data.draw)
    assert other == node
    assert to_sql(other) == to_sql(node)
    same_meaning(fixed_table, node, other)


@lance_settings(150)
@given(data=st.data())
def test_mongo_spellings_mean_the_same(
    fixed_table: FilterTable, strategies: dict[str, Any], data: Any
) -> None:
    node = data.draw(strategies["trees"])
    full = parse_mongo(to_mongo(node, lambda _: False), max_depth=64)
    mixed = parse_mongo(to_mongo(node, data.draw), max_depth=64)
    assert to_sql(mixed) == to_sql(full)
    same_meaning(fixed_table, node, mixed)
    if metadata_only(node):  # the tools' form: keys confined to the metadata, either spelling
        tool = parse_mongo(to_mongo(node, data.draw), field_prefix=PREFIX, max_depth=64)
        assert to_sql(tool) == to_sql(full)


@lance_settings(150)
@given(data=st.data())
def test_text_spellings_parse_to_the_same_tree(
    fixed_table: FilterTable, strategies: dict[str, Any], data: Any
) -> None:
    node = data.draw(strategies["trees"].filter(metadata_only))
    bare = format_filter_expression(node, field_prefix=PREFIX)  # kind = "pdf"
    full = format_filter_expression(node, field_prefix="")  # metadata.kind = "pdf"
    parsed = [parse_filter_expression(text, max_depth=64) for text in (bare, full)]
    parsed.append(parse_filter_expression(full, field_prefix="", max_depth=64))
    assert parsed[0] == parsed[1] == parsed[2]
    assert to_sql(parsed[0]) == to_sql(parsed[1])
    same_meaning(fixed_table, node, parsed[1])


def test_the_cli_filter_from_the_issue() -> None:
    want = condition("metadata.kind", "eq", "pdf")
    assert parse_filter_expression('metadata.kind = "pdf"') == want
    assert parse_filter_expression('kind = "pdf"') == want
    assert parse_mongo({"metadata.kind": "pdf"}, field_prefix=PREFIX) == want
    assert parse_mongo({"kind": "pdf"}) == want
    assert condition("kind", "=", "pdf") == want


def test_a_key_named_metadata_is_written_in_full() -> None:
    nested = condition("metadata.metadata.kind", "eq", "x")
    assert parse_filter_expression('metadata.metadata.kind = "x"') == nested
    assert parse_mongo({"metadata.metadata.kind": "x"}, field_prefix=PREFIX) == nested
    text = format_filter_expression(nested)
    assert parse_filter_expression(text) == nested, text


@pytest.mark.parametrize("name", ["ID", "Document", "Metadata.kind", "vector", "score", "_distance", "$gt"])
def test_names_that_mean_something_else_are_refused(name: str) -> None:
    with pytest.raises(UnknownFieldError) as info:
        condition(name, "eq", "x")
    assert info.value.hint


def test_required_keys() -> None:
    k, y = condition("kind", "eq", "pdf"), condition("year", "gt", 2020)
    assert required_keys(And((k, y))) == {"kind", "year"}
    assert required_keys(Or((k, And((k, y))))) == {"kind"}
    assert required_keys(Or((k, y))) == set()
    assert required_keys(Not(k)) == set()
    assert required_keys(condition("kind", "ne", "pdf")) == set()
    assert required_keys(condition("kind", "in", ["a", None])) == set()
    assert required_keys(condition("kind", "ne", None)) == {"kind"}
    assert required_keys(condition("kind", "exists")) == {"kind"}
    assert required_keys(condition("kind", "exists", False)) == set()
    assert required_keys(condition("id", "eq", "x")) == set()


def test_close_keys() -> None:
    known = ["kind", "page_span", "page_span.first_page", "source_uri"]
    assert close_keys("knd", known) == ["kind"]
    assert close_keys("Kind", known) == ["kind"]
    assert close_keys("metadata.kind", known) == ["kind"]
    assert close_keys("page_spam.first_page", known)[0] == "page_span.first_page"
    assert close_keys("zzz", known) == []
