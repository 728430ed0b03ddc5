"""Collection handles: the cached table of a collection, its process-wide tracker, the compaction policy."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector.filters._declared import FieldType
from turnkit.batteries.vector.store._asked import Asked
from turnkit.batteries.vector.store._recall import DEFAULT_RECALL_TARGET, RecallCurve
from turnkit.batteries.vector.store._scores import Metric

__all__ = ["AutoOptimize"]


_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoOptimize:
    """When the store compacts a collection by itself, in the background after a write.

    Attributes:
        every_writes: Optimize after this many write commits (LanceDB's own rule
            of thumb is about 20).
        unindexed_rows: Also optimize once an indexed collection has this many
            rows outside its index (they are flat-scanned until then).
    """

    every_writes: int = 20
    unindexed_rows: int | None = 10_000


@dataclass(slots=True)
class _Collection:
    name: str
    table: Any
    dimension: int
    metric: Metric
    encoder: str | None
    tracker: _Tracker
    seen_version: int = 0
    generation: int = 0
    writes: int = 0
    index_type: str | None = None
    index_rows: int = 0  # rows when the index was last built or optimized (sizes the search knobs)
    # The recall per ef measured at the last HNSW build, as the vector field's metadata records it.
    recorded_curve: RecallCurve | None = None
    recall_target: float = DEFAULT_RECALL_TARGET  # the store's
    asked: Asked = field(default_factory=Asked)  # recent queries, and the recall measured on them
    maintenance: asyncio.Task[None] | None = None
    fts_ready: bool = False  # the BM25 index on `document` exists (hybrid search)
    fts_positions: bool = False  # ... and it records positions (phrase queries work)
    # ... and the table version at which it was seen to cover every row (`full_text_rows`).
    fts_whole_at: int | None = None
    fields: dict[str, FieldType] = field(default_factory=dict)  # declared fields, from the schema
    auto: frozenset[str] = frozenset()  # which of them the store declared by itself (_auto_fields.py)
    keyed: bool = False  # records are keyed by `_key` (a guarded write reached it), not `id`
    # Held while this handle moves to the latest version: a search that arrives meanwhile waits,
    # rather than read the old version under the new version's number (and cache it under it).
    catching_up: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Other processes' commits (read_consistency_interval; see _freshness.py): which table this
    # handle belongs to, the latest version and its manifest's stamp at the last look, and when.
    born: str | None = None
    known_version: int = 0
    stamp: tuple[int, int] | None = None
    checked_at: float = 0.0
    checking: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def built_curve(self) -> RecallCurve | None:
        """The HNSW index's recall per ef measured at its build (_recall.py); ``None`` under another index."""
        return self.recorded_curve if "hnsw" in (self.index_type or "").lower() else None

    @property
    def recall_curve(self) -> RecallCurve | None:
        """The curve searches use: measured on recent queries (_asked.py), else the build's."""
        return self.asked.current(self.built_curve)

    @property
    def lock(self) -> asyncio.Lock:
        """The process-wide writer lock of this collection."""
        return self.tracker.lock

    def wrote(self) -> None:
        """Record a commit made through this handle (it already sees it; other stores' do not)."""
        self.tracker.version += 1
        self.seen_version = self.tracker.version


@dataclass(slots=True)
class _Tracker:
    """Process-wide facts about one collection, shared by every store opened on its database."""

    # One writer per collection per *process*, whichever store object writes:
    # LanceDB duplicates a new key written by two merge_inserts at once.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Bumped by every write and drop, so other stores' handles know to refresh.
    version: int = 0
    generation: int = 0


_TRACKERS: dict[tuple[str, str], _Tracker] = {}


def _check_name(name: str) -> str:
    # "." and ".." match the character set but name directories, not tables.
    if not isinstance(name, str) or not _NAME.match(name) or not name.strip("."):
        raise VectorStoreUsageError(
            f"Invalid collection name {name!r}.",
            code="E_VECTOR_STORE_INVALID_COLLECTION_NAME",
            collection=str(name),
        )
    return name
