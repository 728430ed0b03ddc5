"""LlamaIndex ``MetadataFilters`` as turnkit filter nodes, operator by operator.

The semantics are those of LlamaIndex's reference evaluator
(``build_metadata_filter_fn``, which ``SimpleVectorStore`` uses): a key names
a top-level metadata key; a missing or ``None`` value satisfies only ``!=``,
``nin`` and ``is_empty``; ``not`` means none of the filters holds. Where the
reference raises ``TypeError`` on a stored value of another type (``>``
between a string and a number, ``text_match`` on a number), the turnkit
filter does not match that record. An operator or value turnkit cannot
express the same way is refused when the query is built, never approximated.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from ...batteries.vector import (
    And,
    FilterNode,
    InvalidFilterError,
    Not,
    Or,
    Raw,
    UnknownFieldError,
    condition,
    validate_field,
)

__all__ = ["to_filter_node"]

_TRUE: FilterNode = And(())
_FALSE: FilterNode = Or(())


def to_filter_node(filters: MetadataFilters | None) -> FilterNode | None:
    """The turnkit filter for ``filters``; ``None`` when it has no filter (everything matches).

    Nested ``MetadataFilters`` are combined recursively (the reference
    evaluator refuses them); an empty nested group matches everything.

    Raises:
        InvalidFilterError: ``E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR``: ``text_match_insensitive``, which
            turnkit cannot match the same way.
        InvalidFilterError: A value that does not fit its operator.
        UnknownFieldError: A key turnkit cannot address as one top-level metadata key.
    """
    if filters is None or not filters.filters:
        return None
    return _group(filters)


def _group(filters: MetadataFilters) -> FilterNode:
    if not filters.filters:
        return _TRUE
    children = tuple(_group(f) if isinstance(f, MetadataFilters) else _leaf(f) for f in filters.filters)
    match filters.condition or FilterCondition.AND:
        case FilterCondition.AND:
            return children[0] if len(children) == 1 else And(children)
        case FilterCondition.OR:
            return children[0] if len(children) == 1 else Or(children)
        case FilterCondition.NOT:
            return Not(children[0] if len(children) == 1 else Or(children))
    raise InvalidFilterError(f"Unknown filter condition {filters.condition!r}.", hint="Use and, or or not.")


def _field(key: str) -> str:
    # A LlamaIndex key is one top-level metadata key; turnkit would read a dot as a path.
    if "." in key:
        raise UnknownFieldError(
            f"Metadata filter key {key!r} has a '.', which turnkit reads as a nested path.",
            hint="Filter keys name top-level metadata keys: ASCII letters, digits, '_' and '-'.",
            field=key,
        )
    return validate_field("metadata." + key)


def _leaf(f: MetadataFilter) -> FilterNode:
    field = _field(f.key)
    build = _OPERATORS.get(FilterOperator(f.operator))
    if build is None:
        raise InvalidFilterError(
            f"Metadata filter operator {f.operator.value!r} (on {f.key!r}) has no turnkit equivalent.",
            code="E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
            hint="Store a lower-cased copy of the key and filter it with text_match and a lower-cased value."
            if f.operator == FilterOperator.TEXT_MATCH_INSENSITIVE
            else f"Supported: {', '.join(op.value for op in _OPERATORS)}.",
            field=f.key,
            op=f.operator.value,
        )
    return build(field, f.value)


def _refuse(field: str, op: FilterOperator, detail: str, hint: str) -> InvalidFilterError:
    return InvalidFilterError(f"Filter on {field!r} with {op.value!r} {detail}.", hint=hint, field=field)


def _values(field: str, op: FilterOperator, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _refuse(
            field,
            op,
            f"takes a list, not {type(value).__name__}",
            hint=f'Pass a list of values: MetadataFilter(key=..., operator="{op.value}", value=["a", "b"]).',
        )
    return value


def _eq(field: str, value: Any) -> FilterNode:
    # The reference compares the stored value with None: never equal (a missing value never matches).
    return _FALSE if value is None else condition(field, "eq", value)


def _ne(field: str, value: Any) -> FilterNode:
    return _TRUE if value is None else condition(field, "ne", value)


def _order(name: str) -> Callable[[str, Any], FilterNode]:
    return lambda field, value: condition(field, name, value)


def _listed(op: FilterOperator) -> Callable[[str, Any], FilterNode]:
    return lambda field, value: condition(field, op.value, _values(field, op, value))


def _contains(field: str, value: Any) -> FilterNode:
    if value is None or isinstance(value, list):
        raise _refuse(
            field,
            FilterOperator.CONTAINS,
            "takes one string or number",
            hint="Use any or all to test several values.",
        )
    return condition(field, "contains", value)


def _any(field: str, value: Any) -> FilterNode:
    return Or(tuple(_contains(field, v) for v in _values(field, FilterOperator.ANY, value)))


def _all(field: str, value: Any) -> FilterNode:
    # With no values the reference still needs a stored value that is not None.
    present = condition(field, "null", False)
    return And((present, *(_contains(field, v) for v in _values(field, FilterOperator.ALL, value))))


def _text_match(field: str, value: Any) -> FilterNode:
    if not isinstance(value, str):
        raise _refuse(
            field,
            FilterOperator.TEXT_MATCH,
            f"takes a string, not {type(value).__name__}",
            hint="text_match is a substring test on string values.",
        )
    escaped = value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return condition(field, "like", f"%{escaped}%")


def _is_empty(field: str, value: Any) -> FilterNode:
    # None or missing, "", or []: an empty JSON array has no structured test, so it is read as JSON text.
    key = field.removeprefix("metadata.")
    empty_list = Raw(f"coalesce(json_extract(metadata, '$[\"{key}\"]') = '[]', false)")
    return Or((condition(field, "null", True), condition(field, "eq", ""), empty_list))


_OPERATORS: dict[FilterOperator, Callable[[str, Any], FilterNode]] = {
    FilterOperator.EQ: _eq,
    FilterOperator.NE: _ne,
    FilterOperator.GT: _order("gt"),
    FilterOperator.GTE: _order("gte"),
    FilterOperator.LT: _order("lt"),
    FilterOperator.LTE: _order("lte"),
    FilterOperator.IN: _listed(FilterOperator.IN),
    FilterOperator.NIN: _listed(FilterOperator.NIN),
    FilterOperator.CONTAINS: _contains,
    FilterOperator.ANY: _any,
    FilterOperator.ALL: _all,
    FilterOperator.TEXT_MATCH: _text_match,
    FilterOperator.IS_EMPTY: _is_empty,
}
