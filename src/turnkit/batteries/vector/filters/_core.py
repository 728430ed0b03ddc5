"""Filters of the vector battery: build, validate, compile to LanceDB SQL, evaluate.

Every filter form (builder calls, Mongo-style dicts, text expressions) ends up
as a tree of `Condition`/`And`/`Or`/`Not`/`Raw` nodes (``_ast.py``).
This module owns the two consumers of that tree and keeps them in lock-step:

- :func:`evaluate` is the pure-Python *reference semantics*;
- :func:`to_sql` compiles the same tree to a LanceDB (DataFusion) predicate
  that selects exactly the rows :func:`evaluate` accepts. The test-suite runs
  hypothesis-generated trees against a real LanceDB table to hold it to that.

Logic is two-valued: each comparison compiles to an expression that is never
SQL ``NULL`` (``coalesce(..., false)`` or ``col IS NOT NULL AND ...``), so
``NOT``/``AND``/``OR`` behave like Python's ``not``/``and``/``or``.

How the metadata JSON column is read (measured on lancedb 0.40, see
``docs/filters.md``):

- ``json_extract(metadata, '$["a"]["b"]')`` returns the value's JSON text,
  type-preserving (``2021``, ``"2021"``, ``true``, ``null``, ``[1]``), or SQL
  NULL when a key is missing; it never steps into arrays for a key.
- Strings are read with ``json_get_string`` only inside
  ``CASE WHEN starts_with(<json text>, '"') ...``: unguarded it coerces
  numbers to strings and raises on arrays. DataFusion evaluates ``THEN`` only
  for the rows where ``WHEN`` holds, and lance accepts a ``CASE`` only inside
  another expression (here ``coalesce``).
- Numbers are read with ``TRY_CAST(<json text> AS DOUBLE)``: NULL for strings
  (they keep their quotes), booleans, null, arrays and objects.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import lru_cache, partial
from typing import Any, Final, TypeAlias

from turnkit.batteries.vector._errors import (
    InvalidFilterError,
    RawBindingMismatchError,
    UnknownFieldError,
    UnsupportedFilterOperatorError,
)
from turnkit.batteries.vector.filters._ast import COLUMN_FIELDS, And, Condition, FilterNode, Not, Op, Or, Raw

__all__ = [
    "MAX_IN_VALUES",
    "MAX_LITERAL_LENGTH",
    "MISSING",
    "OPERATOR_ALIASES",
    "and_",
    "bind_raw",
    "condition",
    "evaluate",
    "filter_to_dict",
    "not_",
    "or_",
    "parse_mongo",
    "sql_literal",
    "to_sql",
    "validate_field",
]


class _Missing(enum.Enum):
    """Sentinel type: "no value given" for `condition`, "key absent" for `evaluate`."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
"""Marks an absent value: a metadata key that is not there, or an omitted argument."""

MAX_IN_VALUES: Final = 10_000
"""Most values one ``in``/``nin`` list may hold (the SQL grows with it)."""

MAX_LITERAL_LENGTH: Final = 65_536
"""Longest string literal a filter accepts, in characters."""

MAX_PATH_SEGMENTS: Final = 16
MAX_SEGMENT_LENGTH: Final = 128

# Largest integral literal `contains` accepts: LanceDB's JSONPath compares
# integers exactly while `evaluate` compares numbers as float64; below 2**53
# the two agree.
_MAX_EXACT_INT: Final = 2**53

OPERATOR_ALIASES: Final[Mapping[str, Op]] = {
    "=": "eq",
    "==": "eq",
    "eq": "eq",
    "!=": "ne",
    "<>": "ne",
    "ne": "ne",
    ">": "gt",
    "gt": "gt",
    ">=": "gte",
    "gte": "gte",
    "<": "lt",
    "lt": "lt",
    "<=": "lte",
    "lte": "lte",
    "in": "in",
    "not in": "nin",
    "nin": "nin",
    "like": "like",
    "contains": "contains",
    "exists": "exists",
    "null": "null",
    "is null": "null",
}
"""Accepted spellings (case-insensitive, spaces collapsed) of each canonical operator.

``"is not null"`` is accepted too and means ``ne None``.
"""

_SUPPORTED_OPS_TEXT = (
    "= == != <> > >= < <= in, not in, like, contains, exists, null (eq ne gt gte lt lte nin)"
)

# Conservative on purpose: these characters never need quoting in a JSONPath
# (`$["seg"]`) or an SQL literal. `-` is safe only in the bracket form; LanceDB
# rejects `$.a-b` (measured), which is why paths are always bracketed.
_SEGMENT_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
_METADATA_PREFIX: Final = "metadata."

_Number: TypeAlias = int | float


# ---------------------------------------------------------------------------
# Fields


def validate_field(field: str) -> str:
    """Check a filter field name and return it.

    Fields are the columns ``id``, ``document``, ``created_at`` and
    ``updated_at``, or a path into the metadata JSON: ``metadata.<key>`` or
    ``metadata.<key>.<key>…`` (up to 16 keys). A key is ASCII letters, digits,
    ``_`` and ``-``, not starting with ``-``.

    Args:
        field: The name to check.

    Returns:
        The same name.

    Raises:
        UnknownFieldError: The name is not a column or a valid metadata path;
            the hint suggests the likely intended name.
    """
    if not isinstance(field, str):
        raise UnknownFieldError(
            f"A filter field must be a string, not {type(field).__name__}.", field=repr(field)[:80]
        )
    if field in COLUMN_FIELDS:
        return field
    if field.startswith(_METADATA_PREFIX):
        segments = field[len(_METADATA_PREFIX) :].split(".")
        bad = _bad_segment(segments)
        if bad is None:
            return field
        raise UnknownFieldError(
            f"Filter field {field!r} is not a valid metadata path: {bad}.",
            hint="Metadata keys are ASCII letters, digits, '_' and '-' (not first), joined with '.', "
            f"at most {MAX_PATH_SEGMENTS} deep: metadata.year, metadata.source.kind.",
            field=field,
        )
    raise UnknownFieldError(f"Unknown filter field {field!r}.", hint=_field_hint(field), field=field)


def _bad_segment(segments: Sequence[str]) -> str | None:
    """Why a metadata key path is invalid, or None when it is valid."""
    if len(segments) > MAX_PATH_SEGMENTS:
        return f"more than {MAX_PATH_SEGMENTS} keys"
    for seg in segments:
        if not seg:
            return "empty key (check for a doubled, leading or trailing '.')"
        if len(seg) > MAX_SEGMENT_LENGTH:
            return f"key longer than {MAX_SEGMENT_LENGTH} characters"
        if _SEGMENT_RE.fullmatch(seg) is None:
            return f"key {seg[:40]!r} has characters other than ASCII letters, digits, '_' and '-'"
    return None


def _field_hint(field: str) -> str:
    lowered = field.lower()
    if lowered in COLUMN_FIELDS:
        return f"Field names are case-sensitive: did you mean {lowered!r}?"
    if field in ("metadata", "metadata."):
        return "Name a key inside the metadata: metadata.<key>, e.g. metadata.year."
    if field in ("vector", "_distance", "_rowid", "score", "distance"):
        return f"{field!r} cannot be filtered on; use near_vector()/min_score() for similarity."
    if field.startswith("$"):
        return "Operators ($eq, $gt, ...) go inside a field's value: {'year': {'$gt': 2020}}."
    if _bad_segment(field.split(".")) is None:
        return f"Metadata keys need the prefix: did you mean 'metadata.{field}'?"
    return "Fields are id, document, created_at, updated_at, or metadata.<key>[.<key>...]."


def _path(field: str) -> tuple[str, ...]:
    """The metadata key path of a validated ``metadata.…`` field."""
    return tuple(field[len(_METADATA_PREFIX) :].split("."))


# ---------------------------------------------------------------------------
# Conditions and value checks


def _normalize_op(op: str, field: str) -> tuple[Op, bool]:
    """Canonical operator, plus True for the spelling ``is not null``."""
    if not isinstance(op, str):
        raise UnsupportedFilterOperatorError(
            f"A filter operator must be a string, not {type(op).__name__}.", field=field
        )
    key = " ".join(op.strip().lower().split())
    if key == "is not null":
        return "ne", True
    canonical = OPERATOR_ALIASES.get(key)
    if canonical is None:
        raise UnsupportedFilterOperatorError(
            f"Unsupported filter operator {op[:40]!r} on {field!r}; supported: {_SUPPORTED_OPS_TEXT}.",
            field=field,
            op=op[:40],
        )
    return canonical, False


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
            ``metadata.<key>[.<key>…]``.
        op: The operator or one of its aliases (see `OPERATOR_ALIASES`).
        value: The literal to compare with; omit it for ``exists``/``null``.

    Returns:
        The normalized `Condition`.

    Raises:
        UnknownFieldError: The field is not a column or a metadata path.
        UnsupportedFilterOperatorError: The operator is unknown.
        InvalidFilterError: The value does not fit the operator or the field.
    """
    validate_field(field)
    canonical, is_not_null = _normalize_op(op, field)
    if is_not_null:
        if value is not MISSING and value is not True:
            raise _invalid(field, "is not null", "takes no value")
        return Condition(field, "ne", None)
    if canonical in ("exists", "null"):
        if value is MISSING:
            value = True
        if not isinstance(value, bool):
            raise _invalid(field, canonical, f"takes True, False or no value, not {_describe(value)}")
        return Condition(field, canonical, value)
    if value is MISSING:
        raise _invalid(field, canonical, "needs a value")
    if canonical in ("eq", "ne"):
        if value is None:
            return Condition(field, "null", True) if canonical == "eq" else Condition(field, "ne", None)
        return Condition(field, canonical, _check_scalar(field, canonical, value))
    if canonical in ("gt", "gte", "lt", "lte"):
        if value is None or isinstance(value, bool):
            raise _invalid(
                field, canonical, f"compares strings or numbers, not {_describe(value)}", hint=_ORDER_HINT
            )
        return Condition(field, canonical, _check_scalar(field, canonical, value))
    if canonical in ("in", "nin"):
        return Condition(field, canonical, _check_list(field, canonical, value))
    if canonical == "like":
        return Condition(field, "like", _check_like(field, value))
    # contains
    return Condition(field, "contains", _check_contains(field, value))


_ORDER_HINT = "Order comparisons need a string or a finite number; use eq/ne for booleans and null."


def _invalid(field: str, op: str, detail: str, *, hint: str | None = None) -> InvalidFilterError:
    return InvalidFilterError(
        f"Filter on {field!r} with {op!r} {detail}.",
        hint=hint
        if hint is not None
        else "Check the value's type: strings, finite numbers, booleans, None, or lists of them for in/nin.",
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
    from turnkit.batteries.vector._matches import (
        parse_timestamp,  # the same rule as on upsert: aware datetimes only
    )

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
    escaped = False
    for ch in value:
        escaped = not escaped and ch == "\\"
    if escaped:
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
        # LanceDB's JSONPath (used to search arrays) parses integer literals only.
        if float(value).is_integer() and abs(value) < _MAX_EXACT_INT:
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


def and_(*nodes: FilterNode) -> FilterNode:
    """All of ``nodes`` hold. Nested `And` nodes are flattened; one node is returned as is.

    ``and_()`` with no nodes is the always-true filter.
    """
    children: list[FilterNode] = []
    for node in map(_check_node, nodes):
        children.extend(node.children if isinstance(node, And) else (node,))
    return children[0] if len(children) == 1 else And(tuple(children))


def or_(*nodes: FilterNode) -> FilterNode:
    """Any of ``nodes`` holds. Nested `Or` nodes are flattened; one node is returned as is.

    ``or_()`` with no nodes is the always-false filter.
    """
    children: list[FilterNode] = []
    for node in map(_check_node, nodes):
        children.extend(node.children if isinstance(node, Or) else (node,))
    return children[0] if len(children) == 1 else Or(tuple(children))


def not_(node: FilterNode) -> FilterNode:
    """``node`` does not hold (a double negation cancels out)."""
    _check_node(node)
    return node.child if isinstance(node, Not) else Not(node)


# ---------------------------------------------------------------------------
# Mongo-style dicts

_FIELD_OPS: Final[Mapping[str, Op]] = {
    "$eq": "eq",
    "$ne": "ne",
    "$gt": "gt",
    "$gte": "gte",
    "$lt": "lt",
    "$lte": "lte",
    "$in": "in",
    "$nin": "nin",
    "$like": "like",
    "$contains": "contains",
    "$exists": "exists",
}
_LOGICAL_OPS: Final = ("$and", "$or", "$nor", "$not")
_MONGO_OPS_TEXT: Final = " ".join([*_FIELD_OPS, *_LOGICAL_OPS])


class _MongoParser:
    def __init__(self, field_prefix: str, max_depth: int, max_nodes: int) -> None:
        self.field_prefix = field_prefix
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.nodes = 0

    def count(self, where: str) -> None:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise InvalidFilterError(
                f"Filter has more than {self.max_nodes} conditions and groups (at {_short(where)}).",
                hint="Simplify the filter, e.g. use $in instead of many $or branches.",
                location=where,
            )

    def error(self, where: str, detail: str, hint: str | None = None) -> InvalidFilterError:
        return InvalidFilterError(f"Invalid filter at {_short(where)}: {detail}", hint=hint, location=where)

    def document(self, obj: Any, where: str, depth: int) -> FilterNode:
        """A filter object: implicit AND of its keys."""
        if depth > self.max_depth:
            raise self.error(where, f"nested deeper than {self.max_depth} levels.", "Flatten the filter.")
        if not isinstance(obj, Mapping):
            raise self.error(where, f"expected an object of conditions, got {_describe(obj)}.")
        parts: list[FilterNode] = []
        for key, value in obj.items():
            if not isinstance(key, str):
                raise self.error(where, f"keys must be strings, got {_describe(key)}.")
            here = f"{where}.{key}" if where != "$" else f"$.{key}"
            if key.startswith("$"):
                parts.append(self.logical(key, value, here, depth))
            else:
                parts.append(self.field(key, value, here, depth))
        if len(parts) != 1:
            self.count(where)
        return and_(*parts)

    def logical(self, key: str, value: Any, where: str, depth: int) -> FilterNode:
        if key == "$not":
            if not isinstance(value, Mapping) or not value:
                raise self.error(where, "$not needs a non-empty object of conditions.")
            self.count(where)
            return not_(self.document(value, where, depth + 1))
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list | tuple):
                raise self.error(where, f"{key} needs a list of objects, not {_describe(value)}.")
            self.count(where)
            children = [self.document(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
            if key == "$and":
                return and_(*children) if children else And(())
            combined = or_(*children) if children else Or(())
            return not_(combined) if key == "$nor" else combined
        if key in _FIELD_OPS:
            raise self.error(
                where,
                f"{key} must be applied to a field.",
                f"Write {{'<field>': {{'{key}': ...}}}}; only $and $or $nor $not go at the top level.",
            )
        raise UnsupportedFilterOperatorError(
            f"Unsupported filter operator {key[:40]!r} at {where}; supported: {_MONGO_OPS_TEXT}.",
            op=key[:40],
            location=where,
            hint=f"Use one of {_MONGO_OPS_TEXT}.",
        )

    def field_name(self, key: str, where: str) -> str:
        if self.field_prefix:
            if "$" in key:
                raise UnknownFieldError(
                    f"Invalid filter field {key[:60]!r} at {where}.",
                    hint="Field names cannot contain '$'; operators go inside the field's value.",
                    field=key[:60],
                )
            name = self.field_prefix + key
            if name.startswith(_METADATA_PREFIX) and _bad_segment(_path(name)) is not None:
                raise UnknownFieldError(
                    f"Invalid metadata key {key[:60]!r} at {where}: {_bad_segment(_path(name))}.",
                    hint="Keys are ASCII letters, digits, '_' and '-', joined with '.' for nested keys.",
                    field=key[:60],
                )
            return validate_field(name)
        return validate_field(key)

    def field(self, key: str, value: Any, where: str, depth: int) -> FilterNode:
        field = self.field_name(key, where)
        if isinstance(value, Mapping):
            return self.field_ops(field, value, where, depth + 1)
        self.count(where)
        if isinstance(value, list | tuple):
            return _at(where, lambda: condition(field, "in", value))
        return _at(where, lambda: condition(field, "eq", value))

    def field_ops(self, field: str, ops: Mapping[Any, Any], where: str, depth: int) -> FilterNode:
        if depth > self.max_depth:
            raise self.error(where, f"nested deeper than {self.max_depth} levels.", "Flatten the filter.")
        if not ops:
            raise self.error(
                where, "empty operator object.", "Write {'field': {'$eq': value}} or {'field': value}."
            )
        keys = [k for k in ops if isinstance(k, str) and k.startswith("$")]
        if len(keys) != len(ops):
            raise self.error(
                where,
                "a field's object value must contain only $operators.",
                "Address nested metadata with a dotted key ({'a.b': 1}); objects cannot be compared.",
            )
        parts: list[FilterNode] = []
        for key in keys:
            value = ops[key]
            here = f"{where}.{key}"
            if key == "$not":
                if not isinstance(value, Mapping) or not value:
                    raise self.error(
                        here, "$not needs a non-empty object of operators, e.g. {'$not': {'$gt': 5}}."
                    )
                self.count(here)
                parts.append(not_(self.field_ops(field, value, here, depth + 1)))
                continue
            op = _FIELD_OPS.get(key)
            if op is None:
                if key in _LOGICAL_OPS:
                    raise self.error(
                        here,
                        f"{key} cannot be used inside a field.",
                        "Put $and/$or/$nor at the top level: {'$or': [{'a': 1}, {'b': 2}]}.",
                    )
                raise UnsupportedFilterOperatorError(
                    f"Unsupported filter operator {key[:40]!r} at {here}; supported: {_MONGO_OPS_TEXT}.",
                    op=key[:40],
                    location=here,
                    hint=f"Use one of {_MONGO_OPS_TEXT}.",
                )
            self.count(here)
            if op == "exists" and not isinstance(value, bool):
                raise self.error(here, f"$exists needs true or false, not {_describe(value)}.")
            if op in ("in", "nin") and not isinstance(value, list | tuple):
                raise self.error(here, f"{key} needs a list, not {_describe(value)}.")
            parts.append(_at(here, partial(condition, field, op, value)))
        if len(parts) > 1:
            self.count(where)
        return and_(*parts)


def _short(where: str) -> str:
    """A location for messages: deep paths keep their last 120 characters."""
    return where if len(where) <= 120 else "…" + where[-119:]


def _at(where: str, build: Callable[[], FilterNode]) -> FilterNode:
    """Run ``build`` and prefix any filter error with the location in the dict."""
    try:
        return build()
    except (InvalidFilterError, UnknownFieldError, UnsupportedFilterOperatorError) as exc:
        exc.message = f"At {_short(where)}: {exc.message}"
        exc.args = (exc.message,)
        exc.context.setdefault("location", where)
        raise


def parse_mongo(
    obj: Mapping[str, Any], *, field_prefix: str = "", max_depth: int = 8, max_nodes: int = 200
) -> FilterNode:
    """Compile a Mongo/Mastra-style filter dict into a filter tree.

    The keys of one object are ANDed. A field's value is a literal (``$eq``),
    a list (``$in``) or an object of operators: ``$eq $ne $gt $gte $lt $lte
    $in $nin $like $contains $exists`` and ``$not`` (an object of operators).
    At the top level (and inside the lists of ``$and``/``$or``/``$nor``),
    ``$and``, ``$or``, ``$nor`` take lists of filter objects and ``$not``
    takes a filter object.

    Example:
        ``{"kind": "faq", "year": {"$gte": 2020}, "$or": [{"lang": "en"}, {"lang": {"$exists": False}}]}``
        with ``field_prefix="metadata."``.

    Args:
        obj: The filter object.
        field_prefix: Prepended to every field key. Agent tools pass
            ``"metadata."`` so a model can reach metadata keys only (``"id"``
            then means ``metadata.id``).
        max_depth: Deepest nesting of objects and logical operators allowed.
        max_nodes: Most conditions and groups allowed.

    Returns:
        The filter tree; ``{}`` is the always-true filter ``And(())``.

    Raises:
        InvalidFilterError: Malformed filter, bad value type, or a limit exceeded.
        UnsupportedFilterOperatorError: An unknown ``$operator``.
        UnknownFieldError: A field that is not a column or a valid metadata path.
    """
    if field_prefix and not field_prefix.endswith("."):
        raise InvalidFilterError(
            f"field_prefix must end with '.', got {field_prefix!r}.", hint="Use '' or 'metadata.'."
        )
    if not isinstance(obj, Mapping):
        raise InvalidFilterError(
            f"A filter must be an object (dict), not {type(obj).__name__}.",
            hint='Example: {"kind": "faq", "year": {"$gte": 2020}}.',
        )
    parser = _MongoParser(field_prefix, max_depth, max_nodes)
    try:
        return parser.document(obj, "$", 1)
    except RecursionError:
        raise _too_deep() from None


# ---------------------------------------------------------------------------
# SQL literals and raw fragments


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


def _sql_timestamp(value: datetime) -> str:
    # Measured: `timestamp '...+00:00'` compares correctly with the
    # timestamp[us, tz=UTC] columns; a bare string does not.
    stamp = value.astimezone(UTC).isoformat(timespec="microseconds")
    return f"timestamp '{stamp}'"


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
        return _sql_timestamp(value)
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
        RawBindingMismatchError: The number of ``?`` differs from ``len(bindings)``.
        InvalidFilterError: The fragment or a binding cannot be used safely.
    """
    if not isinstance(sql, str) or not sql.strip():
        raise InvalidFilterError("A raw filter must be a non-empty SQL string.")
    if isinstance(bindings, str | bytes) or not isinstance(bindings, Sequence):
        raise InvalidFilterError(
            "Raw filter bindings must be a list or tuple of values.", hint="where_raw('a = ?', ['x'])"
        )
    out: list[str] = []
    used = 0
    depth = 0
    quote: str | None = None
    i = 0
    n = len(sql)
    while i < n:
        ch = sql[i]
        if quote is not None:
            out.append(ch)
            if ch == quote:
                if i + 1 < n and sql[i + 1] == quote:  # doubled quote stays inside
                    out.append(quote)
                    i += 1
                else:
                    quote = None
            i += 1
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == "?":
            if used >= len(bindings):
                used += 1  # keep counting for the error message
                i += 1
                continue
            out.append(_bind_one(bindings[used], used))
            used += 1
            i += 1
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise _raw_error(sql, "has a ')' without a matching '('")
        elif ch == ";":
            raise _raw_error(sql, "contains ';' (only one predicate is allowed)")
        elif ch == "\x00":
            raise _raw_error(sql, "contains a NUL character")
        elif sql.startswith("--", i) or sql.startswith("/*", i):
            raise _raw_error(sql, "contains an SQL comment, which would swallow the filters combined with it")
        out.append(ch)
        i += 1
    if quote is not None:
        raise _raw_error(sql, f"has an unterminated {quote} quote")
    if depth != 0:
        raise _raw_error(sql, "has unbalanced parentheses")
    if used != len(bindings):
        raise RawBindingMismatchError(
            f"The raw filter has {used} '?' placeholder(s) but {len(bindings)} binding(s) were given.",
            hint="Pass exactly one binding per '?' (a '?' inside quotes is not a placeholder).",
            placeholders=used,
            bindings=len(bindings),
        )
    return "".join(out)


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


def to_sql(node: FilterNode) -> str:
    """Compile a filter tree to a LanceDB SQL predicate.

    Literals are escaped by `sql_literal`; identifiers come only from
    validated field names. Each condition compiles to an expression that is
    never NULL, so the result selects exactly the records `evaluate` accepts.
    An empty `And` is ``true``, an empty `Or` is ``false``; `Raw` fragments
    are bound with `bind_raw` and wrapped in parentheses (they keep SQL's
    three-valued logic).

    Args:
        node: The filter tree.

    Returns:
        The SQL text for ``table.search().where(...)``, ``delete`` or ``count_rows``.

    Raises:
        InvalidFilterError: A node is malformed (e.g. built by hand with a bad value).
    """
    try:
        return _compile(node)
    except RecursionError:
        raise _too_deep() from None


def _too_deep() -> InvalidFilterError:
    return InvalidFilterError(
        "The filter is nested too deeply to process.",
        hint="Flatten it: combine many conditions with one and_()/or_() (or $in) instead of nesting.",
    )


def _compile(node: FilterNode) -> str:
    if isinstance(node, And):
        if not node.children:
            return "true"
        return " AND ".join(_wrap(child) for child in node.children)
    if isinstance(node, Or):
        if not node.children:
            return "false"
        return " OR ".join(_wrap(child) for child in node.children)
    if isinstance(node, Not):
        return f"NOT ({_compile(node.child)})"
    if isinstance(node, Raw):
        return f"({bind_raw(node.sql, node.bindings)})"
    if isinstance(node, Condition):
        return _condition_sql(_recheck(node))
    raise InvalidFilterError(f"Not a filter node: {type(node).__name__}.")


def _wrap(node: FilterNode) -> str:
    text = _compile(node)
    return f"({text})" if isinstance(node, And | Or) and len(node.children) > 1 else text


def _recheck(node: Condition) -> Condition:
    """Re-validate a Condition that may have been built by hand (not via `condition`)."""
    if node.op in ("exists", "null") and isinstance(node.value, bool):
        validate_field(node.field)
        return node
    if node.op == "ne" and node.value is None:
        validate_field(node.field)
        return node
    return condition(node.field, node.op, node.value)


def _condition_sql(node: Condition) -> str:
    field, op, value = node.field, node.op, node.value
    if op in ("ne", "nin"):
        positive = Condition(field, "eq" if op == "ne" else "in", value)
        if op == "ne" and value is None:
            positive = Condition(field, "null", True)
        return f"NOT ({_condition_sql(positive)})"
    if op in ("exists", "null") and value is False:
        return f"NOT ({_condition_sql(Condition(field, op, True))})"
    if field in COLUMN_FIELDS:
        return _column_sql(field, op, value)
    return _metadata_sql(_path(field), op, value)


def _any(parts: Sequence[str]) -> str:
    """OR of self-contained SQL parts, itself self-contained (safe next to AND)."""
    if not parts:
        return "false"
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


_SQL_OPS: Final[Mapping[str, str]] = {"eq": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _column_sql(column: str, op: Op, value: Any) -> str:
    # `id` is NOT NULL: a bare comparison is already two-valued and stays
    # usable by a scalar index. Nullable columns get `col IS NOT NULL AND …`.
    nullable = column != "id"

    def guard(expr: str) -> str:
        return f"({column} IS NOT NULL AND {expr})" if nullable else expr

    if op == "exists":
        return f"{column} IS NOT NULL"
    if op == "null":
        return f"{column} IS NULL"
    if op in _SQL_OPS:
        return guard(f"{column} {_SQL_OPS[op]} {sql_literal(value)}")
    if op == "in":
        values = [v for v in value if v is not None]
        parts: list[str] = []
        if values:
            parts.append(guard(f"{column} IN ({', '.join(sql_literal(v) for v in values)})"))
        if len(values) != len(value):
            parts.append(f"{column} IS NULL")
        return _any(parts)
    if op == "like":
        return guard(f"{column} LIKE {_sql_string(value)}")
    if op == "contains":
        return guard(f"contains({column}, {_sql_string(value)})")
    raise InvalidFilterError(f"Operator {op!r} cannot be compiled for column {column!r}.")


def _jsonpath(path: Sequence[str]) -> str:
    # Bracket form: accepts '-' and leading digits; keys never index arrays.
    return "$" + "".join(f'["{seg}"]' for seg in path)


class _MetaRef:
    """SQL expressions that read one metadata path (segments already validated)."""

    def __init__(self, path: Sequence[str]) -> None:
        self.jsonpath = _jsonpath(path)
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
    if op == "exists":
        return f"{ref.text} IS NOT NULL"
    if op == "null":
        return f"coalesce({ref.text} = 'null', true)"
    if op in _SQL_OPS:
        return _typed_compare(ref, _SQL_OPS[op], value)
    if op == "in":
        return _metadata_in(ref, value)
    if op == "like":
        return f"coalesce({ref.string} LIKE {_sql_string(value)}, false)"
    if op == "contains":
        return _metadata_contains(ref, value)
    raise InvalidFilterError(f"Operator {op!r} cannot be compiled for metadata.")


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


# ---------------------------------------------------------------------------
# Reference semantics


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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
    if _is_number(value):
        number = _as_float(value)
        return number is not None and number == float(literal)
    return False


def _eval_condition(node: Condition, record: Mapping[str, Any]) -> bool:
    field, op, literal = node.field, node.op, node.value
    value = _lookup(field, record)
    is_column = field in COLUMN_FIELDS
    absent = value is None or value is MISSING
    if op == "exists":
        present = not absent if is_column else value is not MISSING
        return present is literal
    if op == "null":
        return absent is literal
    if op == "ne":
        if literal is None:
            return not absent
        return not _eval_condition(Condition(field, "eq", literal), record)
    if op == "nin":
        return not _eval_condition(Condition(field, "in", literal), record)
    if op == "in":
        return any(
            absent if item is None else _eval_condition(Condition(field, "eq", item), record)
            for item in literal
        )
    if absent:
        return False
    if op == "eq":
        return value == literal if is_column else _json_eq(value, literal)
    if op in ("gt", "gte", "lt", "lte"):
        return _compare(op, value, literal, is_column)
    if op == "like":
        return isinstance(value, str) and _like_regex(literal).fullmatch(value) is not None
    if op == "contains":
        return _contains(value, literal)
    raise InvalidFilterError(f"Unknown operator {op!r}.")


_ORDER: Final[Mapping[str, Callable[[Any, Any], bool]]] = {
    "gt": lambda a, b: bool(a > b),
    "gte": lambda a, b: bool(a >= b),
    "lt": lambda a, b: bool(a < b),
    "lte": lambda a, b: bool(a <= b),
}


def _compare(op: str, value: Any, literal: Any, is_column: bool) -> bool:
    compare = _ORDER[op]
    if is_column:
        return compare(value, literal)
    if isinstance(literal, str):
        # Python orders str by code point, which is UTF-8 byte order: the same as DataFusion.
        return isinstance(value, str) and compare(value, literal)
    if _is_number(value):
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


# ---------------------------------------------------------------------------
# Description


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
    if isinstance(node, And):
        return {"and": [_describe_node(child) for child in node.children]}
    if isinstance(node, Or):
        return {"or": [_describe_node(child) for child in node.children]}
    if isinstance(node, Not):
        return {"not": _describe_node(node.child)}
    if isinstance(node, Raw):
        return {"raw": node.sql, "bindings": _jsonable(node.bindings)}
    if isinstance(node, Condition):
        return {"field": node.field, "op": node.op, "value": _jsonable(node.value)}
    raise InvalidFilterError(f"Not a filter node: {type(node).__name__}.")
