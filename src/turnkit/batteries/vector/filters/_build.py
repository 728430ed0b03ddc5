"""Building filter nodes: `condition` and its value checks, `and_`/`or_`/`not_`, `filter_to_dict`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final, assert_never, get_args

from turnkit.batteries.vector._errors import InvalidFilterError, UnknownFieldError
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Op, Or, Raw
from turnkit.batteries.vector.filters._declared import MAX_EXACT_INT
from turnkit.batteries.vector.filters._fields import (
    MAX_IN_VALUES,
    MAX_LITERAL_LENGTH,
    MISSING,
    _normalize_op,
    _Number,
    _too_deep,
    validate_field,
)


def condition(field: str, op: str, value: Any = MISSING) -> Condition:
    r"""Build one validated comparison ``field op value``.

    Everything is checked now, not when the query runs: the field name, the
    operator (aliases such as ``=``, ``<>`` or ``not in`` are normalized to
    ``eq``, ``ne``, ``nin``…) and the type of the value for that operator and
    field.

    Values:
        - ``eq``/``ne``: a string, a finite number, a bool, or ``None``
          (``eq None`` becomes ``null``: missing or JSON null; ``ne None``
          means "present and not null").
        - ``gt``/``gte``/``lt``/``lte``: a string or a finite number (bool is
          not a number here).
        - ``in``/``nin``: a list or tuple of strings, numbers, bools and
          ``None`` (at most `MAX_IN_VALUES`).
        - ``like``: a string pattern (``%`` any run, ``_`` one character,
          ``\\`` escapes the next character).
        - ``contains``: a string (substring of a string value, or an element
          of an array value), or a bool or an integer below 2**53 in
          magnitude (an element of an array value).
        - ``exists``/``null``: omitted, or a bool (``False`` negates).
        - ``created_at``/``updated_at``: timezone-aware datetimes or ISO-8601
          strings with an offset (naive values are rejected, as on upsert).
        - ``id``/``document``: strings.

    Args:
        field: ``id``, ``document``, ``created_at``, ``updated_at`` or
            ``metadata.<key>[.<key>…]`` (``<key>[.<key>…]`` alone means the same).
        op: The operator or one of its aliases (see `OPERATOR_ALIASES`).
        value: The literal to compare with; omit it for ``exists``/``null``.

    Returns:
        The normalized `Condition` (its field spelled in full: ``metadata.kind``).

    Raises:
        UnknownFieldError: The field is not a column or a metadata path.
        InvalidFilterError: ``E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR``: The operator is unknown.
        InvalidFilterError: The value does not fit the operator or the field.
    """
    field = validate_field(field)
    canonical, is_not_null = _normalize_op(op, field)
    if is_not_null:
        if value is not MISSING and value is not True:
            raise _invalid(field, "is not null", "takes no value")
        return Condition(field, "ne", None)
    if value is MISSING:
        if canonical not in ("exists", "null"):
            raise _invalid(field, canonical, "needs a value")
        value = True
    match canonical:
        case "exists" | "null":
            if not isinstance(value, bool):
                raise _invalid(field, canonical, f"takes True, False or no value, not {_describe(value)}")
            return Condition(field, canonical, value)
        case "eq" | "ne":
            if value is None:
                return Condition(field, "null", True) if canonical == "eq" else Condition(field, "ne", None)
            return Condition(field, canonical, _check_scalar(field, canonical, value))
        case "gt" | "gte" | "lt" | "lte":
            if value is None or isinstance(value, bool):
                raise _invalid(
                    field, canonical, f"compares strings or numbers, not {_describe(value)}", hint=_ORDER_HINT
                )
            return Condition(field, canonical, _check_scalar(field, canonical, value))
        case "in" | "nin":
            return Condition(field, canonical, _check_list(field, canonical, value))
        case "like":
            return Condition(field, "like", _check_like(field, value))
        case "contains":
            return Condition(field, "contains", _check_contains(field, value))
        case _:
            assert_never(canonical)


_ORDER_HINT = "Order comparisons need a string or a finite number; use eq/ne for booleans and null."


def _invalid(field: str, op: str, detail: str, *, hint: str | None = None) -> InvalidFilterError:
    return InvalidFilterError(
        f"Filter on {field!r} with {op!r} {detail}.",
        hint=hint
        or "Check the value's type: strings, finite numbers, booleans, None, or lists of them for in/nin.",
        field=field,
        op=op,
    )


def _describe(value: Any) -> str:
    if value is None:
        return "None"
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'…' if len(text) > 40 else ''}"


def _check_string(field: str, op: str, value: str) -> str:
    if len(value) > MAX_LITERAL_LENGTH:
        raise _invalid(field, op, f"has a string longer than {MAX_LITERAL_LENGTH} characters")
    if "\x00" in value:
        raise _invalid(field, op, "has a string with a NUL character", hint="Remove '\\x00' from the value.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid(
            field,
            op,
            "has a string that is not valid Unicode (a lone surrogate)",
            hint="Fix the text's encoding.",
        ) from None
    return value


def _check_number(field: str, op: str, value: _Number) -> _Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise _invalid(
            field, op, f"has {value!r}", hint="Only finite numbers can be compared; NaN and inf cannot."
        )
    if isinstance(value, int):
        try:
            float(value)
        except OverflowError:
            raise _invalid(field, op, "has an integer beyond the float64 range") from None
    return value


def _check_scalar(field: str, op: str, value: Any) -> Any:
    """Validate one literal for eq/ne/gt/gte/lt/lte (or an in-list element)."""
    if field in ("created_at", "updated_at"):
        return _check_timestamp(field, op, value)
    if isinstance(value, str):
        return _check_string(field, op, value)
    if field in ("id", "document"):
        raise _invalid(
            field, op, f"compares text; got {_describe(value)}", hint=f"{field!r} is a string column."
        )
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return _check_number(field, op, value)
    if isinstance(value, datetime):
        raise _invalid(
            field,
            op,
            "got a datetime; metadata holds JSON",
            hint="Store timestamps in metadata as ISO-8601 UTC strings; they compare correctly as text.",
        )
    if isinstance(value, Mapping):
        raise _invalid(
            field, op, "got an object", hint="Compare a nested key with a dotted path: metadata.a.b."
        )
    if isinstance(value, list | tuple):
        raise _invalid(field, op, "got a list", hint="Use 'in' to match any of several values.")
    raise _invalid(field, op, f"got {_describe(value)}")


def _check_timestamp(field: str, op: str, value: Any) -> datetime:
    # The same rule as on upsert: aware datetimes only.
    from turnkit.batteries.vector._matches import parse_timestamp

    if isinstance(value, str | datetime):
        try:
            return parse_timestamp(value, what=field)
        except ValueError as exc:
            raise _invalid(
                field,
                op,
                f"got a bad timestamp ({exc})",
                hint="Use an aware datetime or '2024-01-31T12:00:00Z'.",
            ) from None
    raise _invalid(
        field,
        op,
        f"needs a timestamp, not {_describe(value)}",
        hint="Use an aware datetime or an ISO-8601 string.",
    )


def _check_list(field: str, op: str, value: Any) -> tuple[Any, ...]:
    if not isinstance(value, list | tuple):
        raise _invalid(field, op, f"needs a list or tuple, not {_describe(value)}")
    if len(value) > MAX_IN_VALUES:
        raise _invalid(
            field,
            op,
            f"has more than {MAX_IN_VALUES} values",
            hint="Split the values across several queries and merge the results.",
        )
    out: list[Any] = []
    for item in value:
        if item is None:
            if field == "id":
                continue  # ids are never null; dropping keeps the SQL index-friendly
            out.append(None)
        else:
            out.append(_check_scalar(field, op, item))
    return tuple(out)


def _check_like(field: str, value: Any) -> str:
    if field in ("created_at", "updated_at"):
        raise _invalid(field, "like", "applies to text only", hint="Compare timestamps with > >= < <=.")
    if not isinstance(value, str):
        raise _invalid(field, "like", f"needs a string pattern, not {_describe(value)}")
    _check_string(field, "like", value)
    if (len(value) - len(value.rstrip("\\"))) % 2:  # an odd run of backslashes escapes nothing
        raise _invalid(
            field, "like", "pattern ends with a lone backslash", hint="Escape a literal backslash as '\\\\'."
        )
    return value


def _check_contains(field: str, value: Any) -> str | int | float | bool:
    if field in ("created_at", "updated_at"):
        raise _invalid(field, "contains", "applies to text and arrays only")
    if isinstance(value, str):
        return _check_string(field, "contains", value)
    if field in ("id", "document"):
        raise _invalid(field, "contains", f"needs a string, not {_describe(value)}")
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        _check_number(field, "contains", value)
        # LanceDB's JSONPath (used to search arrays) parses integer literals only, and compares
        # them exactly while `evaluate` compares float64: below 2**53 the two agree.
        if float(value).is_integer() and abs(value) < MAX_EXACT_INT:
            return value
        raise _invalid(
            field,
            "contains",
            f"supports integers below 2**53 in magnitude, not {value!r}",
            hint="LanceDB cannot match fractional numbers inside arrays; store such values as strings.",
        )
    raise _invalid(field, "contains", f"needs a string, an integer or a bool, not {_describe(value)}")


# ---------------------------------------------------------------------------
# Logical constructors


def _check_node(node: Any) -> FilterNode:
    if not isinstance(node, Condition | And | Or | Not | Raw):
        raise InvalidFilterError(
            f"Expected a filter node (Condition, And, Or, Not, Raw), not {type(node).__name__}.",
            hint="Build nodes with condition(), and_(), or_(), not_() or parse_mongo().",
        )
    return node


def located(build: Callable[[], FilterNode], where: str, **context: Any) -> FilterNode:
    """Run ``build``; a filter error it raises is prefixed with ``where`` and carries ``context``."""
    try:
        return build()
    except (InvalidFilterError, UnknownFieldError) as exc:
        exc.message = f"{where}: {exc.message}"
        exc.args = (exc.message,)
        for key, value in context.items():
            exc.context.setdefault(key, value)
        raise


def and_(*nodes: FilterNode) -> FilterNode:
    """All of ``nodes`` hold. Nested `And` nodes are flattened; one node is returned as is.

    ``and_()`` with no nodes is the always-true filter.
    """
    return _flat(And, nodes)


def or_(*nodes: FilterNode) -> FilterNode:
    """Any of ``nodes`` holds. Nested `Or` nodes are flattened; one node is returned as is.

    ``or_()`` with no nodes is the always-false filter.
    """
    return _flat(Or, nodes)


def _flat(group: type[And] | type[Or], nodes: tuple[FilterNode, ...]) -> FilterNode:
    children: list[FilterNode] = []
    for node in map(_check_node, nodes):
        children.extend(node.children if isinstance(node, group) else (node,))
    return children[0] if len(children) == 1 else group(tuple(children))


def not_(node: FilterNode) -> FilterNode:
    """``node`` does not hold (a double negation cancels out)."""
    _check_node(node)
    return node.child if isinstance(node, Not) else Not(node)


# ---------------------------------------------------------------------------
# Mongo-style dicts

# Every operator is `$<op>`, but for `null`: Mongo spells it `{"$eq": None}` (or `$exists`).
_FIELD_OPS: Final[Mapping[str, Op]] = {f"${op}": op for op in get_args(Op) if op != "null"}
_LOGICAL_OPS: Final = ("$and", "$or", "$nor", "$not")
_MONGO_OPS_TEXT: Final = " ".join([*_FIELD_OPS, *_LOGICAL_OPS])
MONGO_OPERATORS: Final[tuple[str, ...]] = (*_FIELD_OPS, "$not", "$and", "$or", "$nor")
"""Every operator a Mongo-style filter dict may use (``$eq`` … ``$exists``, then the logical ones)."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, tuple | list):
        return [_jsonable(v) for v in value]
    return value


def filter_to_dict(node: FilterNode) -> dict[str, Any]:
    """A JSON-friendly description of a filter tree, for inspectable specs and logs.

    Conditions become ``{"field", "op", "value"}`` (datetimes as ISO strings,
    tuples as lists); groups become ``{"and": [...]}``, ``{"or": [...]}``,
    ``{"not": {...}}``; raw fragments ``{"raw": sql, "bindings": [...]}``.
    """
    try:
        return _describe_node(node)
    except RecursionError:
        raise _too_deep() from None


def _describe_node(node: FilterNode) -> dict[str, Any]:
    if isinstance(node, And | Or):
        return {"and" if isinstance(node, And) else "or": [_describe_node(child) for child in node.children]}
    if isinstance(node, Not):
        return {"not": _describe_node(node.child)}
    if isinstance(node, Raw):
        return {"raw": node.sql, "bindings": _jsonable(node.bindings)}
    if isinstance(node, Condition):
        return {"field": node.field, "op": node.op, "value": _jsonable(node.value)}
    raise InvalidFilterError(f"Not a filter node: {type(node).__name__}.")
