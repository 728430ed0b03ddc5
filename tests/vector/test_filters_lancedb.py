"""The SQL compiler against real LanceDB: `to_sql` must select exactly what `evaluate` accepts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
from turnkit.batteries.vector.filters._core import and_, condition, evaluate, not_, or_, parse_mongo, to_sql

EPOCH = datetime(2024, 1, 1, tzinfo=UTC)  # the conftest's record timestamps start here
FilterTable = Any  # conftest.FilterTable: .table, .records, .ids(sql)


def lance_settings(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def expected(table: FilterTable, node: FilterNode) -> set[str]:
    return {r["id"] for r in table.records if evaluate(node, r)}


def check(table: FilterTable, node: FilterNode) -> None:
    sql = to_sql(node)
    assert table.ids(sql) == expected(table, node), sql


# ---------------------------------------------------------------------------
# Hand-picked cases (readable failures before the property tests)


def test_fixed_table_is_diverse(fixed_table: FilterTable) -> None:
    assert len(fixed_table.records) > 60
    assert fixed_table.ids("true") == {r["id"] for r in fixed_table.records}


@pytest.mark.parametrize(
    "node",
    [
        condition("metadata.a", "eq", "x"),
        condition("metadata.a", "eq", 1),
        condition("metadata.a", "eq", 1.0),
        condition("metadata.a", "eq", True),
        condition("metadata.a", "eq", False),
        condition("metadata.a", "eq", 0),
        condition("metadata.a", "eq", -0.0),
        condition("metadata.a", "eq", 2**53),
        condition("metadata.a", "eq", 2**63 - 1),
        condition("metadata.a", "eq", 2**64),
        condition("metadata.a", "eq", 1e300),
        condition("metadata.a", "eq", None),
        condition("metadata.a", "ne", None),
        condition("metadata.a", "ne", "x"),
        condition("metadata.a", "gt", 1),
        condition("metadata.a", "lt", 0),
        condition("metadata.a", "lte", -0.0),
        condition("metadata.a", "gte", "x"),
        condition("metadata.a", "lt", "a"),
        condition("metadata.a", "in", ["x", 1, True, None]),
        condition("metadata.a", "in", []),
        condition("metadata.a", "nin", []),
        condition("metadata.a", "nin", ["x", 5]),
        condition("metadata.a", "like", "a%"),
        condition("metadata.a", "like", "a\\%"),
        condition("metadata.a", "like", "a_b"),
        condition("metadata.a", "like", "%'%"),
        condition("metadata.a", "contains", "x"),
        condition("metadata.a", "contains", "1"),
        condition("metadata.a", "contains", 1),
        condition("metadata.a", "contains", 0),
        condition("metadata.a", "contains", True),
        condition("metadata.a", "contains", "true"),
        condition("metadata.a", "contains", "' OR '1'='1"),
        condition("metadata.a", "exists"),
        condition("metadata.a", "exists", False),
        condition("metadata.o.a", "eq", "x"),
        condition("metadata.o.a", "exists"),
        condition("metadata.o.0", "gte", 0),
        condition("metadata.0", "null"),
        condition("metadata.c-d", "eq", 1),
        condition("metadata.missing", "null"),
        condition("metadata.missing", "ne", 1),
        condition("id", "eq", "it's"),
        condition("id", "in", ["r001", "r002", "nope"]),
        condition("id", "gt", "r050"),
        condition("id", "like", "r0_1"),
        condition("id", "contains", "-"),
        condition("document", "eq", None),
        condition("document", "ne", "x"),
        condition("document", "like", "%"),
        condition("document", "contains", ""),
        condition("document", "in", ["x", None]),
        condition("created_at", "gt", EPOCH + timedelta(minutes=37)),
        condition("created_at", "eq", EPOCH + timedelta(minutes=37, microseconds=2)),
        condition("updated_at", "lte", "2024-01-01T12:00:00+00:00"),
        condition("created_at", "nin", [EPOCH + timedelta(minutes=1)]),
        And(()),
        Or(()),
        Not(And(())),
        not_(or_(condition("metadata.a", "eq", 1), condition("metadata.b", "eq", "x"))),
        and_(condition("metadata.a", "exists"), not_(condition("metadata.a", "in", [1, "x"]))),
    ],
    ids=repr,
)
def test_condition_matches_evaluate(fixed_table: FilterTable, node: FilterNode) -> None:
    check(fixed_table, node)


def test_mongo_filter_matches_evaluate(fixed_table: FilterTable) -> None:
    node = parse_mongo(
        {
            "$or": [{"a": {"$gte": 1, "$lt": 3000}}, {"b": {"$in": ["x", True]}}],
            "$nor": [{"o.a": {"$exists": True}}],
            "a": {"$not": {"$contains": "x"}},
        },
        field_prefix="metadata.",
    )
    check(fixed_table, node)


def test_raw_fragment_binds_literals(fixed_table: FilterTable) -> None:
    node = and_(
        Raw("id = ? OR id IN (?)", ("it's", ["r001", "' OR '1'='1"])), condition("document", "exists")
    )
    assert fixed_table.ids(to_sql(node)) == {"it's", "r001"}


def test_injection_attempts_match_nothing_else(fixed_table: FilterTable) -> None:
    for text in ["x' OR '1'='1", "x'; DROP TABLE t; --", "' OR 1=1 --", "') OR ('1'='1", "\\' OR 1=1"]:
        for field in ("id", "document", "metadata.a"):
            node = condition(field, "eq", text)
            matched = fixed_table.ids(to_sql(node))
            assert matched == expected(fixed_table, node)
            assert all(_value(r, field) == text for r in fixed_table.records if r["id"] in matched)
        assert fixed_table.ids(to_sql(Raw("id = ?", (text,)))) == set()
    assert (
        fixed_table.ids(to_sql(condition("metadata.a", "eq", "' OR '1'='1")))
        == {r["id"] for r in fixed_table.records if r["metadata"] and r["metadata"].get("a") == "' OR '1'='1"}
        != set()
    )


# ---------------------------------------------------------------------------
# Properties


@lance_settings(400)
@given(data=st.data())
def test_random_filters_on_fixed_records(
    fixed_table: FilterTable, strategies: dict[str, Any], data: Any
) -> None:
    node = data.draw(strategies["trees"])
    check(fixed_table, node)


@lance_settings(150)
@given(data=st.data())
def test_string_literals_cannot_change_meaning(fixed_table: FilterTable, helpers: Any, data: Any) -> None:
    text = data.draw(
        st.one_of(
            st.sampled_from(helpers.TRICKY_STRINGS),
            st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=30),
            st.builds(
                lambda a, b: f"{a}' {b} '",
                st.sampled_from(["x", "", "a%"]),
                st.sampled_from(["OR '1'='1", "OR true OR", ") OR (1=1", "; DELETE FROM t; --", "--", "/*"]),
            ),
        )
    )
    field = data.draw(st.sampled_from(["id", "document", "metadata.a", "metadata.o.a"]))
    op = data.draw(st.sampled_from(["eq", "ne", "gt", "lt", "in", "like", "contains"]))
    node = (
        condition(field, op, [text, text] if op == "in" else text)
        if op != "like" or not text.endswith("\\")
        else None
    )
    if node is not None:
        check(fixed_table, node)
        matched = fixed_table.ids(to_sql(node))
        if op == "eq":
            # Only records whose value is exactly the text match: nothing in the
            # literal can widen the query.
            assert all(_value(r, field) == text for r in fixed_table.records if r["id"] in matched)
    raw = Raw("id = ? AND (document IS NULL OR document <> ?)", (text, text))
    assert fixed_table.ids(to_sql(raw)) <= {text}


def _value(rec: dict[str, Any], field: str) -> Any:
    if field in rec:
        return rec[field]
    current: Any = rec["metadata"]
    for seg in field.split(".")[1:]:
        if not isinstance(current, dict) or seg not in current:
            return None
        current = current[seg]
    return current


@lance_settings(60)
@given(data=st.data())
def test_random_records_and_filters(
    make_table: Callable[[Sequence[dict[str, Any]]], FilterTable],
    strategies: dict[str, Any],
    helpers: Any,
    data: Any,
) -> None:
    count = data.draw(st.integers(min_value=1, max_value=12))
    records = []
    for i in range(count):
        rec = helpers.record(
            f"g{i}",
            data.draw(strategies["metadata"]),
            data.draw(strategies["documents"]),
        )
        rec["created_at"] = data.draw(strategies["timestamps"])
        rec["updated_at"] = data.draw(strategies["timestamps"])
        records.append(rec)
    table = make_table(records)
    for _ in range(4):
        check(table, data.draw(strategies["trees"]))


def test_contains_number_matches_nested_arrays_one_level(make_table: Any, helpers: Any) -> None:
    record = helpers.record
    # LanceDB's JSONPath lax mode looks one level into nested arrays; evaluate() mirrors it.
    table = make_table(
        [
            record("flat", {"t": [1, 2]}),
            record("nested", {"t": [[1], 3]}),
            record("deep", {"t": [[[1]]]}),
            record("scalar", {"t": 1}),
            record("text", {"t": ["1"]}),
            record("float", {"t": [1.0]}),
            record("bool", {"t": [True]}),
        ]
    )
    node = condition("metadata.t", "contains", 1)
    assert table.ids(to_sql(node)) == expected(table, node) == {"flat", "nested", "float"}
    text = condition("metadata.t", "contains", "1")
    assert table.ids(to_sql(text)) == expected(table, text) == {"text"}
    flag = condition("metadata.t", "contains", True)
    assert table.ids(to_sql(flag)) == expected(table, flag) == {"bool"}


def test_keys_that_look_like_indexes_never_index_arrays(make_table: Any, helpers: Any) -> None:
    record = helpers.record
    table = make_table(
        [
            record("obj", {"o": {"0": "x"}}),
            record("arr", {"o": ["x"]}),
            record("top", {"0": "x"}),
        ]
    )
    for field in ("metadata.o.0", "metadata.0"):
        for node in (condition(field, "eq", "x"), condition(field, "exists"), condition(field, "like", "x")):
            check(table, node)
    assert table.ids(to_sql(condition("metadata.o.0", "eq", "x"))) == {"obj"}


def test_non_null_column_compiles_without_guard() -> None:
    # `id` is NOT NULL: no coalesce/IS NOT NULL, so a scalar index on id stays usable.
    assert to_sql(condition("id", "in", ["a", "b"])) == "id IN ('a', 'b')"
    assert to_sql(Condition("id", "eq", "a")) == "id = 'a'"
