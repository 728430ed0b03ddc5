"""What the store's modules share: the logger, column names and selection, write results, filter checks."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from turnkit.batteries.vector._errors import RecordNotFoundError
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
from turnkit.batteries.vector.filters._core import condition, to_sql
from turnkit.batteries.vector.filters._declared import FieldType
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._scores import Metric

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._planner import SearchPlan

__all__ = [
    "CollectionInfo",
    "UpsertResult",
    "both",
    "log",
    "newest",
    "read_columns",
    "recency",
    "record_key",
    "trim_metadata",
    "vector_of",
]

log = logging.getLogger("turnkit.vector")

_COLUMNS = ("id", "vector", "document", "metadata", "created_at", "updated_at")
# A record's identity once guarded writes reach a collection (see _guarded.py); never selected.
_KEY = "_key"
_FORMAT = 1  # the layout version recorded in each collection's metadata


def record_key(columns: Iterable[str]) -> str:
    """The column that identifies a record: ``_key`` once a guarded write reached the table, else ``id``."""
    return _KEY if _KEY in columns else "id"


def recency(stamp: datetime | None) -> tuple[bool, Any]:
    """A sort key by ``updated_at``: no stamp first, then oldest to newest (the newest copy wins)."""
    return (stamp is not None, stamp)


def newest(keys: Sequence[Any], stamps: Sequence[datetime | None]) -> list[int]:
    """The positions of each key's newest copy by `recency` (the first among equals), in order."""
    best: dict[Any, int] = {}
    for index, key in enumerate(keys):
        seen = best.get(key)
        if seen is None or recency(stamps[index]) > recency(stamps[seen]):
            best[key] = index
    return sorted(best.values())


def both(node: FilterNode, where: FilterNode | None) -> FilterNode:
    """``node``, and ``where`` too when there is one (a query's filter, a guard included)."""
    return node if where is None else And((node, where))


def read_columns(select: Iterable[str]) -> list[str]:
    """The table columns a selection reads (``id`` always; ``metadata.<key>`` reads ``metadata``)."""
    wanted: list[str] = ["id"]
    for name in select:
        if name == "*":
            return list(_COLUMNS)
        if name.startswith("metadata."):
            name = "metadata"
        if name in _COLUMNS and name not in wanted:
            wanted.append(name)
    return wanted


def trim_metadata(matches: list[Any], select: Iterable[str]) -> list[Any]:
    """``matches`` with only the selected ``metadata.<key>`` paths kept in their metadata."""
    paths = [name.split(".")[1:] for name in select if name.startswith("metadata.")]
    if not paths or "metadata" in select or "*" in select:
        return matches
    out = []
    for match in matches:
        source = match.metadata or {}
        trimmed: dict[str, Any] = {}
        for path in paths:
            node: Any = source
            for key in path:
                if not isinstance(node, dict) or key not in node:
                    break
                node = node[key]
            else:
                target = trimmed
                for key in path[:-1]:
                    target = target.setdefault(key, {})
                target[path[-1]] = node
        out.append(replace(match, metadata=trimmed))
    return out


async def vector_of(
    coll: _Collection, record_id: str, where: FilterNode | None = None
) -> np.ndarray[Any, Any]:
    """The stored vector of ``record_id`` (its newest copy), read inside ``where``: a ``near_id`` anchor.

    Inside the search's filter (a guard included): another scope may hold the same id.
    """
    where = None if where is None else _without_id_terms(where, record_id)
    sql = to_sql(both(condition("id", "eq", record_id), where), coll.fields)
    with translate_errors("search", coll.name, raw_filter=_contains_raw(where)):
        rows = await coll.table.query().where(sql).select(["vector", "updated_at"]).to_list()
    if not rows:
        raise RecordNotFoundError(
            f"near_id(): no record {record_id!r} in collection {coll.name!r}.",
            collection=coll.name,
            record_id=record_id,
        )
    newest = max(rows, key=lambda r: recency(r["updated_at"]))  # as reads keep
    return np.asarray(newest["vector"], dtype=np.float32)


def _without_id_terms(node: FilterNode, record_id: str) -> FilterNode | None:
    """``node`` without a top-level ``where_not("id", record_id)``.

    ``near_id(x).where_not("id", x)`` ("like x, but not x") reads x's vector;
    every other condition, a guard's included, still applies to the anchor.
    """
    parts = node.children if isinstance(node, And) else (node,)
    kept = tuple(part for part in parts if not _excludes(part, record_id))
    return None if not kept else kept[0] if len(kept) == 1 else And(kept)


def _excludes(node: FilterNode, record_id: str) -> bool:
    # Only where_not("id", x)'s own shape: a guard's ``id != x`` or ``id nin [...]`` still holds.
    return (
        isinstance(node, Not)
        and isinstance(node.child, Condition)
        and node.child.field == "id"
        and node.child.op == "eq"
        and node.child.value == record_id
    )


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """What an upsert did."""

    inserted: int
    updated: int
    deleted: int = 0

    @property
    def written(self) -> int:
        """Records written in all."""
        return self.inserted + self.updated


def _matches_everything(node: FilterNode) -> bool | None:
    """True when a filter is a tautology by its structure, False for a contradiction, None otherwise."""
    if isinstance(node, And):
        parts = [_matches_everything(c) for c in node.children]
        if any(p is False for p in parts):
            return False
        return True if all(p is True for p in parts) else None
    if isinstance(node, Or):
        parts = [_matches_everything(c) for c in node.children]
        if any(p is True for p in parts):
            return True
        return False if all(p is False for p in parts) else None
    if isinstance(node, Not):
        inner = _matches_everything(node.child)
        return None if inner is None else not inner
    if isinstance(node, Condition) and node.op in ("in", "nin") and not node.value:
        return node.op == "nin"
    return None


def _contains_raw(node: FilterNode | None) -> bool:
    if isinstance(node, And | Or):
        return any(_contains_raw(child) for child in node.children)
    return isinstance(node, Raw) or (isinstance(node, Not) and _contains_raw(node.child))


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    """Facts about one collection."""

    name: str
    dimension: int
    metric: Metric
    encoder: str | None
    rows: int
    version: int
    indexes: tuple[str, ...]
    unindexed_rows: int
    fragments: int
    fields: dict[str, FieldType] = field(default_factory=dict)
    """Declared fields (metadata keys kept as typed, indexed columns) and their types."""
    auto_fields: dict[str, FieldType] = field(default_factory=dict)
    """Keys the store keeps as typed, indexed columns by itself (every stored value had one type)."""
    recall_curve: tuple[tuple[int, float], ...] = ()
    """The HNSW index's recall@10 at each ``ef``, measured when it was built, or since on the
    collection's own recent queries (``recall_queries``; empty: no HNSW index)."""
    recall_queries: int = 0
    """How many of the collection's recent queries ``recall_curve`` was measured on (0: on stored
    vectors, at the build)."""
    search_ef: int | None = None
    """The HNSW ``ef`` a 10-result search uses now: the measured one for the store's ``recall_target``,
    else the row-count rule's (``None``: the index is not HNSW)."""
    plan: SearchPlan | None = None
    """Which path unfiltered searches take, exact from memory or the index, with both estimated costs
    (``None``: no measured index cost, the memory tier's size limits decide)."""
