"""The text filter grammar: parsing, errors with positions, limits, and render/parse round trips."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector._errors import (
    InvalidFilterError,
    UnknownFieldError,
)
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
from turnkit.batteries.vector.filters._core import and_, condition, evaluate, not_, or_, to_sql
from turnkit.batteries.vector.filters._format import format_filter_expression
from turnkit.batteries.vector.filters._text import MAX_EXPRESSION_LENGTH, parse_filter_expression

parse = parse_filter_expression


def c(field: str, op: str, value: Any = None) -> Condition:
    return (
        condition(f"metadata.{field}", op, value)
        if op not in ("exists", "null")
        else condition(f"metadata.{field}", op)
    )


def test_example_from_the_docs() -> None:
    assert parse('kind = "faq" AND year >= 2020') == And((c("kind", "eq", "faq"), c("year", "gte", 2020)))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a = 1", c("a", "eq", 1)),
        ("a == 1", c("a", "eq", 1)),
        ("a != 'x'", c("a", "ne", "x")),
        ("a <> 'x'", c("a", "ne", "x")),
        ("a < -1.5", c("a", "lt", -1.5)),
        ("a <= 1e3", c("a", "lte", 1000.0)),
        ("a > 2E-2", c("a", "gt", 0.02)),
        ("a >= 0", c("a", "gte", 0)),
        ("a = true", c("a", "eq", True)),
        ("a = FALSE", c("a", "eq", False)),
        ("a = null", Condition("metadata.a", "null", True)),
        ("a != null", Condition("metadata.a", "ne", None)),
        ("a IS NULL", Condition("metadata.a", "null", True)),
        ("a is not null", Condition("metadata.a", "ne", None)),
        ('a IN ("x", 1, true, null)', c("a", "in", ["x", 1, True, None])),
        ("a IN ()", c("a", "in", [])),
        ("a in (1, 2,)", c("a", "in", [1, 2])),
        ("a NOT IN (1)", c("a", "nin", [1])),
        ('a LIKE "foo%"', c("a", "like", "foo%")),
        ('a NOT LIKE "foo%"', Not(c("a", "like", "foo%"))),
        ('a CONTAINS "x"', c("a", "contains", "x")),
        ("a contains 3", c("a", "contains", 3)),
        ("a NOT CONTAINS true", Not(c("a", "contains", True))),
        ("a EXISTS", c("a", "exists")),
        ("a NOT EXISTS", Not(c("a", "exists"))),
        ("TRUE", And(())),
        ("false", Or(())),
        ("", And(())),
        ("   ", And(())),
        ("source.kind = 'web'", c("source.kind", "eq", "web")),
        ("years.2021 = 1", c("years.2021", "eq", 1)),
        ("c-d = 1", c("c-d", "eq", 1)),
        ("`in` = 1", c("in", "eq", 1)),
        ("`2021`.x = 1", c("2021.x", "eq", 1)),
        ("o.in = 1", c("o.in", "eq", 1)),
        ("id = 'x'", c("id", "eq", "x")),
    ],
)
def test_predicates(text: str, expected: FilterNode) -> None:
    assert parse(text) == expected


def test_precedence_not_and_or() -> None:
    a, b, cc = c("a", "eq", 1), c("b", "eq", 2), c("c", "eq", 3)
    assert parse("a = 1 OR b = 2 AND c = 3") == Or((a, And((b, cc))))
    assert parse("a = 1 AND b = 2 OR c = 3") == Or((And((a, b)), cc))
    assert parse("NOT a = 1 AND b = 2") == And((Not(a), b))
    assert parse("NOT (a = 1 OR b = 2)") == Not(Or((a, b)))
    assert parse("(a = 1 OR b = 2) AND c = 3") == And((Or((a, b)), cc))
    assert parse("a = 1 and (b = 2 or (c = 3))") == And((a, Or((b, cc))))
    assert parse("NOT NOT a = 1") == a
    assert parse("a = 1 OR b = 2 OR c = 3") == Or((a, b, cc))


def test_strings_and_escapes() -> None:
    assert parse(r'a = "say \"hi\""') == c("a", "eq", 'say "hi"')
    assert parse(r"a = 'it\'s'") == c("a", "eq", "it's")
    assert parse("a = 'say \"hi\"'") == c("a", "eq", 'say "hi"')
    assert parse(r'a = "a\\b\/c\n\t\r\b\f"') == c("a", "eq", "a\\b/c\n\t\r\b\f")
    assert parse(r'a = "\u00e9\ud83d\ude00"') == c("a", "eq", "é😀")
    assert parse('a = "é😀 日本"') == c("a", "eq", "é😀 日本")
    assert parse(r'a LIKE "100\%"') == c("a", "like", "100\\%")
    assert parse(r'a LIKE "a\_b\\\\c"') == c("a", "like", "a\\_b\\\\c")


def test_text_is_never_sql() -> None:
    node = parse("""a = "x' OR '1'='1" """)
    assert node == c("a", "eq", "x' OR '1'='1")
    assert "'x'' OR ''1''=''1'" in to_sql(node)
    with pytest.raises(InvalidFilterError):
        parse("a = 1; DROP TABLE t")
    with pytest.raises(InvalidFilterError):
        parse("a = 1 -- comment")
    with pytest.raises(InvalidFilterError):
        parse("json_get_int(metadata, 'a') > 1")


@pytest.mark.parametrize(
    ("text", "column", "words"),
    [
        ("kind = ", 8, "expected a value after ="),
        ("kind faq", 6, "expected a comparison"),
        ("kind = faq", 8, 'Quote text values: "faq"'),
        ("(a = 1", 7, "expected ')' to close the '(' at column 1"),
        ("a = 1)", 6, "expected AND, OR or the end"),
        ("a = 1 AND", 10, "expected a field name"),
        ("a = 1 AND OR b = 1", 11, "keyword OR"),
        ("a IN 1", 6, "parenthesized list"),
        ("a IN (1 2)", 9, "expected ',' or ')'"),
        ("a LIKE 5", 8, "quoted pattern"),
        ("a @ 1", 3, "unexpected character"),
        ("a ! 1", 3, "unexpected character"),
        ("a = 'x", 5, "unterminated string"),
        (r"a = 'x\q'", 7, "unknown escape"),
        (r"a = '\u12'", 6, "four hex digits"),
        (r"a = '\ud800'", 6, "lone surrogate"),
        ("a = 1.2.3", 5, "malformed number"),
        ("a = 01", 5, "malformed number"),
        ("a = 1abc", 5, "malformed number"),
        ("a IS 1", 6, "expected NULL after IS"),
        ("a NOT = 1", 7, "expected IN, LIKE, CONTAINS or EXISTS after NOT"),
        ("a. = 1", 4, "expected a key after '.'"),
        ("`a = 1", 1, "unterminated `backticked` name"),
        ("= 1", 1, "expected a field name or '('"),
        ("a = 1 b = 2", 7, "expected AND, OR or the end"),
        ("a = nan", 5, "expected a value"),
    ],
)
def test_syntax_errors_point_at_the_column(text: str, column: int, words: str) -> None:
    with pytest.raises(InvalidFilterError) as info:
        parse(text)
    assert info.value.code == "E_VECTOR_STORE_INVALID_FILTER"
    assert info.value.context["position"] == column
    assert f"column {column}" in str(info.value)
    assert words in str(info.value)
    assert info.value.hint


@pytest.mark.parametrize(
    ("text", "error", "words"),
    [
        ("a > true", InvalidFilterError, "strings or numbers"),
        ("a LIKE 'x\\\\'", InvalidFilterError, "lone backslash"),
        ("a CONTAINS 1.5", InvalidFilterError, "integers below"),
        ("a = 1e999", InvalidFilterError, "inf"),
        ("a b.c = 1", InvalidFilterError, "expected a comparison"),
    ],
)
def test_value_errors_carry_the_position(text: str, error: type[Exception], words: str) -> None:
    with pytest.raises(error) as info:
        parse(text)
    assert words in str(info.value)
    assert "position" in info.value.context  # type: ignore[attr-defined]


def test_field_prefix() -> None:
    assert parse("id = 'x'", field_prefix="") == condition("id", "eq", "x")
    assert parse("metadata.kind = 'x'", field_prefix="") == condition("metadata.kind", "eq", "x")
    assert parse("created_at > '2024-01-01T00:00:00Z'", field_prefix="") == condition(
        "created_at", "gt", datetime(2024, 1, 1, tzinfo=UTC)
    )
    assert parse("year > 2020", field_prefix="") == condition("metadata.year", "gt", 2020)
    assert parse("metadata.year > 2020") == parse("year > 2020") == condition("metadata.year", "gt", 2020)
    assert parse("metadata.metadata.year > 2020") == condition("metadata.metadata.year", "gt", 2020)
    with pytest.raises(UnknownFieldError) as info:
        parse("ID = 'x'", field_prefix="")
    assert "did you mean 'id'" in str(info.value) and info.value.context["position"] == 1
    with pytest.raises(InvalidFilterError, match="field_prefix"):
        parse("a = 1", field_prefix="metadata")


def test_limits() -> None:
    parse("(" * 31 + "a = 1" + ")" * 31)
    with pytest.raises(InvalidFilterError, match="deeper than 32"):
        parse("(" * 33 + "a = 1" + ")" * 33)
    with pytest.raises(InvalidFilterError, match="deeper than 3"):
        parse("NOT NOT NOT NOT a = 1", max_depth=3)
    with pytest.raises(InvalidFilterError, match="more than 200"):
        parse(" OR ".join(f"a = {i}" for i in range(201)))
    with pytest.raises(InvalidFilterError, match="longer than"):
        parse("a = '" + "x" * MAX_EXPRESSION_LENGTH + "'")
    with pytest.raises(InvalidFilterError, match="NUL"):
        parse("a = 'x\x00'")
    with pytest.raises(InvalidFilterError):
        parse(3)  # type: ignore[arg-type]


_FUZZ_ALPHABET = st.sampled_from(
    [
        "a",
        "b.c",
        " ",
        "=",
        "!=",
        "<",
        ">=",
        "(",
        ")",
        ",",
        "'",
        '"',
        "\\",
        "AND",
        "OR",
        "NOT",
        "IN",
        "LIKE",
        "IS",
        "NULL",
        "EXISTS",
        "CONTAINS",
        "1",
        "-2.5e3",
        "true",
        "`x`",
        "%",
        "é",
        ";",
        "--",
        "?",
    ]
)


@settings(max_examples=300)
@given(st.lists(_FUZZ_ALPHABET, max_size=14).map(" ".join))
def test_fuzzed_text_parses_or_raises_filter_errors(text: str) -> None:
    try:
        node = parse(text)
    except (InvalidFilterError, UnknownFieldError):
        return
    to_sql(node)  # anything that parses compiles


# ---------------------------------------------------------------------------
# Rendering and round trips


def test_format_examples() -> None:
    node = and_(
        c("kind", "eq", "faq"),
        or_(c("year", "gte", 2020), not_(c("tags", "contains", "draft"))),
        c("in", "in", ["a", 1.5, None, True]),
        Condition("metadata.x", "ne", None),
        Condition("metadata.x", "null", False),
        Condition("metadata.x", "exists", False),
    )
    text = format_filter_expression(node)
    assert text == (
        'kind = "faq" AND (year >= 2020 OR NOT (tags CONTAINS "draft")) AND `in` IN ("a", 1.5, null, true)'
        " AND x IS NOT NULL AND NOT (x IS NULL) AND x NOT EXISTS"
    )
    assert format_filter_expression(And(())) == "true" and format_filter_expression(Or(())) == "false"
    assert (
        format_filter_expression(condition("id", "like", 'a"\\%\n'), field_prefix="") == r'id LIKE "a\"\\%\n"'
    )


def test_format_rejects_what_text_cannot_hold() -> None:
    with pytest.raises(InvalidFilterError, match="Raw"):
        format_filter_expression(Raw("a = 1"))
    with pytest.raises(InvalidFilterError, match="field_prefix"):
        format_filter_expression(condition("id", "eq", "x"))


def canonical(node: FilterNode) -> FilterNode:
    """What parsing a rendered tree gives back: flattened groups, negations as NOT nodes."""
    if isinstance(node, And):
        return and_(*map(canonical, node.children))
    if isinstance(node, Or):
        return or_(*map(canonical, node.children))
    if isinstance(node, Not):
        return not_(canonical(node.child))
    if isinstance(node, Condition) and node.op in ("exists", "null") and node.value is False:
        return Not(Condition(node.field, node.op, True))
    return node


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_render_parse_round_trip(strategies: dict[str, Any], helpers: Any, data: Any) -> None:
    tree = data.draw(strategies["trees"])
    text = format_filter_expression(tree, field_prefix="")
    back = parse(text, field_prefix="", max_depth=100, max_nodes=1000)
    assert back == canonical(tree), text
    # Same meaning on records too (this also covers trees the canonical form rewrites).
    record = helpers.record("r", data.draw(strategies["metadata"]), data.draw(strategies["documents"]))
    assert evaluate(back, record) == evaluate(tree, record)


@settings(max_examples=150)
@given(st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=20))
def test_any_string_literal_round_trips(text: str) -> None:
    node = condition("metadata.a", "eq", text)
    rendered = format_filter_expression(node)
    assert parse(rendered) == node
    if '"' not in text and "'" not in text:
        # Single quotes read the same as double quotes.
        assert parse("a = '" + rendered[len('a = "') : -1] + "'") == node


def test_pathological_nesting_is_a_filter_error() -> None:
    text = "(" * 5000 + "a = 1" + ")" * 5000
    with pytest.raises(InvalidFilterError, match="nested too deeply"):
        parse(text, max_depth=10**6)
