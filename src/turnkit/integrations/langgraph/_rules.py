"""What LangGraph's store contract means, as pure functions: filters, namespace matches, values, ids.

No I/O and no turnkit store here, so the rules can be read (and tested) on their own.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition

from turnkit._checks import is_int

from ...batteries.vector import InvalidFilterError
from .._common import invalid_query, record_error

__all__ = [
    "OPERATORS",
    "check_filter",
    "check_page",
    "item_id",
    "json_text",
    "matches_filter",
    "namespace_matches",
    "prefix_label",
    "read_value",
    "value_text",
]

OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")
_RANGE = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
_VALUE_HINT = (
    "Store JSON values: a dict with string keys holding str, int, float (finite), bool, None, "
    "lists and dicts; convert dates, tuples, sets and objects first."
)


def json_text(value: Any) -> str:
    """Compact ASCII JSON: every string (a lone surrogate too) survives storage and comes back equal."""
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"), allow_nan=False)


def item_id(namespace: Sequence[str], key: str) -> str:
    """The record id of an item: a digest of its namespace and key (no label can spell another's)."""
    return "lg-" + hashlib.sha256(json_text([list(namespace), key]).encode()).hexdigest()[:40]


def prefix_label(prefix: Sequence[str]) -> str:
    """How a namespace prefix is stored in the rows' ``lg_prefixes`` list (whole labels only)."""
    return json_text(list(prefix))


def value_text(value: Any, *, namespace: tuple[str, ...], key: str) -> str:
    """The stored form of an item's value; refused unless it reads back equal and of the same types."""
    where = f"The value of {key!r} in namespace {namespace!r}"
    if not isinstance(value, Mapping):
        problem = f"is a {type(value).__name__}; LangGraph values are dicts."
    else:
        try:
            text = json_text(value)
            if _same(json.loads(text), value):
                return text
            problem = "would not read back as it was written (a non-string key, a tuple or a subclass)."
        except (TypeError, ValueError, RecursionError) as exc:
            problem = f"is not JSON: {exc}."
    raise record_error(f"{where} {problem}", hint=_VALUE_HINT, record_id=key)


def _same(back: Any, value: Any) -> bool:
    # ``==`` alone takes (1,) for [1] as unequal but True for 1 and {1: x} for {"1": x} as unequal too;
    # the type walk catches what == forgives (True vs 1, 1.0 vs 1, a tuple inside a list).
    if type(value) is not type(back):
        return isinstance(value, Mapping) and isinstance(back, dict) and _same(back, dict(value))
    if isinstance(value, dict):
        return back.keys() == value.keys() and all(_same(back[k], value[k]) for k in value)
    if isinstance(value, list):
        return len(back) == len(value) and all(_same(b, v) for b, v in zip(back, value, strict=True))
    return bool(back == value)


def read_value(text: str) -> dict[str, Any]:
    """An item's value from its stored form."""
    value: dict[str, Any] = json.loads(text)
    return value


# -- namespaces ----------------------------------------------------------------------------------
def namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """LangGraph's rule: whole labels from the left (prefix) or right (suffix); ``*`` is any one label."""
    path = tuple(condition.path)
    if condition.match_type != "prefix":  # a suffix: the same test from the right
        path, namespace = path[::-1], namespace[::-1]
    return len(namespace) >= len(path) and all(
        p in ("*", label) for p, label in zip(path, namespace, strict=False)
    )


# -- filters -------------------------------------------------------------------------------------
def check_filter(spec: Any) -> dict[str, Any] | None:
    """Refuse a filter that LangGraph could not evaluate, before anything is read.

    A filter is a dict of top-level value keys; a value is a literal (equality,
    dicts as a subset, lists element by element) or a dict of operators.
    """
    if spec is None or spec == {}:
        return None
    if not isinstance(spec, Mapping):
        raise InvalidFilterError(
            f"A LangGraph filter is a dict of value keys, got {type(spec).__name__}.",
            hint='Example: {"kind": "note", "score": {"$gte": 3}}.',
        )
    for key, wanted in spec.items():
        if not isinstance(key, str):
            raise InvalidFilterError(
                f"Filter keys are strings, got {key!r}.", hint="Name a top-level value key."
            )
        _check_operand(key, wanted)
    return dict(spec)


def _check_operand(key: str, wanted: Any) -> None:
    if isinstance(wanted, Mapping):
        operators = [k for k in wanted if isinstance(k, str) and k.startswith("$")]
        if operators and len(operators) != len(wanted):
            raise InvalidFilterError(
                f"The filter on {key!r} mixes operators and value keys: {sorted(map(str, wanted))}.",
                hint='Use either {"$gt": 1, "$lt": 5} or a sub-dict to match, not both.',
                field=key,
            )
        for op, operand in wanted.items():
            if not operators:
                _check_operand(f"{key}.{op}", operand)
            elif op not in OPERATORS:
                raise InvalidFilterError(
                    f"Unsupported operator {op!r} in the filter on {key!r}.",
                    code="E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
                    hint=f"LangGraph's store filters know {', '.join(OPERATORS)}.",
                    field=key,
                    operator=op,
                )
            elif op in _RANGE and _number(operand) is None:
                raise InvalidFilterError(
                    f"{op} on {key!r} needs a number, got {operand!r}.",
                    hint="Range operators compare numbers.",
                    field=key,
                    operator=op,
                )
    elif isinstance(wanted, list | tuple):
        for element in wanted:
            _check_operand(key, element)


def matches_filter(value: Mapping[str, Any], spec: Mapping[str, Any] | None) -> bool:
    """Whether an item's value passes a (checked) filter; every entry must hold."""
    return spec is None or all(_compare(value.get(key), wanted) for key, wanted in spec.items())


def _compare(have: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in wanted):
            return all(_apply(have, op, operand) for op, operand in wanted.items())
        return isinstance(have, Mapping) and all(_compare(have.get(k), v) for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return (
            isinstance(have, list | tuple)
            and len(have) == len(wanted)
            and all(_compare(h, w) for h, w in zip(have, wanted, strict=True))
        )
    return bool(have == wanted)


def _apply(have: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(have == operand)
    if op == "$ne":
        return bool(have != operand)
    # A missing, null or non-numeric value never satisfies a range (LangGraph's InMemoryStore raises).
    left, right = _number(have), _number(operand)
    return left is not None and right is not None and _RANGE[op](left, right)


def _number(value: Any) -> float | None:
    if isinstance(value, bool | int | float):
        try:
            return float(value)
        except OverflowError:
            return math.copysign(math.inf, value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def check_page(limit: int, offset: int, what: str) -> None:
    """Refuse a negative or non-integer page (LangGraph slices with them, meaning something else)."""
    for name, n in (("limit", limit), ("offset", offset)):
        if not is_int(n, 0):
            raise invalid_query(f"{what}: {name} must be a non-negative integer, got {n!r}.")
