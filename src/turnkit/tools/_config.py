"""Options shared by the tools: reranking, LanceDB search knobs, the request context."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict

from ._errors import InvalidToolConfigError

if TYPE_CHECKING:
    from ..batteries.vector import FilterNode, VectorStore

__all__ = [
    "DatabaseConfig",
    "RerankConfig",
    "RerankWeights",
    "StoreResolver",
    "VectorQueryRequestContext",
]


def _bad(option: str, detail: str, hint: str | None = None) -> InvalidToolConfigError:
    return InvalidToolConfigError(f"{option}: {detail}", hint=hint, option=option)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True, kw_only=True)
class RerankWeights:
    """How a reranker blends its three signals; the weights must sum to 1.

    Attributes:
        semantic: Weight of the reranking model's relevance score.
        vector: Weight of the vector-search score (turnkit's similarity, higher is better).
        position: Weight of the original rank (``1 - i/n``).
    """

    semantic: float = 0.4
    vector: float = 0.4
    position: float = 0.2

    def __post_init__(self) -> None:
        for name in ("semantic", "vector", "position"):
            value = getattr(self, name)
            if not _is_number(value) or not 0.0 <= value <= 1.0:
                raise _bad("reranker.weights", f"{name} must be a number in [0, 1], got {value!r}.")
        total = self.semantic + self.vector + self.position
        # A tolerance, not exact float equality: 0.7 + 0.2 + 0.1 is 0.9999999999999999.
        if not math.isclose(total, 1.0, rel_tol=0.0, abs_tol=1e-9):
            raise _bad(
                "reranker.weights",
                f"the weights sum to {total:g} (semantic {self.semantic:g} + vector {self.vector:g} "
                f"+ position {self.position:g}); they must sum to 1.",
                "Give all three weights; one left out keeps its default (0.4, 0.4, 0.2).",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class RerankConfig:
    """Reranking options for the vector query tool (Mastra's ``reranker``).

    Reranking itself is not implemented yet: a configured reranker keeps the
    vector-search order and only applies ``top_k``. The option and its
    validation exist so configurations written today keep working.

    Attributes:
        model: Name of the reranking model (informational until ranking lands).
        weights: Blend of semantic, vector and position scores (sum 1).
        top_k: How many results to keep after reranking (default 3).
    """

    model: str | None = None
    weights: RerankWeights = field(default_factory=RerankWeights)
    top_k: int = 3

    def __post_init__(self) -> None:
        if self.model is not None and (not isinstance(self.model, str) or not self.model.strip()):
            raise _bad("reranker.model", f"must be a non-empty string or None, got {self.model!r}.")
        if isinstance(self.weights, Mapping):
            object.__setattr__(self, "weights", _weights(self.weights))
        elif not isinstance(self.weights, RerankWeights):
            raise _bad(
                "reranker.weights", f"must be RerankWeights or a dict, got {type(self.weights).__name__}."
            )
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or not 1 <= self.top_k <= 1000:
            raise _bad("reranker.top_k", f"must be an integer in [1, 1000], got {self.top_k!r}.")

    @classmethod
    def coerce(cls, value: RerankConfig | Mapping[str, Any] | None) -> RerankConfig | None:
        """Accept a `RerankConfig`, a dict of its fields (``topK`` also accepted), or ``None``."""
        if value is None or isinstance(value, RerankConfig):
            return value
        if not isinstance(value, Mapping):
            raise _bad("reranker", f"must be a RerankConfig or a dict, got {type(value).__name__}.")
        data = dict(value)
        options = data.pop("options", None)
        if isinstance(options, Mapping):  # Mastra's shape: {"model", "options": {"weights", "topK"}}
            data.update(options)
        if "topK" in data:
            data["top_k"] = data.pop("topK")
        unknown = set(data) - {"model", "weights", "top_k"}
        if unknown:
            raise _bad("reranker", f"unknown keys {sorted(map(str, unknown))}; use model, weights, top_k.")
        return cls(**data)


def _weights(value: Mapping[str, Any]) -> RerankWeights:
    unknown = set(value) - {"semantic", "vector", "position"}
    if unknown:
        raise _bad(
            "reranker.weights", f"unknown keys {sorted(map(str, unknown))}; use semantic, vector, position."
        )
    return RerankWeights(**value)


@dataclass(frozen=True, slots=True, kw_only=True)
class DatabaseConfig:
    """LanceDB search knobs (Mastra's ``database_config``, LanceDB's own options).

    Every field defaults to ``None``: the store's defaults apply (prefilter on,
    index-aware ``ef``/``refine_factor``).

    Attributes:
        nprobes: IVF partitions to probe.
        refine_factor: Re-rank ``refine_factor × top_k`` candidates exactly (IVF_PQ).
        ef: HNSW candidate-list size.
        min_score: Drop matches whose similarity (in [0, 1]) is lower.
        prefilter: Filter before (``True``) or after (``False``) the vector search.
    """

    nprobes: int | None = None
    refine_factor: int | None = None
    ef: int | None = None
    min_score: float | None = None
    prefilter: bool | None = None

    def __post_init__(self) -> None:
        for name, ceiling in (("nprobes", 100_000), ("refine_factor", 1_000), ("ef", 100_000)):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ceiling
            ):
                raise _bad(f"database_config.{name}", f"must be an integer in [1, {ceiling}], got {value!r}.")
        if self.min_score is not None and (not _is_number(self.min_score) or not 0 <= self.min_score <= 1):
            raise _bad("database_config.min_score", f"must be a number in [0, 1], got {self.min_score!r}.")
        if self.prefilter is not None and not isinstance(self.prefilter, bool):
            raise _bad("database_config.prefilter", f"must be true or false, got {self.prefilter!r}.")

    @classmethod
    def coerce(cls, value: DatabaseConfig | Mapping[str, Any] | None) -> DatabaseConfig:
        """Accept a `DatabaseConfig`, a dict of its fields (also under a ``"lancedb"`` key), or ``None``."""
        if value is None:
            return cls()
        if isinstance(value, DatabaseConfig):
            return value
        if not isinstance(value, Mapping):
            raise _bad("database_config", f"must be a DatabaseConfig or a dict, got {type(value).__name__}.")
        data = dict(value)
        if set(data) == {"lancedb"} and isinstance(data["lancedb"], Mapping):
            data = dict(data["lancedb"])
        unknown = set(data) - {"nprobes", "refine_factor", "ef", "min_score", "prefilter"}
        if unknown:
            raise _bad(
                "database_config",
                f"unknown keys {sorted(map(str, unknown))}.",
                "LanceDB takes nprobes, refine_factor, ef, min_score and prefilter.",
            )
        return cls(**data)


StoreResolver: TypeAlias = "Callable[[Mapping[str, Any]], VectorStore | Awaitable[VectorStore]]"
"""A function of the request context that returns the store to search (sync or async)."""


class VectorQueryRequestContext(TypedDict, total=False):
    """Per-request values a host passes to ``tool.execute(..., request_context=...)``.

    Each key overrides the creation-time value for one request. Any other key
    (a tenant id, say) is passed through untouched to a store resolver.

    Attributes:
        collection: The collection to search.
        filter: A guard filter, ANDed with the creation-time guard and the
            model's filter; never shown to the model (Mongo dict over metadata
            keys, or a filter node).
        top_k: Forces the number of results (still clamped to ``max_top_k``).
        include_vectors: Return each match's vector in ``sources``.
        include_sources: Return ``sources`` at all.
        reranker: A `RerankConfig` (or its dict form).
        database_config: A `DatabaseConfig` (or its dict form); replaces the
            creation-time one.
        provider_options: Options forwarded to the encoder.
    """

    collection: str
    filter: Mapping[str, Any] | FilterNode
    top_k: int
    include_vectors: bool
    include_sources: bool
    reranker: RerankConfig | Mapping[str, Any]
    database_config: DatabaseConfig | Mapping[str, Any]
    provider_options: Mapping[str, Mapping[str, Any]]
