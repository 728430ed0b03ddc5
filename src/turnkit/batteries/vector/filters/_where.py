"""The knex-style ``where`` family shared by query builders and filter groups.

Chained calls AND together; ``or_*`` calls OR the new condition with
everything before it, so ``where(A).where(B).or_where(C)`` is
``(A AND B) OR C``. A callable argument opens a parenthesised group.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Self, TypeAlias, overload

from turnkit.batteries.vector._errors import InvalidFilterError
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
from turnkit.batteries.vector.filters._core import and_, bind_raw, condition, not_, or_, parse_mongo

__all__ = ["FilterGroup", "Filterable"]

_MISSING: Any = object()
Clause: TypeAlias = "FilterNode | Mapping[str, Any] | Callable[[FilterGroup], FilterGroup]"
"""A whole condition in one argument: a filter node, a (Mongo-style) dict, or a callable group."""
_NODE_TYPES = (Condition, And, Or, Not, Raw)


class Filterable:
    """Mixin: every ``where*`` method returns a new object with the filter extended."""

    _filter: FilterNode | None

    def _with_filter(self, node: FilterNode | None) -> Self:  # pragma: no cover - abstract
        raise NotImplementedError

    def _combine(self, node: FilterNode, join: Callable[[FilterNode, FilterNode], FilterNode]) -> Self:
        return self._with_filter(node if self._filter is None else join(self._filter, node))

    def _node(self, args: tuple[Any, ...], kwargs: Mapping[str, Any], method: str) -> FilterNode:
        if kwargs:
            raise InvalidFilterError(f"{method}() takes positional arguments only, got {sorted(kwargs)}.")
        if len(args) == 1:
            (arg,) = args
            if isinstance(arg, _NODE_TYPES):
                return arg
            if isinstance(arg, Mapping):
                return parse_mongo(arg)
            if callable(arg):
                return _group(arg, method)
            raise InvalidFilterError(
                f"{method}() with one argument takes a dict, a callable or a filter node, "
                f"not {type(arg).__name__}.",
                hint=f"Use {method}(field, value) or {method}(field, op, value).",
            )
        if len(args) == 2:
            return condition(args[0], "eq", args[1])
        if len(args) == 3:
            return condition(args[0], args[1], args[2])
        raise InvalidFilterError(f"{method}() takes 1 to 3 arguments, got {len(args)}.")

    @overload
    def where(self, clause: Clause, /) -> Self: ...
    @overload
    def where(self, field: str, value: Any, /) -> Self: ...
    @overload
    def where(self, field: str, op: str, value: Any, /) -> Self: ...
    def where(self, *args: Any, **kwargs: Any) -> Self:
        """AND a condition: ``(field, value)``, ``(field, op, value)``, a dict, a callable group or a node.

        A dict is equality per key or Mongo-style operators
        (``{"metadata.year": {"$gte": 2020}}``).
        """
        return self._combine(self._node(args, kwargs, "where"), and_)

    @overload
    def or_where(self, clause: Clause, /) -> Self: ...
    @overload
    def or_where(self, field: str, value: Any, /) -> Self: ...
    @overload
    def or_where(self, field: str, op: str, value: Any, /) -> Self: ...
    def or_where(self, *args: Any, **kwargs: Any) -> Self:
        """OR a condition with everything before it (same arguments as `where`)."""
        return self._combine(self._node(args, kwargs, "or_where"), or_)

    @overload
    def where_not(self, clause: Clause, /) -> Self: ...
    @overload
    def where_not(self, field: str, value: Any, /) -> Self: ...
    @overload
    def where_not(self, field: str, op: str, value: Any, /) -> Self: ...
    def where_not(self, *args: Any, **kwargs: Any) -> Self:
        """AND the negation of a condition (same arguments as `where`)."""
        return self._combine(not_(self._node(args, kwargs, "where_not")), and_)

    @overload
    def or_where_not(self, clause: Clause, /) -> Self: ...
    @overload
    def or_where_not(self, field: str, value: Any, /) -> Self: ...
    @overload
    def or_where_not(self, field: str, op: str, value: Any, /) -> Self: ...
    def or_where_not(self, *args: Any, **kwargs: Any) -> Self:
        """OR the negation of a condition."""
        return self._combine(not_(self._node(args, kwargs, "or_where_not")), or_)

    def where_in(self, field: str, values: Iterable[Any]) -> Self:
        """AND ``field IN values`` (an empty list matches nothing)."""
        return self._combine(condition(field, "in", _as_list(values, "where_in")), and_)

    def or_where_in(self, field: str, values: Iterable[Any]) -> Self:
        """OR ``field IN values``."""
        return self._combine(condition(field, "in", _as_list(values, "or_where_in")), or_)

    def where_not_in(self, field: str, values: Iterable[Any]) -> Self:
        """AND ``field NOT IN values`` (an empty list matches everything)."""
        return self._combine(condition(field, "nin", _as_list(values, "where_not_in")), and_)

    def or_where_not_in(self, field: str, values: Iterable[Any]) -> Self:
        """OR ``field NOT IN values``."""
        return self._combine(condition(field, "nin", _as_list(values, "or_where_not_in")), or_)

    def where_null(self, field: str) -> Self:
        """AND "field is missing or null"."""
        return self._combine(condition(field, "null"), and_)

    def or_where_null(self, field: str) -> Self:
        """OR "field is missing or null"."""
        return self._combine(condition(field, "null"), or_)

    def where_exists(self, field: str) -> Self:
        """AND "field is present" (a metadata key stored as null counts as present)."""
        return self._combine(condition(field, "exists"), and_)

    def or_where_exists(self, field: str) -> Self:
        """OR "field is present"."""
        return self._combine(condition(field, "exists"), or_)

    def where_raw(self, sql: str, bindings: Sequence[Any] = ()) -> Self:
        """AND a trusted SQL fragment; each ``?`` is bound to an escaped value from ``bindings``.

        Raw SQL is for the developer, never for text from users or models:
        only the bindings are escaped. So that it combines safely with other
        filters, the fragment may not contain ``;``, an SQL comment (``--``,
        ``/*``), unbalanced parentheses or an unterminated quote; a ``?``
        inside a quoted literal is not a placeholder. The placeholder count
        must match ``bindings`` (``E_VECTOR_STORE_RAW_BINDING_MISMATCH``).

        Example: ``vs("docs").where_raw("json_extract(metadata, '$.year') > ?", [2020])``.
        """
        return self._combine(_raw(sql, bindings), and_)

    def or_where_raw(self, sql: str, bindings: Sequence[Any] = ()) -> Self:
        """OR a trusted SQL fragment (see `where_raw`)."""
        return self._combine(_raw(sql, bindings), or_)


def _raw(sql: str, bindings: Sequence[Any]) -> Raw:
    bind_raw(sql, bindings)  # checks the fragment, the placeholder count and the values now
    return Raw(sql, tuple(bindings))


def _as_list(values: Iterable[Any], method: str) -> list[Any]:
    if not isinstance(values, str | bytes | Mapping):
        with contextlib.suppress(TypeError):
            return list(values)
    raise InvalidFilterError(f"{method}() takes a list of values, not {type(values).__name__}.")


class FilterGroup(Filterable):
    """The builder handed to a callable in ``where(lambda g: ...)``: where-methods only."""

    __slots__ = ("_filter",)

    def __init__(self, node: FilterNode | None = None) -> None:
        self._filter = node

    def _with_filter(self, node: FilterNode | None) -> FilterGroup:
        return FilterGroup(node)

    @property
    def node(self) -> FilterNode | None:
        """The filter built so far."""
        return self._filter


def _group(fn: Callable[[FilterGroup], Any], method: str) -> FilterNode:
    result = fn(FilterGroup())
    if not isinstance(result, FilterGroup):
        raise InvalidFilterError(
            f"The callable passed to {method}() must return the group it was given, extended "
            "(e.g. lambda g: g.where(...).or_where(...)).",
        )
    return And(()) if result.node is None else result.node
