"""Every operator has its spellings: aliases, the Mongo table, the text grammar (see filters/__init__.py)."""

from __future__ import annotations

from typing import Any, get_args

import pytest

from turnkit.batteries.vector import (
    MONGO_OPERATORS,
    condition,
    format_filter_expression,
    parse_filter_expression,
    parse_mongo,
    to_sql,
)
from turnkit.batteries.vector.filters._ast import Op
from turnkit.batteries.vector.filters._build import _FIELD_OPS
from turnkit.batteries.vector.filters._fields import OPERATOR_ALIASES
from turnkit.tools.vector_query._input import filter_description

OPS: tuple[Op, ...] = get_args(Op)
SAMPLE: dict[str, Any] = {
    "eq": "a",
    "ne": "a",
    "gt": 1,
    "gte": 1.5,
    "lt": -2,
    "lte": "m",
    "in": ["a", 2],
    "nin": ["a"],
    "like": "a%",
    "contains": "a",
    "exists": True,
    "null": True,
}


def test_every_operator_has_an_alias_and_a_sample() -> None:
    assert set(OPERATOR_ALIASES.values()) == set(OPS)
    assert set(SAMPLE) == set(OPS)


def test_the_mongo_table_covers_every_operator() -> None:
    # A Mongo dict says "null" as {"key": None}.
    assert set(_FIELD_OPS.values()) | {"null"} == set(OPS)
    # The tools tell the model exactly the battery's operators.
    assert f"Operators: {' '.join(MONGO_OPERATORS)}." in filter_description("any")
    assert set(MONGO_OPERATORS) == {*_FIELD_OPS, "$and", "$or", "$nor", "$not"}


@pytest.mark.parametrize("op", OPS)
def test_each_operator_compiles_and_round_trips_through_the_text_grammar(op: Op) -> None:
    node = condition("metadata.k", op, SAMPLE[op])
    assert to_sql(node)
    text = format_filter_expression(node)
    assert parse_filter_expression(text) == node


@pytest.mark.parametrize("mongo", sorted(_FIELD_OPS))
def test_each_mongo_operator_parses(mongo: str) -> None:
    op = _FIELD_OPS[mongo]
    node = parse_mongo({"metadata.k": {mongo: SAMPLE[op]}})
    assert to_sql(node)
