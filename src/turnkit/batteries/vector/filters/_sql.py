"""Compiling filter nodes to LanceDB (DataFusion) SQL: literals, raw bindings, the metadata JSON reads."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, assert_never

from turnkit.batteries.vector._errors import InvalidFilterError
from turnkit.batteries.vector.filters._ast import (
    COLUMN_FIELDS,
    And,
    Condition,
    FilterNode,
    Not,
    Op,
    Or,
    Raw,
    join_group,
)
from turnkit.batteries.vector.filters._build import _describe, condition
from turnkit.batteries.vector.filters._declared import MAX_EXACT_INT, FieldType, fits
from turnkit.batteries.vector.filters._fields import _Number, _path, _too_deep, validate_field


def _sql_string(value: str) -> str:
    # DataFusion string literals: `'` doubled; a backslash is an ordinary
    # character (`'it\'s'` is a syntax error), so nothing else is escaped.
    if "\x00" in value:
        raise InvalidFilterError("String literals cannot contain NUL characters.", hint="Remove '\\x00'.")
    return "'" + value.replace("'", "''") + "'"


def _sql_float(value: _Number) -> str:
    # repr() round-trips float64 exactly; -0.0 is written as 0.0 because the
    # two are equal in every comparison and a leading '-' is a unary minus.
    number = float(value)
    return "0.0" if number == 0 else repr(number)


def sql_literal(value: Any) -> str:
    """Render one Python value as a LanceDB SQL literal.

    Strings are single-quoted with ``'`` doubled (NUL is rejected), bools
    become ``true``/``false``, ``None`` becomes ``NULL``, integers within
    int64 are written as integers, finite floats with ``repr`` (round-trips
    float64), aware datetimes as ``timestamp '…+00:00'`` literals.

    Raises:
        InvalidFilterError: A value that has no safe literal form.
    """
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            raise InvalidFilterError(
                f"Integer {value} is outside the int64 range.", hint="Pass it as a float or a string."
            )
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidFilterError(f"Cannot bind {value!r}: only finite numbers are allowed.")
        return _sql_float(value)
    if isinstance(value, str):
        return _sql_string(value)
    if isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise InvalidFilterError(
                f"Naive datetime {value.isoformat()!r} cannot be bound.", hint="Pass an aware datetime (UTC)."
            )
        # Measured: `timestamp '...+00:00'` compares correctly with the
        # timestamp[us, tz=UTC] columns; a bare string does not.
        return f"timestamp '{value.astimezone(UTC).isoformat(timespec='microseconds')}'"
    raise InvalidFilterError(
        f"Cannot use {_describe(value)} as an SQL literal.",
        hint="Bind strings, numbers, booleans, None, aware datetimes, or a list of them for IN (?).",
    )


def bind_raw(sql: str, bindings: Sequence[Any] = ()) -> str:
    """Replace each ``?`` placeholder in a trusted SQL fragment with an escaped literal.

    A ``?`` inside a single-quoted literal, a double-quoted or a backtick
    identifier is left alone. A list or tuple binding expands to a
    comma-separated list of literals (for ``IN (?)``). So that the fragment can
    be combined safely with other filters, it must not contain ``;``, an SQL
    comment (``--``, ``/*``), unbalanced parentheses or an unterminated quote.

    Args:
        sql: The SQL predicate, written by the developer (never by a user or
            a model).
        bindings: One value per ``?``, in order (see `sql_literal`).

    Returns:
        The fragment with literals in place of the placeholders.

    Raises:
        InvalidFilterError: ``E_VECTOR_STORE_RAW_BINDING_MISMATCH``: The number of ``?`` differs from
            ``len(bindings)``.
        InvalidFilterError: The fragment or a binding cannot be used safely.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidFilterError(
            "A raw filter must be a non-empty SQL string.", hint="where_raw('priority > ?', [3])"
        )
    if isinstance(bindings, str | bytes) or not isinstance(bindings, Sequence):
        raise InvalidFilterError(
            "Raw filter bindings must be a list or tuple of values.", hint="where_raw('a = ?', ['x'])"
        )
    out: list[str] = []
    used = depth = 0
    for token in _RAW_TOKEN_RE.findall(sql):
        if token == "?":
            if used < len(bindings):  # past the bindings, keep counting for the error message
                out.append(_bind_one(bindings[used], used))
            used += 1
            continue
        if token in ("'", '"', "`"):
            raise _raw_error(sql, f"has an unterminated {token} quote")
        if token == ";":
            raise _raw_error(sql, "contains ';' (only one predicate is allowed)")
        if token == "\x00":
            raise _raw_error(sql, "contains a NUL character")
        if token in ("--", "/*"):
            raise _raw_error(sql, "contains an SQL comment, which would swallow the filters combined with it")
        depth += {"(": 1, ")": -1}.get(token, 0)
        if depth < 0:
            raise _raw_error(sql, "has a ')' without a matching '('")
        out.append(token)
    if depth != 0:
        raise _raw_error(sql, "has unbalanced parentheses")
    if used != len(bindings):
        raise InvalidFilterError(
            f"The raw filter has {used} '?' placeholder(s) but {len(bindings)} binding(s) were given.",
            code="E_VECTOR_STORE_RAW_BINDING_MISMATCH",
            hint="Pass exactly one binding per '?' (a '?' inside quotes is not a placeholder).",
            placeholders=used,
            bindings=len(bindings),
        )
    return "".join(out)


# A quoted literal or identifier (its quote doubled inside) is one token, so a `?` in it is no
# placeholder; a quote left alone is unterminated.
_RAW_TOKEN_RE: Final = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`(?:[^`]|``)*`|--|/\*|.", re.DOTALL)


def _raw_error(sql: str, detail: str) -> InvalidFilterError:
    return InvalidFilterError(
        f"The raw filter {sql[:80]!r} {detail}.",
        hint="Write a single SQL predicate; pass values as bindings with '?' placeholders.",
    )


def _bind_one(value: Any, index: int) -> str:
    if isinstance(value, list | tuple):
        if not value:
            raise InvalidFilterError(
                f"Binding {index} is an empty list; IN () is not valid SQL.",
                hint="Skip the filter (or use where_raw('false')) when the list is empty.",
            )
        return ", ".join(sql_literal(v) for v in value)
    return sql_literal(value)


# ---------------------------------------------------------------------------
# SQL compilation


def to_sql(node: FilterNode, fields: Mapping[str, FieldType] | None = None) -> str:
    """Compile a filter tree to a LanceDB SQL predicate.

    Literals are escaped by `sql_literal`; identifiers come only from
    validated field names. Each condition compiles to an expression that is
    never NULL, so the result selects exactly the records `evaluate` accepts.
    An empty `And` is ``true``, an empty `Or` is ``false``; `Raw` fragments
    are bound with `bind_raw` and wrapped in parentheses (they keep SQL's
    three-valued logic).

    A ``metadata.<key>`` condition on a *declared field* (``fields``: key →
    type, the collection's typed columns) compiles to that column, which a
    scalar index can serve; it selects the same rows as the JSON read would.

    Args:
        node: The filter tree.
        fields: The collection's declared fields; ``None`` reads every key from the JSON.

    Returns:
        The SQL text for ``table.search().where(...)``, ``delete`` or ``count_rows``.

    Raises:
        InvalidFilterError: A node is malformed (e.g. built by hand with a bad value).
    """
    try:
        return _compile(node, fields or {})
    except RecursionError:
        raise _too_deep() from None


def _compile(node: FilterNode, fields: Mapping[str, FieldType]) -> str:
    if isinstance(node, And | Or):
        return join_group(node, lambda child: _compile(child, fields))
    if isinstance(node, Not):
        return f"NOT ({_compile(node.child, fields)})"
    if isinstance(node, Raw):
        return f"({bind_raw(node.sql, node.bindings)})"
    if isinstance(node, Condition):
        return _condition_sql(_recheck(node), fields)
    raise InvalidFilterError(f"Not a filter node: {type(node).__name__}.")


def _recheck(node: Condition) -> Condition:
    """Re-validate a Condition that may have been built by hand (not via `condition`)."""
    if (node.op in ("exists", "null") and isinstance(node.value, bool)) or (
        node.op == "ne" and node.value is None
    ):
        field = validate_field(node.field)
        return node if field == node.field else Condition(field, node.op, node.value)
    return condition(node.field, node.op, node.value)


def _condition_sql(node: Condition, fields: Mapping[str, FieldType]) -> str:
    field, op, value = node.field, node.op, node.value
    if op in ("ne", "nin"):
        positive = Condition(field, "eq" if op == "ne" else "in", value)
        if op == "ne" and value is None:
            positive = Condition(field, "null", True)
        return f"NOT ({_condition_sql(positive, fields)})"
    if op in ("exists", "null") and value is False:
        return f"NOT ({_condition_sql(Condition(field, op, True), fields)})"
    if field in COLUMN_FIELDS:
        return _column_sql(field, op, value)
    path = _path(field)
    declared = fields.get(path[0]) if len(path) == 1 else None
    if declared is not None:
        return _declared_sql(path[0], declared, op, value, _metadata_sql(path, "exists", True))
    return _metadata_sql(path, op, value)


def _any(parts: Sequence[str]) -> str:
    """OR of self-contained SQL parts, itself self-contained (safe next to AND)."""
    if not parts:
        return "false"
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


_SQL_OPS: Final[Mapping[str, str]] = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _column_sql(
    column: str, op: Op, value: Any, literal: Callable[[Any, Op], str | None] = lambda v, _: sql_literal(v)
) -> str:
    # `id` is NOT NULL: a bare comparison is already two-valued and stays
    # usable by a scalar index. Nullable columns get `col IS NOT NULL AND …`.
    # `literal` returns None for a value the column can never compare true with.
    nullable = column != "id"

    def guard(expr: str) -> str:
        return f"({column} IS NOT NULL AND {expr})" if nullable else expr

    match op:
        case "exists":
            return f"{column} IS NOT NULL"
        case "null":
            return f"{column} IS NULL"
        case "eq" | "gt" | "gte" | "lt" | "lte":
            bound = literal(value, op)
            return "false" if bound is None else guard(f"{column} {_SQL_OPS[op]} {bound}")
        case "in":
            values = [v for v in value if v is not None]
            literals = [lit for v in values if (lit := literal(v, "in")) is not None]
            parts: list[str] = []
            if literals:
                parts.append(guard(f"{column} IN ({', '.join(literals)})"))
            if len(values) != len(value):
                parts.append(f"{column} IS NULL")
            return _any(parts)
        case "like":
            return guard(f"{column} LIKE {_sql_string(value)}")
        case "contains":
            return guard(f"contains({column}, {_sql_string(value)})")
        case "ne" | "nin":  # compiled as NOT of eq / in by _condition_sql
            raise InvalidFilterError(f"Operator {op!r} reaches the column compiler only negated.")
        case _:
            assert_never(op)


def _declared_sql(column: str, kind: FieldType, op: Op, value: Any, json_exists: str) -> str:
    """A condition on a declared field, read from its typed column.

    The column is NULL where the key is missing or JSON ``null`` and holds a
    value of type ``kind`` everywhere else (writes refuse other types), so a
    literal of another type matches nothing, exactly as the JSON read; only
    ``exists`` (true for a key holding ``null``) still asks the JSON.
    """
    quoted = f"`{column}`"  # declared names are checked identifiers; backticks keep their case
    match op:
        case "exists":
            return f"({quoted} IS NOT NULL OR {json_exists})"
        case "like" if kind != "str":
            return "false"
        case "contains":
            if not isinstance(value, str) or kind not in ("str", "list[str]"):
                return "false"  # a number or bool is never inside a string or a list of strings
            test = "contains" if kind == "str" else "array_has"
            return f"({quoted} IS NOT NULL AND {test}({quoted}, {_sql_string(value)}))"
        case _:
            return _column_sql(quoted, op, value, lambda v, o: _declared_literal(kind, v, o))


def _declared_literal(kind: FieldType, value: Any, op: Op = "eq") -> str | None:
    """The literal comparing a ``kind`` column with ``value`` as `evaluate` would, or None (never true).

    Numbers compare as float64. An ``int`` column holds exact integers within
    ±2**53 and LanceDB refuses a float literal against it, so the float is
    turned into the integer bound that selects the same rows.
    """
    if kind == "list[str]":
        return None  # a list equals no scalar and orders against none
    if kind == "float":
        return _sql_float(value) if fits("float", value) else None
    if kind == "int":
        if not fits("float", value):
            return None
        # Clamped just outside the stored range: 2**53 + 2 is exact in float64 (2**53 + 1 rounds to 2**53).
        beyond = float(MAX_EXACT_INT + 2)
        bound = min(max(float(value), -beyond), beyond)
        if op in ("eq", "in"):
            return str(int(bound)) if bound.is_integer() and bound == float(value) else None
        return str(math.floor(bound) if op in ("gt", "lte") else math.ceil(bound))
    return sql_literal(value) if fits(kind, value) else None


class _MetaRef:
    """SQL expressions that read one metadata path (segments already validated)."""

    def __init__(self, path: Sequence[str]) -> None:
        # Bracket form: accepts '-' and leading digits; keys never index arrays.
        self.jsonpath = "$" + "".join(f'["{seg}"]' for seg in path)
        self.text = f"json_extract(metadata, '{self.jsonpath}')"
        parent = "metadata"
        for seg in path[:-1]:
            # json_get with a plain key; walking by single keys because
            # json_get_string(metadata, 'a.b') does not traverse (measured).
            parent = f"json_get({parent}, '{seg}')"
        self.string = (
            f"(CASE WHEN starts_with({self.text}, '\"') THEN json_get_string({parent}, '{path[-1]}') END)"
        )
        self.number = f"TRY_CAST({self.text} AS DOUBLE)"


def _metadata_sql(path: Sequence[str], op: Op, value: Any) -> str:
    ref = _MetaRef(path)
    match op:
        case "exists":
            return f"{ref.text} IS NOT NULL"
        case "null":
            return f"coalesce({ref.text} = 'null', true)"
        case "eq" | "gt" | "gte" | "lt" | "lte":
            return _typed_compare(ref, _SQL_OPS[op], value)
        case "in":
            return _metadata_in(ref, value)
        case "like":
            return f"coalesce({ref.string} LIKE {_sql_string(value)}, false)"
        case "contains":
            return _metadata_contains(ref, value)
        case "ne" | "nin":  # compiled as NOT of eq / in by _condition_sql
            raise InvalidFilterError(f"Operator {op!r} reaches the metadata compiler only negated.")
        case _:
            assert_never(op)


def _typed_compare(ref: _MetaRef, sql_op: str, value: Any) -> str:
    if isinstance(value, bool):
        # JSON text of a boolean is exactly `true`/`false`; only eq reaches here.
        return f"coalesce({ref.text} = {_sql_string('true' if value else 'false')}, false)"
    if isinstance(value, str):
        return f"coalesce({ref.string} {sql_op} {_sql_string(value)}, false)"
    return f"coalesce({ref.number} {sql_op} {_sql_float(value)}, false)"


def _metadata_in(ref: _MetaRef, values: Sequence[Any]) -> str:
    strings = [v for v in values if isinstance(v, str)]
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    bools = sorted({v for v in values if isinstance(v, bool)})
    parts: list[str] = []
    if strings:
        parts.append(f"coalesce({ref.string} IN ({', '.join(_sql_string(s) for s in strings)}), false)")
    if numbers:
        parts.append(f"coalesce({ref.number} IN ({', '.join(_sql_float(v) for v in numbers)}), false)")
    if bools:
        texts = ", ".join(_sql_string("true" if b else "false") for b in bools)
        parts.append(f"coalesce({ref.text} IN ({texts}), false)")
    if any(v is None for v in values):
        parts.append(f"coalesce({ref.text} = 'null', true)")
    return _any(parts)


def _metadata_contains(ref: _MetaRef, value: Any) -> str:
    if isinstance(value, str):
        # json_array_contains compares a JSON-encoded string needle with the
        # array's top-level string elements only (a bare needle also matches
        # numbers and booleans by their text, measured), so encode it.
        needle = json.dumps(value, ensure_ascii=False)
        return _any(
            [
                f"coalesce(contains({ref.string}, {_sql_string(value)}), false)",
                f"coalesce(json_array_contains(metadata, '{ref.jsonpath}', {_sql_string(needle)}), false)",
            ]
        )
    # Numbers and booleans: a JSONPath filter compares by type and value
    # (1 matches 1 and 1.0, never "1" or true). Its lax mode also treats a
    # scalar as a one-element array (hence the '[' guard) and looks one level
    # into nested arrays, which `evaluate` mirrors.
    literal = ("true" if value else "false") if isinstance(value, bool) else str(int(value))
    return (
        f"coalesce(starts_with({ref.text}, '[') AND "
        f"json_exists(metadata, '{ref.jsonpath}[*] ? (@ == {literal})'), false)"
    )
