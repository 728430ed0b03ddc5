"""Unit tests of the filter layer: building, validation, Mongo dicts, SQL text, raw bindings, evaluate."""

from __future__ import annotations

import inspect
import json
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector._errors import (
    InvalidFilterError,
    UnknownFieldError,
)
from turnkit.batteries.vector.filters._ast import And, Condition, Not, Or, Raw
from turnkit.batteries.vector.filters._core import (
    MAX_IN_VALUES,
    MISSING,
    OPERATOR_ALIASES,
    and_,
    bind_raw,
    condition,
    evaluate,
    filter_to_dict,
    not_,
    or_,
    parse_mongo,
    sql_literal,
    to_sql,
    validate_field,
)

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def rec(
    metadata: Any = None, *, id: str = "r1", document: str | None = "doc", at: datetime = T0
) -> dict[str, Any]:
    return {"id": id, "document": document, "metadata": metadata, "created_at": at, "updated_at": at}


def matches(node: Any, metadata: Any = None, **kwargs: Any) -> bool:
    return evaluate(node, rec(metadata, **kwargs))


# ---------------------------------------------------------------------------
# Fields


@pytest.mark.parametrize(
    "field",
    [
        "id",
        "document",
        "created_at",
        "updated_at",
        "metadata.a",
        "metadata.a.b",
        "metadata.c-d",
        "metadata.2021",
        "metadata._x",
        "metadata.A1_b-2",
        "metadata." + ".".join(["k"] * 16),
        "metadata." + "k" * 128,
    ],
)
def test_valid_fields(field: str) -> None:
    assert validate_field(field) == field


@pytest.mark.parametrize(
    ("field", "hint"),
    [
        ("Id", "did you mean 'id'"),
        ("Metadata.kind", "did you mean 'metadata.kind'"),
        ("score", "'metadata.score'"),
        ("metadata", "Name a key"),
        ("metadata.", "metadata keys"),
        ("metadata..a", "empty key"),
        ("metadata.a.", "empty key"),
        ("metadata.a b", "characters"),
        ("metadata.$gt", "characters"),
        ("metadata.-a", "characters"),
        ("metadata.a'b", "characters"),
        ("metadata.é", "characters"),
        ("metadata." + ".".join(["k"] * 17), "more than 16"),
        ("metadata." + "k" * 129, "longer than"),
        ("vector", "cannot be filtered"),
        ("$gt", "Operators"),
        ("id; DROP TABLE t", "Fields are"),
        ("", "Fields are"),
    ],
)
def test_invalid_fields(field: str, hint: str) -> None:
    with pytest.raises(UnknownFieldError) as info:
        validate_field(field)
    assert info.value.code == "E_VECTOR_STORE_UNKNOWN_FIELD"
    assert hint.lower() in (str(info.value)).lower()


def test_field_must_be_a_string() -> None:
    with pytest.raises(UnknownFieldError):
        validate_field(3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# condition(): operators and values


@pytest.mark.parametrize(("alias", "canonical"), sorted(OPERATOR_ALIASES.items()))
def test_operator_aliases(alias: str, canonical: str) -> None:
    value: Any = {"in": [1], "nin": [1], "exists": MISSING, "null": MISSING, "like": "a%"}.get(canonical, 1)
    for spelling in (alias, alias.upper(), f"  {alias}  "):
        assert condition("metadata.x", spelling, value).op == canonical


def test_operator_spacing_and_case() -> None:
    assert condition("metadata.x", "NOT   IN", [1]).op == "nin"
    assert condition("metadata.x", "Is Null") == Condition("metadata.x", "null", True)
    assert condition("metadata.x", "is not null") == Condition("metadata.x", "ne", None)


@pytest.mark.parametrize("op", ["=~", "regex", "$eq", "between", "ilike", "", "not like", None, 3])
def test_unknown_operator(op: Any) -> None:
    with pytest.raises(InvalidFilterError) as info:
        condition("metadata.x", op, 1)
    assert info.value.code == "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR"
    if isinstance(op, str):
        assert "supported" in str(info.value) and "not in" in str(info.value)


def test_none_with_eq_and_ne() -> None:
    assert condition("metadata.x", "=", None) == Condition("metadata.x", "null", True)
    assert condition("metadata.x", "!=", None) == Condition("metadata.x", "ne", None)
    assert condition("document", "eq", None) == Condition("document", "null", True)


def test_exists_and_null_values() -> None:
    assert condition("metadata.x", "exists") == Condition("metadata.x", "exists", True)
    assert condition("metadata.x", "exists", False) == Condition("metadata.x", "exists", False)
    assert condition("metadata.x", "null", False).value is False
    with pytest.raises(InvalidFilterError):
        condition("metadata.x", "exists", 1)
    with pytest.raises(InvalidFilterError):
        condition("metadata.x", "is not null", False)


def test_value_is_required() -> None:
    with pytest.raises(InvalidFilterError, match="needs a value"):
        condition("metadata.x", "eq")


@pytest.mark.parametrize("value", ["x", "", 0, -1, 2**63, 1.5, -0.0, 1e300, True, False])
def test_accepted_eq_values(value: Any) -> None:
    assert condition("metadata.x", "eq", value).value == value


@pytest.mark.parametrize(
    ("op", "value", "message"),
    [
        ("eq", math.nan, "nan"),
        ("eq", math.inf, "inf"),
        ("gt", -math.inf, "inf"),
        ("eq", 10**400, "float64 range"),
        ("gt", True, "strings or numbers"),
        ("lt", None, "strings or numbers"),
        ("eq", [1, 2], "list"),
        ("eq", {"a": 1}, "object"),
        ("eq", T0, "datetime"),
        ("eq", b"x", "bytes"),
        ("eq", "a\x00b", "NUL"),
        ("eq", "\ud800", "surrogate"),
        ("eq", "x" * 65_537, "longer"),
        ("in", "abc", "list or tuple"),
        ("in", {1, 2}, "list or tuple"),
        ("in", [1, [2]], "list"),
        ("in", [math.nan], "nan"),
        ("like", 5, "string pattern"),
        ("like", "abc\\", "lone backslash"),
        ("contains", 1.5, "integers below 2**53"),
        ("contains", 2**53, "integers below 2**53"),
        ("contains", None, "needs a string"),
        ("contains", [1], "needs a string"),
    ],
)
def test_rejected_values(op: str, value: Any, message: str) -> None:
    with pytest.raises(InvalidFilterError) as info:
        condition("metadata.x", op, value)
    assert info.value.code == "E_VECTOR_STORE_INVALID_FILTER"
    assert message.lower() in str(info.value).lower()
    assert info.value.hint


def test_in_list_limits_and_normalization() -> None:
    assert condition("metadata.x", "in", [1, "a", None, True]).value == (1, "a", None, True)
    assert condition("metadata.x", "in", ()).value == ()
    assert condition("id", "in", ["a", None]).value == ("a",)  # ids are never null
    condition("metadata.x", "in", [0] * MAX_IN_VALUES)
    with pytest.raises(InvalidFilterError, match="more than"):
        condition("metadata.x", "in", [0] * (MAX_IN_VALUES + 1))


def test_contains_accepts_integral_numbers_and_bools() -> None:
    assert condition("metadata.t", "contains", 2.0).value == 2.0
    assert condition("metadata.t", "contains", -(2**53) + 1).value == -(2**53) + 1
    assert condition("metadata.t", "contains", True).value is True


@pytest.mark.parametrize("field", ["id", "document"])
def test_text_columns_take_strings(field: str) -> None:
    assert condition(field, "like", "a%").value == "a%"
    assert condition(field, "contains", "x").value == "x"
    for op, value in [("eq", 1), ("gt", 1.5), ("eq", True), ("contains", 1), ("in", ["a", 1])]:
        with pytest.raises(InvalidFilterError):
            condition(field, op, value)


def test_timestamp_columns() -> None:
    node = condition("created_at", ">=", "2024-01-01T00:00:00Z")
    assert node.value == T0 and node.value.tzinfo is not None
    shifted = condition("updated_at", "eq", datetime(2024, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))))
    assert shifted.value == T0 and shifted.value.utcoffset() == timedelta(0)
    assert condition("created_at", "in", ["2024-01-01T00:00:00+00:00", T0]).value == (T0, T0)
    for bad in (datetime(2024, 1, 1), "2024-01-01T00:00:00", "yesterday", 1700000000, True):
        with pytest.raises(InvalidFilterError) as info:
            condition("created_at", "gt", bad)
        assert info.value.hint
    for op in ("like", "contains"):
        with pytest.raises(InvalidFilterError):
            condition("created_at", op, "2024")


def test_a_bare_key_is_the_metadata_key() -> None:
    assert validate_field("year") == "metadata.year"
    assert validate_field("source.kind") == "metadata.source.kind"
    assert condition("year", ">", 2020) == condition("metadata.year", ">", 2020)
    assert condition("kind", "exists") == Condition("metadata.kind", "exists", True)
    with pytest.raises(UnknownFieldError, match="did you mean 'id'"):
        condition("ID", "=", "x")


# ---------------------------------------------------------------------------
# Logical constructors


def test_and_or_flatten() -> None:
    a, b, c = (condition(f"metadata.{k}", "eq", 1) for k in "abc")
    assert and_(a, and_(b, c)) == And((a, b, c))
    assert or_(or_(a, b), c) == Or((a, b, c))
    assert and_(a, or_(b, c)) == And((a, Or((b, c))))
    assert and_(a) is a and or_(b) is b
    assert and_() == And(()) and or_() == Or(())
    assert and_(And(()), a) == a


def test_not_cancels_double_negation() -> None:
    a = condition("metadata.a", "eq", 1)
    assert not_(a) == Not(a)
    assert not_(not_(a)) is a


def test_constructors_reject_non_nodes() -> None:
    with pytest.raises(InvalidFilterError):
        and_("id = 1")  # type: ignore[arg-type]
    with pytest.raises(InvalidFilterError):
        not_({"a": 1})  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# parse_mongo


def m(obj: Any, **kwargs: Any) -> Any:
    return parse_mongo(obj, field_prefix="metadata.", **kwargs)


@pytest.mark.parametrize(
    ("op", "value", "expected"),
    [
        ("$eq", 1, Condition("metadata.f", "eq", 1)),
        ("$ne", "x", Condition("metadata.f", "ne", "x")),
        ("$gt", 1, Condition("metadata.f", "gt", 1)),
        ("$gte", 1.5, Condition("metadata.f", "gte", 1.5)),
        ("$lt", "m", Condition("metadata.f", "lt", "m")),
        ("$lte", 0, Condition("metadata.f", "lte", 0)),
        ("$in", ["a", 1], Condition("metadata.f", "in", ("a", 1))),
        ("$nin", [], Condition("metadata.f", "nin", ())),
        ("$like", "a%", Condition("metadata.f", "like", "a%")),
        ("$contains", "x", Condition("metadata.f", "contains", "x")),
        ("$exists", True, Condition("metadata.f", "exists", True)),
        ("$exists", False, Condition("metadata.f", "exists", False)),
        ("$eq", None, Condition("metadata.f", "null", True)),
        ("$ne", None, Condition("metadata.f", "ne", None)),
    ],
)
def test_mongo_field_operators(op: str, value: Any, expected: Condition) -> None:
    assert m({"f": {op: value}}) == expected


def test_mongo_shorthands_and_implicit_and() -> None:
    assert m({"f": "x"}) == Condition("metadata.f", "eq", "x")
    assert m({"f": [1, 2]}) == Condition("metadata.f", "in", (1, 2))
    assert m({"f": None}) == Condition("metadata.f", "null", True)
    assert m({"a": 1, "b": {"$gt": 2, "$lt": 5}}) == And(
        (Condition("metadata.a", "eq", 1), Condition("metadata.b", "gt", 2), Condition("metadata.b", "lt", 5))
    )
    assert m({}) == And(())
    assert m({"a.b": 1}) == Condition("metadata.a.b", "eq", 1)


def test_mongo_logical_operators() -> None:
    a, b = Condition("metadata.a", "eq", 1), Condition("metadata.b", "eq", 2)
    assert m({"$and": [{"a": 1}, {"b": 2}]}) == And((a, b))
    assert m({"$or": [{"a": 1}, {"b": 2}]}) == Or((a, b))
    assert m({"$nor": [{"a": 1}, {"b": 2}]}) == Not(Or((a, b)))
    assert m({"$not": {"a": 1}}) == Not(a)
    assert m({"a": {"$not": {"$eq": 1}}}) == Not(a)
    assert m({"$and": []}) == And(()) and m({"$or": []}) == Or(()) and m({"$nor": []}) == Not(Or(()))
    assert m({"$or": [{"a": 1, "b": 2}, {"$not": {"b": 2}}]}) == Or((And((a, b)), Not(b)))


def test_mongo_prefix_restricts_to_metadata() -> None:
    assert m({"id": "x"}) == Condition("metadata.id", "eq", "x")
    assert m({"document": {"$exists": True}}).field == "metadata.document"
    with pytest.raises(UnknownFieldError, match=r"\$"):
        m({"a$b": 1})
    with pytest.raises(UnknownFieldError, match="Invalid metadata key"):
        m({"a b": 1})
    with pytest.raises(UnknownFieldError):
        m({"a..b": 1})


def test_mongo_without_prefix_uses_full_names() -> None:
    assert parse_mongo({"id": "x"}) == Condition("id", "eq", "x")
    assert parse_mongo({"metadata.kind": "faq"}) == Condition("metadata.kind", "eq", "faq")
    assert parse_mongo({"year": 2020}) == Condition("metadata.year", "eq", 2020)


@pytest.mark.parametrize(
    ("obj", "error", "code", "text"),
    [
        ({"$where": "1"}, InvalidFilterError, "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR", "$and"),
        (
            {"f": {"$regex": "a"}},
            InvalidFilterError,
            "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
            "$contains",
        ),
        ({"f": {"$all": [1]}}, InvalidFilterError, "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR", "supported"),
        ({"$gt": 1}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "must be applied to a field"),
        (
            {"f": {"$or": [{"a": 1}]}},
            InvalidFilterError,
            "E_VECTOR_STORE_INVALID_FILTER",
            "cannot be used inside a field",
        ),
        ({"f": {"a": 1}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "dotted"),
        ({"f": {"$eq": 1, "a": 1}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "only $operators"),
        ({"f": {}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "empty operator object"),
        ({"$and": {"a": 1}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "list"),
        ({"$or": [1]}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "object"),
        ({"$not": {}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "non-empty"),
        ({"f": {"$not": 1}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "non-empty"),
        ({"f": {"$in": "abc"}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "needs a list"),
        ({"f": {"$exists": "yes"}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "true or false"),
        ({"f": {"$gt": [1]}}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "at $.f.$gt"),
        ({1: 2}, InvalidFilterError, "E_VECTOR_STORE_INVALID_FILTER", "keys must be strings"),
    ],
)
def test_mongo_errors(obj: Any, error: type[Exception], code: str, text: str) -> None:
    with pytest.raises(error) as info:
        m(obj)
    assert info.value.code == code  # type: ignore[attr-defined]
    assert text.lower() in str(info.value).lower()


def test_mongo_error_location_for_nested_values() -> None:
    with pytest.raises(InvalidFilterError) as info:
        m({"$or": [{"a": 1}, {"b": {"$gt": True}}]})
    assert info.value.context["location"] == "$.$or[1].b.$gt"
    assert "At $.$or[1].b.$gt" in str(info.value)


def test_mongo_rejects_non_objects() -> None:
    for obj in ([{"a": 1}], "a = 1", None):
        with pytest.raises(InvalidFilterError):
            parse_mongo(obj)  # type: ignore[arg-type]
    with pytest.raises(InvalidFilterError, match="field_prefix"):
        parse_mongo({}, field_prefix="metadata")


def test_mongo_depth_limit() -> None:
    obj: dict[str, Any] = {"a": 1}
    for _ in range(10):
        obj = {"$and": [obj]}
    with pytest.raises(InvalidFilterError, match="deeper than 8"):
        m(obj)
    m(obj, max_depth=20)
    nots: dict[str, Any] = {"$eq": 1}
    for _ in range(10):
        nots = {"$not": nots}
    with pytest.raises(InvalidFilterError, match="deeper"):
        m({"f": nots})


def test_mongo_node_limit() -> None:
    with pytest.raises(InvalidFilterError, match="more than 200"):
        m({"$or": [{"a": i} for i in range(201)]})
    with pytest.raises(InvalidFilterError, match="more than 5"):
        m({f"k{i}": i for i in range(6)}, max_nodes=5)
    assert len(m({f"k{i}": i for i in range(4)}, max_nodes=5).children) == 4


# ---------------------------------------------------------------------------
# SQL literals and escaping


@pytest.mark.parametrize(
    ("value", "sql"),
    [
        ("x", "'x'"),
        ("it's", "'it''s'"),
        ("''", "''''''"),
        ("a\\b", "'a\\b'"),
        ("x'; DROP TABLE t; --", "'x''; DROP TABLE t; --'"),
        ("é😀\n", "'é😀\n'"),
        (True, "true"),
        (False, "false"),
        (None, "NULL"),
        (42, "42"),
        (-(2**63), str(-(2**63))),
        (1.5, "1.5"),
        (-0.0, "0.0"),
        (1e300, "1e+300"),
        (T0, "timestamp '2024-01-01T00:00:00.000000+00:00'"),
        (
            datetime(2024, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
            "timestamp '2024-01-01T00:00:00.000000+00:00'",
        ),
    ],
)
def test_sql_literal(value: Any, sql: str) -> None:
    assert sql_literal(value) == sql


@pytest.mark.parametrize(
    "value", ["a\x00", math.nan, math.inf, 2**63, datetime(2024, 1, 1), [1], {"a": 1}, b"x"]
)
def test_sql_literal_rejects(value: Any) -> None:
    with pytest.raises(InvalidFilterError):
        sql_literal(value)


@settings(max_examples=200)
@given(st.text(st.characters(exclude_characters="\x00")))
def test_string_literals_are_closed(text: str) -> None:
    # Every quote inside is doubled, so the literal ends exactly at its last character.
    sql = sql_literal(text)
    inner = sql[1:-1]
    assert sql[0] == sql[-1] == "'"
    assert inner.replace("''", "").count("'") == 0
    assert inner.replace("''", "'") == text


def test_to_sql_shapes() -> None:
    a = condition("metadata.a", "eq", "x")
    b = condition("id", "in", ["p", "q"])
    assert to_sql(And(())) == "true"
    assert to_sql(Or(())) == "false"
    assert to_sql(b) == "id IN ('p', 'q')"
    assert to_sql(condition("id", "in", [])) == "false"
    assert to_sql(and_(b, or_(b, b))) == "id IN ('p', 'q') AND (id IN ('p', 'q') OR id IN ('p', 'q'))"
    assert to_sql(not_(b)) == "NOT (id IN ('p', 'q'))"
    assert to_sql(a).startswith("coalesce(") and "json_get_string(metadata, 'a')" in to_sql(a)
    nested = to_sql(condition("metadata.o.z-1", "eq", "x"))
    assert "json_get_string(json_get(metadata, 'o'), 'z-1')" in nested and '$["o"]["z-1"]' in nested
    # Multi-part conditions stay grouped next to AND.
    mixed = to_sql(and_(condition("metadata.a", "in", ["x", 1]), b))
    assert mixed.startswith("(coalesce(") and ") AND id IN" in mixed
    contains = to_sql(and_(condition("metadata.t", "contains", "x"), b))
    assert contains.startswith("(coalesce(")


def test_to_sql_numbers_and_timestamps() -> None:
    assert "= 2021.0" in to_sql(condition("metadata.y", "eq", 2021))
    assert "> 0.0" in to_sql(condition("metadata.y", "gt", -0.0))
    assert "(@ == 3)" in to_sql(condition("metadata.t", "contains", 3.0))
    assert "(@ == true)" in to_sql(condition("metadata.t", "contains", True))
    assert to_sql(condition("created_at", "gt", T0)) == (
        "(created_at IS NOT NULL AND created_at > timestamp '2024-01-01T00:00:00.000000+00:00')"
    )


def test_to_sql_escapes_every_string_position() -> None:
    evil = "x' OR '1'='1"
    for node in (
        condition("id", "eq", evil),
        condition("document", "like", evil),
        condition("metadata.a", "contains", evil),
        condition("metadata.a", "in", [evil, "y"]),
        condition("metadata.a", "gte", evil),
    ):
        assert "'x'' OR ''1''=''1'" in to_sql(node)


def test_to_sql_rechecks_hand_built_conditions() -> None:
    with pytest.raises(InvalidFilterError):
        to_sql(Condition("metadata.a", "eq", math.nan))
    with pytest.raises(UnknownFieldError):
        to_sql(Condition("id; DROP TABLE t", "eq", "x"))
    with pytest.raises(InvalidFilterError):
        to_sql(Condition("metadata.a", "eq", "a\x00"))
    with pytest.raises(InvalidFilterError):
        to_sql("id = 1")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Raw fragments


def test_bind_raw_basic() -> None:
    assert bind_raw("a = ? AND b > ?", ["x", 3]) == "a = 'x' AND b > 3"
    assert bind_raw("json_get_int(metadata, 'n') > ?", [3]) == "json_get_int(metadata, 'n') > 3"
    assert bind_raw("id IN (?)", [["a", "it's"]]) == "id IN ('a', 'it''s')"
    assert bind_raw("x = ? OR y IS ?", [True, None]) == "x = true OR y IS NULL"
    assert bind_raw("c > ?", [T0]) == "c > timestamp '2024-01-01T00:00:00.000000+00:00'"
    assert bind_raw("true") == "true"


@pytest.mark.parametrize(
    "sql",
    ["a = '?' AND b = ?", 'a = "?" AND b = ?', "`we?ird` = ?", "a = 'it''s ?' AND b = ?", "a = '' AND b = ?"],
)
def test_bind_raw_leaves_quoted_placeholders(sql: str) -> None:
    out = bind_raw(sql, ["v"])
    assert out.endswith("'v'") and out.count("?") == sql.count("?") - 1


def test_bind_raw_escapes_bindings() -> None:
    assert bind_raw("id = ?", ["x' OR '1'='1"]) == "id = 'x'' OR ''1''=''1'"
    assert bind_raw("id = ?", ["?"]) == "id = '?'"  # a bound '?' is not re-bound


@pytest.mark.parametrize(
    ("sql", "bindings"), [("a = ?", []), ("a = ?", [1, 2]), ("a = 1", [1]), ("? = ?", [1])]
)
def test_bind_raw_count_mismatch(sql: str, bindings: list[Any]) -> None:
    with pytest.raises(InvalidFilterError) as info:
        bind_raw(sql, bindings)
    assert info.value.code == "E_VECTOR_STORE_RAW_BINDING_MISMATCH"


@pytest.mark.parametrize(
    ("sql", "bindings", "text"),
    [
        ("a = 1; DROP TABLE t", [], "';'"),
        ("a = 1 -- rest", [], "comment"),
        ("a = 1 /* c */", [], "comment"),
        ("a = 1) OR (1 = 1", [], "')'"),
        ("(a = 1", [], "unbalanced"),
        ("a = 'x", [], "unterminated"),
        ("a = `x", [], "unterminated"),
        ("a = \x00", [], "NUL"),
        ("", [], "non-empty"),
        ("a IN (?)", [[]], "empty list"),
        ("a = ?", [math.nan], "finite"),
        ("a = ?", [{"x": 1}], "SQL literal"),
        ("a = ?", [datetime(2024, 1, 1)], "Naive"),
        ("a = ?", [2**64], "int64"),
        ("a = ?", ["a\x00"], "NUL"),
        ("a = ?", "x", "list or tuple"),
    ],
)
def test_bind_raw_rejects(sql: str, bindings: Any, text: str) -> None:
    with pytest.raises(InvalidFilterError) as info:
        bind_raw(sql, bindings)
    assert text.lower() in str(info.value).lower()


@pytest.mark.parametrize("sql", ["", "   ", None])
def test_an_empty_raw_filter_shows_one(sql: Any) -> None:
    with pytest.raises(InvalidFilterError) as info:
        bind_raw(sql)
    assert info.value.hint == "where_raw('priority > ?', [3])"


def test_raw_nodes_are_parenthesized_and_not_evaluable() -> None:
    node = or_(Raw("a = ? OR b = ?", (1, 2)), condition("id", "eq", "x"))
    assert to_sql(node) == "(a = 1 OR b = 2) OR id = 'x'"
    with pytest.raises(InvalidFilterError, match="cannot be evaluated"):
        evaluate(node, rec())


# ---------------------------------------------------------------------------
# evaluate(): the reference semantics


def test_eq_is_type_strict() -> None:
    assert matches(condition("metadata.y", "eq", 2021), {"y": 2021})
    assert matches(condition("metadata.y", "eq", 2021), {"y": 2021.0})
    assert not matches(condition("metadata.y", "eq", 2021), {"y": "2021"})
    assert not matches(condition("metadata.y", "eq", "2021"), {"y": 2021})
    assert not matches(condition("metadata.y", "eq", 1), {"y": True})
    assert not matches(condition("metadata.y", "eq", True), {"y": 1})
    assert matches(condition("metadata.y", "eq", False), {"y": False})
    assert matches(condition("metadata.y", "eq", 0), {"y": -0.0})
    assert not matches(condition("metadata.y", "eq", "x"), {"y": ["x"]})
    # Numbers compare as float64.
    assert matches(condition("metadata.y", "eq", 2**53), {"y": 2**53 + 1})


def test_missing_and_null() -> None:
    eq, ne = condition("metadata.y", "eq", 1), condition("metadata.y", "ne", 1)
    null, notnull = condition("metadata.y", "null"), condition("metadata.y", "ne", None)
    exists = condition("metadata.y", "exists")
    for metadata, expected in [
        ({"y": 1}, (True, False, False, True, True)),
        ({"y": 2}, (False, True, False, True, True)),
        ({"y": None}, (False, True, True, False, True)),
        ({}, (False, True, True, False, False)),
        (None, (False, True, True, False, False)),
    ]:
        got = tuple(matches(n, metadata) for n in (eq, ne, null, notnull, exists))
        assert got == expected, metadata


def test_paths_walk_dicts_only() -> None:
    node = condition("metadata.o.z", "eq", "q")
    assert matches(node, {"o": {"z": "q"}})
    assert not matches(node, {"o": [{"z": "q"}]})
    assert not matches(node, {"o": "q"})
    assert matches(condition("metadata.o.z", "null"), {"o": 5})
    assert matches(condition("metadata.o", "exists"), {"o": None})
    assert matches(node, json.dumps({"o": {"z": "q"}}))  # metadata as stored JSON text


def test_ordering() -> None:
    gt = condition("metadata.v", "gt", 10)
    assert matches(gt, {"v": 11}) and matches(gt, {"v": 10.5}) and not matches(gt, {"v": 10})
    assert not matches(gt, {"v": "11"}) and not matches(gt, {"v": True}) and not matches(gt, {"v": None})
    s = condition("metadata.v", "lt", "b")
    assert matches(s, {"v": "a"}) and matches(s, {"v": "B"}) and not matches(s, {"v": "é"})
    assert not matches(s, {"v": 1})
    # code-point order equals UTF-8 byte order
    assert matches(condition("metadata.v", "gt", "\uffff"), {"v": "😀"})


def test_in_and_nin() -> None:
    node = condition("metadata.v", "in", ["a", 1, None])
    assert (
        matches(node, {"v": "a"})
        and matches(node, {"v": 1.0})
        and matches(node, {})
        and matches(node, {"v": None})
    )
    assert not matches(node, {"v": True}) and not matches(node, {"v": "1"})
    assert not matches(condition("metadata.v", "in", []), {"v": 1})
    assert matches(condition("metadata.v", "nin", []), {"v": 1})
    assert matches(condition("metadata.v", "nin", ["a"]), {})


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("a%", ["a", "abc", "a\nb"], ["ba", "A"]),
        ("a_c", ["abc", "a😀c", "a\nc"], ["ac", "abbc"]),
        ("100\\%", ["100%"], ["100", "1000"]),
        ("a\\_b", ["a_b"], ["axb"]),
        ("a\\\\b", ["a\\b"], ["ab"]),
        ("a\\xb", ["axb"], ["a\\xb"]),
        ("%", ["", "x"], []),
        ("", [""], ["x"]),
        ("[a]*.", ["[a]*."], ["a"]),
    ],
)
def test_like(pattern: str, yes: list[str], no: list[str]) -> None:
    node = condition("metadata.s", "like", pattern)
    for value in yes:
        assert matches(node, {"s": value}), value
    for value in no:
        assert not matches(node, {"s": value}), value
    assert not matches(node, {"s": 5})
    assert not matches(node, {"s": ["abc"]})


def test_contains() -> None:
    text = condition("metadata.t", "contains", "x")
    assert matches(text, {"t": "axb"}) and matches(text, {"t": ["x"]}) and matches(text, {"t": "x"})
    assert (
        not matches(text, {"t": [["x"]]}) and not matches(text, {"t": ["xy"]}) and not matches(text, {"t": 5})
    )
    assert matches(condition("metadata.t", "contains", ""), {"t": "abc"})
    one = condition("metadata.t", "contains", 1)
    assert matches(one, {"t": [1]}) and matches(one, {"t": [1.0]}) and matches(one, {"t": [[1]]})
    assert not matches(one, {"t": 1}) and not matches(one, {"t": ["1"]}) and not matches(one, {"t": [True]})
    assert not matches(one, {"t": [[[1]]]}) and not matches(one, {"t": [{"a": 1}]})
    flag = condition("metadata.t", "contains", True)
    assert (
        matches(flag, {"t": [True]}) and not matches(flag, {"t": [1]}) and not matches(flag, {"t": ["true"]})
    )


def test_columns() -> None:
    assert evaluate(condition("id", "eq", "r1"), rec())
    assert evaluate(condition("id", "like", "r_"), rec())
    assert evaluate(condition("id", "exists"), rec()) and not evaluate(condition("id", "null"), rec())
    assert evaluate(condition("document", "null"), rec(document=None))
    assert not evaluate(condition("document", "eq", "doc"), rec(document=None))
    assert evaluate(condition("document", "ne", "doc"), rec(document=None))
    assert evaluate(condition("document", "in", [None]), rec(document=None))
    assert evaluate(condition("document", "contains", "o"), rec())
    later = T0 + timedelta(microseconds=1)
    assert evaluate(condition("created_at", "gt", T0), rec(at=later))
    assert evaluate(condition("created_at", "eq", later), rec(at=later))
    # Naive record timestamps are taken as UTC.
    assert evaluate(condition("updated_at", "eq", T0), rec(at=datetime(2024, 1, 1)))


def test_logic_is_two_valued() -> None:
    a = condition("metadata.a", "eq", 1)
    for metadata in ({"a": 1}, {"a": 2}, {}, None, {"a": None}):
        assert matches(not_(a), metadata) is not matches(a, metadata)
    assert matches(And(()), None) and not matches(Or(()), None)


# ---------------------------------------------------------------------------
# filter_to_dict


def test_filter_to_dict() -> None:
    node = and_(
        condition("metadata.a", "in", ["x", 1]),
        not_(condition("created_at", "gt", T0)),
        or_(condition("metadata.b", "exists"), Raw("a = ?", (T0,))),
    )
    data = filter_to_dict(node)
    assert data == {
        "and": [
            {"field": "metadata.a", "op": "in", "value": ["x", 1]},
            {"not": {"field": "created_at", "op": "gt", "value": "2024-01-01T00:00:00+00:00"}},
            {
                "or": [
                    {"field": "metadata.b", "op": "exists", "value": True},
                    {"raw": "a = ?", "bindings": [T0.isoformat()]},
                ]
            },
        ]
    }
    json.dumps(data)


def test_pathologically_deep_trees_raise_filter_errors() -> None:
    node: Any = condition("metadata.a", "eq", 1)
    for i in range(5000):
        node = Not(node) if i % 2 else And((node, condition("metadata.b", "eq", 2)))
    for function in (to_sql, filter_to_dict, lambda n: evaluate(n, rec({"a": 1}))):
        with pytest.raises(InvalidFilterError, match="nested too deeply"):
            function(node)
    obj: dict[str, Any] = {"a": 1}
    for _ in range(5000):
        obj = {"$not": obj}
    with pytest.raises(InvalidFilterError, match="nested too deeply"):
        parse_mongo(obj, max_depth=10**6, max_nodes=10**6)


def test_where_declares_each_form_it_takes_for_type_checkers() -> None:
    """One clause, ``(field, value)`` or ``(field, op, value)``, each an overload type checkers read."""
    import typing

    from turnkit.batteries.vector.filters._where import Filterable

    for name in ("where", "or_where", "where_not", "or_where_not"):
        forms = typing.get_overloads(getattr(Filterable, name))
        assert [len(inspect.signature(f).parameters) for f in forms] == [2, 3, 4], name
