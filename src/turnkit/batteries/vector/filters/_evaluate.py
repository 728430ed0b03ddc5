"""The reference semantics: `evaluate` decides in Python what `to_sql` must select."""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final, assert_never

from turnkit._checks import is_number
from turnkit.batteries.vector._errors import InvalidFilterError
from turnkit.batteries.vector.filters._ast import COLUMN_FIELDS, And, Condition, FilterNode, Not, Or, Raw
from turnkit.batteries.vector.filters._fields import MISSING, _Number, _path, _too_deep
from turnkit.batteries.vector.filters._sql import _recheck


def evaluate(node: FilterNode, record: Mapping[str, Any]) -> bool:
    """Decide whether ``record`` matches ``node``: the reference semantics of every filter.

    A record is ``{"id": str, "document": str | None, "metadata": dict | None,
    "created_at": datetime, "updated_at": datetime}``. A metadata path walks
    nested dicts; a missing key (or a non-dict on the way) is *missing*, JSON
    ``null`` is ``None``. Comparisons are type-strict: a string literal
    matches only strings, a number only numbers (not bools; compared as
    float64), a bool only bools. ``ne``/``nin`` are the negations of
    ``eq``/``in``, so a missing key satisfies them. See ``docs/filters.md``.

    Args:
        node: The filter tree.
        record: The record to test.

    Returns:
        True when the record matches.

    Raises:
        InvalidFilterError: The tree contains a `Raw` SQL fragment, which only
            LanceDB can evaluate.
    """
    try:
        return _evaluate(node, record)
    except RecursionError:
        raise _too_deep() from None


def _evaluate(node: FilterNode, record: Mapping[str, Any]) -> bool:
    if isinstance(node, And):
        return all(_evaluate(child, record) for child in node.children)
    if isinstance(node, Or):
        return any(_evaluate(child, record) for child in node.children)
    if isinstance(node, Not):
        return not _evaluate(node.child, record)
    if isinstance(node, Raw):
        raise InvalidFilterError(
            "A raw SQL filter cannot be evaluated in Python.",
            hint="Use structured filters (where(), a Mongo-style dict) where Python evaluation is needed.",
        )
    if isinstance(node, Condition):
        return _eval_condition(_recheck(node), record)
    raise InvalidFilterError(f"Not a filter node: {type(node).__name__}.")


def _lookup(field: str, record: Mapping[str, Any]) -> Any:
    if field in COLUMN_FIELDS:
        value = record.get(field)
        if isinstance(value, datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)  # naive record timestamps are taken as UTC
        return value
    current: Any = record.get("metadata")
    if isinstance(current, str | bytes):
        current = json.loads(current)
    for seg in _path(field):
        if not isinstance(current, Mapping) or seg not in current:
            return MISSING
        current = current[seg]
    return current


def _as_float(value: _Number) -> float | None:
    try:
        return float(value)
    except OverflowError:
        # Such integers cannot be stored: LanceDB's JSON column keeps them as null.
        return None


def _json_eq(value: Any, literal: Any) -> bool:
    """Type-strict equality of a JSON value with a literal (str, number, bool)."""
    if isinstance(literal, bool):
        return isinstance(value, bool) and value == literal
    if isinstance(literal, str):
        return isinstance(value, str) and value == literal
    if is_number(value, finite=False):
        number = _as_float(value)
        return number is not None and number == float(literal)
    return False


def _eval_condition(node: Condition, record: Mapping[str, Any]) -> bool:
    field, op, literal = node.field, node.op, node.value
    value = _lookup(field, record)
    is_column = field in COLUMN_FIELDS
    absent = value is None or value is MISSING
    match op:
        case "exists":
            present = not absent if is_column else value is not MISSING
            return present is literal
        case "null":
            return absent is literal
        case "ne":
            if literal is None:
                return not absent
            return not _eval_condition(Condition(field, "eq", literal), record)
        case "nin":
            return not _eval_condition(Condition(field, "in", literal), record)
        case "in":
            return any(
                absent if item is None else _eval_condition(Condition(field, "eq", item), record)
                for item in literal
            )
        case "eq":
            return not absent and (value == literal if is_column else _json_eq(value, literal))
        case "gt" | "gte" | "lt" | "lte":
            return not absent and _compare(op, value, literal, is_column)
        case "like":
            return not absent and isinstance(value, str) and _like_regex(literal).fullmatch(value) is not None
        case "contains":
            return not absent and _contains(value, literal)
        case _:
            assert_never(op)


_ORDER: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    "gt": operator.gt,
    "gte": operator.ge,
    "lt": operator.lt,
    "lte": operator.le,
}


def _compare(op: str, value: Any, literal: Any, is_column: bool) -> bool:
    compare = _ORDER[op]
    if is_column:
        return compare(value, literal)
    if isinstance(literal, str):
        # Python orders str by code point, which is UTF-8 byte order: the same as DataFusion.
        return isinstance(value, str) and compare(value, literal)
    if is_number(value, finite=False):
        number = _as_float(value)
        return number is not None and compare(number, float(literal))
    return False


def _contains(value: Any, literal: Any) -> bool:
    if isinstance(literal, str):
        if isinstance(value, str):
            return literal in value
        return isinstance(value, list) and any(isinstance(item, str) and item == literal for item in value)
    if not isinstance(value, list):
        return False
    # Mirrors LanceDB's JSONPath lax mode: an element that is itself an array
    # is searched one level deep (see _metadata_contains).
    return any(
        _json_eq(item, literal) or (isinstance(item, list) and any(_json_eq(sub, literal) for sub in item))
        for item in value
    )


@lru_cache(maxsize=256)
def _like_regex(pattern: str) -> re.Pattern[str]:
    """A regex with DataFusion's LIKE semantics (measured on lancedb 0.40).

    ``%`` matches any run of characters and ``_`` exactly one character
    (newlines included); a backslash makes the next character literal,
    whatever it is. Matching is case-sensitive and anchored at both ends.
    """
    out: list[str] = []
    chars = iter(pattern)
    for ch in chars:
        if ch == "\\":
            out.append(re.escape(next(chars, "\\")))
        elif ch == "%":
            out.append(".*")
        elif ch == "_":
            out.append(".")
        else:
            out.append(re.escape(ch))
    return re.compile("".join(out), re.DOTALL)
