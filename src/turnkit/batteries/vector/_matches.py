"""The records a store takes and the matches it gives: plain data every layer shares (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

__all__ = ["VectorMatch", "VectorRecord", "parse_timestamp"]


class VectorRecord(TypedDict, total=False):
    """A record as given to ``upsert``. Only ``id`` is required.

    A record needs a ``vector`` or a ``document`` (which the store encodes).
    """

    id: str
    document: str | None
    vector: Sequence[float] | npt.NDArray[np.floating[Any]] | None
    metadata: Mapping[str, Any] | None
    created_at: datetime | str | None
    updated_at: datetime | str | None


@dataclass(frozen=True, slots=True)
class VectorMatch:
    """One record returned by a search, scan or ``get``.

    Every field but ``id`` is ``None`` unless it was selected (``score`` and
    ``distance`` are set for searches with a near clause and absent on
    filter-only scans).

    Attributes:
        id: The record id.
        score: Similarity in [0, 1], higher is closer, for every metric.
        distance: The raw metric value LanceDB computed (lower is closer).
        document: The stored text.
        metadata: The stored JSON object.
        vector: The stored vector.
        created_at: The ``created_at`` given to the upsert that wrote this
            version, else that upsert's time. An upsert replaces the whole
            record, so pass the original ``created_at`` to keep it across
            updates (the retrieval callbacks do).
        updated_at: The ``updated_at`` given, else the time of the last write.
        duplicates: Other matches holding the same text (an ``.md`` page and its
            ``.html`` rendering, say), best first, when the retrieval pipeline
            collapsed them into this one (see `RetrievalSettings.collapse_duplicates`).
    """

    id: str
    score: float | None = None
    distance: float | None = None
    document: str | None = None
    metadata: dict[str, Any] | None = None
    vector: list[float] | None = None
    created_at: datetime | None = None
    updated_at: datetime | None = None
    duplicates: tuple[VectorMatch, ...] = ()


def parse_timestamp(value: Any, *, what: str = "timestamp") -> datetime:
    """An aware UTC datetime from a datetime or an ISO-8601 string (naive values are rejected)."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ValueError(f"{what} {value!r} is not an ISO-8601 timestamp") from exc
    if not isinstance(value, datetime):
        raise ValueError(f"{what} must be a datetime or an ISO-8601 string, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{what} {value.isoformat()!r} has no timezone; pass an aware datetime")
    return value.astimezone(UTC)
