"""Writing a filter tree back as a text expression that parses to the same filter."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Final, assert_never

from turnkit.batteries.vector._errors import InvalidFilterError
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw, join_group
from turnkit.batteries.vector.filters._fields import with_prefix
from turnkit.batteries.vector.filters._text import _KEYWORDS, _NAME_RE, _SEGMENT_RE

__all__ = ["format_filter_expression"]

_RENDER_OPS: Final = {"eq": "=", "ne": "!=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}


def _render_value(value: Any) -> str:
    # JSON's escapes (`\"`, `\n`, `\u001f`…) are exactly those the text grammar reads back.
    if isinstance(value, datetime):
        value = value.isoformat()
    if isinstance(value, float):
        return repr(value)
    if value is None or isinstance(value, bool | int | str):
        return json.dumps(value, ensure_ascii=False)
    raise InvalidFilterError(f"Cannot render {type(value).__name__} in a filter expression.")


def _render_field(field: str, field_prefix: str) -> str:
    if field_prefix:
        if not field.startswith(field_prefix):
            raise InvalidFilterError(
                f"Field {field!r} cannot be written with field_prefix={field_prefix!r}.",
                hint="Render with field_prefix='' to include columns.",
            )
        short = field[len(field_prefix) :]
        # `metadata.metadata.kind` stays whole: shortened, it would read back as `metadata.kind`.
        field = short if with_prefix(short, field_prefix) == field else field
    parts = []
    for index, seg in enumerate(field.split(".")):
        plain = (_NAME_RE if index == 0 else _SEGMENT_RE).fullmatch(seg) is not None
        parts.append(seg if plain and seg.lower() not in _KEYWORDS else f"`{seg}`")
    return ".".join(parts)


def format_filter_expression(node: FilterNode, *, field_prefix: str = "metadata.") -> str:
    """Render a filter tree as text that `parse_filter_expression` reads back to the same filter.

    Args:
        node: The filter tree (without `Raw` fragments).
        field_prefix: Stripped from every field; must match the prefix the
            text will be parsed with.

    Returns:
        The expression text; ``true``/``false`` for an empty AND/OR.

    Raises:
        InvalidFilterError: The tree contains raw SQL, or a field outside ``field_prefix``.
    """
    if isinstance(node, And | Or):
        return join_group(node, lambda child: format_filter_expression(child, field_prefix=field_prefix))
    if isinstance(node, Not):
        return f"NOT ({format_filter_expression(node.child, field_prefix=field_prefix)})"
    if isinstance(node, Raw):
        raise InvalidFilterError("Raw SQL cannot be written as a filter expression.")
    if not isinstance(node, Condition):
        raise InvalidFilterError(f"Not a filter node: {type(node).__name__}.")
    field = _render_field(node.field, field_prefix)
    op, value = node.op, node.value
    match op:
        case "eq" | "ne" | "gt" | "gte" | "lt" | "lte":
            if op == "ne" and value is None:
                return f"{field} IS NOT NULL"
            return f"{field} {_RENDER_OPS[op]} {_render_value(value)}"
        case "in" | "nin":
            items = ", ".join(_render_value(v) for v in value)
            return f"{field} {'IN' if op == 'in' else 'NOT IN'} ({items})"
        case "like" | "contains":
            return f"{field} {op.upper()} {_render_value(value)}"
        case "exists":
            return f"{field} EXISTS" if value else f"{field} NOT EXISTS"
        case "null":
            return f"{field} IS NULL" if value else f"NOT ({field} IS NULL)"
        case _:
            assert_never(op)
