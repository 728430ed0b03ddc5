"""The filter tree every filter form compiles into.

Builder calls (``where``, ``or_where``, ``where_in``…), Mongo-style dicts and
the Vertex-style text expressions all produce these immutable nodes. One SQL
compiler and one pure-Python reference evaluator (``_core.py``) consume them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

__all__ = ["COLUMN_FIELDS", "And", "Condition", "FilterNode", "Not", "Op", "Or", "Raw", "join_group"]

Op = Literal["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like", "contains", "exists", "null"]

COLUMN_FIELDS: frozenset[str] = frozenset({"id", "document", "created_at", "updated_at"})
"""Fields that are real columns; every other field is ``metadata.<path>``."""


@dataclass(frozen=True, slots=True)
class Condition:
    """One comparison: ``field op value``.

    ``field`` is ``id``, ``document``, ``created_at``, ``updated_at`` or a
    ``metadata.a.b`` path into the record's JSON metadata.
    """

    field: str
    op: Op
    value: Any = None


@dataclass(frozen=True, slots=True)
class And:
    """All children hold (an empty ``And`` is true)."""

    children: tuple[FilterNode, ...]


@dataclass(frozen=True, slots=True)
class Or:
    """Any child holds (an empty ``Or`` is false)."""

    children: tuple[FilterNode, ...]


@dataclass(frozen=True, slots=True)
class Not:
    """The child does not hold."""

    child: FilterNode


@dataclass(frozen=True, slots=True)
class Raw:
    """A trusted SQL fragment with ``?`` placeholders bound safely to ``bindings``."""

    sql: str
    bindings: tuple[Any, ...] = ()


FilterNode: TypeAlias = Condition | And | Or | Not | Raw


def join_group(node: And | Or, render: Callable[[FilterNode], str]) -> str:
    """The children of ``node`` rendered and joined with AND or OR; ``true``/``false`` when there are none.

    A child that is itself a group of two or more is parenthesised, as SQL and
    the text grammar both bind AND tighter than OR.
    """
    parts = (
        f"({render(child)})" if isinstance(child, And | Or) and len(child.children) > 1 else render(child)
        for child in node.children
    )
    joiner, empty = (" AND ", "true") if isinstance(node, And) else (" OR ", "false")
    return joiner.join(parts) or empty
