"""The inspectable, I/O-free description of a query that a builder compiles to."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from turnkit.batteries.vector.filters._ast import FilterNode

if TYPE_CHECKING:
    from turnkit.batteries.vector.query._ranking_specs import HybridSpec, MmrSpec

__all__ = ["MAX_LIMIT", "NearId", "NearText", "NearVector", "QuerySpec"]

MAX_LIMIT = 10_000
"""The most matches one query returns or fetches (``limit``, ``offset``, each ranking leg's pool)."""


@dataclass(frozen=True, slots=True)
class NearText:
    """Search near the encoding of ``text``."""

    text: str


@dataclass(frozen=True, slots=True, eq=False)
class NearVector:
    """Search near ``vector`` (a read-only float32 array: no per-query conversion to Python floats)."""

    vector: npt.NDArray[np.float32]

    def __post_init__(self) -> None:
        vector = self.vector
        if not (isinstance(vector, np.ndarray) and vector.dtype == np.float32 and not vector.flags.writeable):
            vector = np.array(vector, dtype=np.float32)  # a copy: the caller's array may change later
            vector.flags.writeable = False
            object.__setattr__(self, "vector", vector)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, NearVector) and np.array_equal(self.vector, other.vector)

    def __hash__(self) -> int:
        return hash(self.vector.tobytes())


@dataclass(frozen=True, slots=True)
class NearId:
    """Search near the stored vector of record ``id`` (the record itself included)."""

    id: str


Near = NearText | NearVector | NearId


@dataclass(frozen=True, slots=True, kw_only=True)
class QuerySpec:
    """Everything a `QueryBuilder` has been told, with no I/O done.

    ``spec.where_sql`` shows the exact filter SQL LanceDB will receive.
    """

    collection: str
    near: Near | None = None
    filter: FilterNode | None = None
    select: tuple[str, ...] | None = None
    limit: int = 10
    offset: int = 0
    min_score: float | None = None
    max_distance: float | None = None
    nprobes: int | None = None
    refine_factor: int | None = None
    ef: int | None = None
    prefilter: bool | None = None  # None: not set, a pre-filter (settings may still set it)
    hybrid: HybridSpec | None = None
    mmr: MmrSpec | None = None

    @property
    def prefiltered(self) -> bool:
        """Whether the filter runs before the search: unless ``prefilter`` was set to ``False``."""
        return self.prefilter is not False

    @property
    def where_sql(self) -> str | None:
        """The compiled filter, or ``None`` without one."""
        from turnkit.batteries.vector.filters._core import to_sql

        return None if self.filter is None else to_sql(self.filter)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly view of the spec (vectors shortened), for logs and tests."""
        from turnkit.batteries.vector.filters._core import filter_to_dict

        near: dict[str, Any] | None = None
        if isinstance(self.near, NearText):
            near = {"text": self.near.text}
        elif isinstance(self.near, NearVector):
            near = {"vector": [float(x) for x in self.near.vector[:8]], "dimension": len(self.near.vector)}
        elif isinstance(self.near, NearId):
            near = {"id": self.near.id}
        return {
            "collection": self.collection,
            "near": near,
            "filter": None if self.filter is None else filter_to_dict(self.filter),
            "where_sql": self.where_sql,
            "select": None if self.select is None else list(self.select),
            "limit": self.limit,
            "offset": self.offset,
            "min_score": self.min_score,
            "max_distance": self.max_distance,
            "nprobes": self.nprobes,
            "refine_factor": self.refine_factor,
            "ef": self.ef,
            "prefilter": self.prefiltered,
            "hybrid": None if self.hybrid is None else asdict(self.hybrid),
            "mmr": None if self.mmr is None else asdict(self.mmr),
        }
