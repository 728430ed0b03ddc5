"""Options shared by the tools: reranking, LanceDB search knobs, the request context."""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypedDict, cast

from ..batteries.vector import (
    DEFAULT_RERANK_WEIGHTS,
    InvalidRankingConfigError,
    RelevanceScorer,
    RerankOptions,
    RerankWeights,
)
from ._errors import InvalidToolConfigError, UnknownModelError

if TYPE_CHECKING:
    from .._models import ChatModel
    from ..batteries.vector import FilterNode, HybridOption, VectorStore

__all__ = [
    "DatabaseConfig",
    "ModelResolver",
    "RerankConfig",
    "RerankWeights",
    "StoreResolver",
    "VectorQueryRequestContext",
    "check_models",
    "resolve_model",
]


def _bad(option: str, detail: str, hint: str | None = None) -> InvalidToolConfigError:
    return InvalidToolConfigError(f"{option}: {detail}", hint=hint, option=option)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_LOCAL_SCORERS = ("auto", "encoder", "minilm")
_RERANK_KEYS = ("model", "scorer", "weights", "top_k", "pool_factor", "max_pool", "on_error")


@dataclass(frozen=True, slots=True, kw_only=True)
class RerankConfig:
    """Reranking for the vector query tool (Mastra's ``reranker``), over the battery's reranker.

    The tool over-fetches ``top_k × pool_factor`` candidates (at most
    ``max_pool``), scores them, and keeps the best ``top_k`` by
    ``semantic·w_semantic + vector·w_vector + position·w_position`` (see
    docs/ranking.md). The semantic score comes from, in this order:

    - ``model``: a `turnkit.ChatModel` used as a batched LLM judge, or the
      name of one in the tool's ``models`` mapping;
    - ``scorer``: a `RelevanceScorer`, or ``"encoder"`` / ``"minilm"``;
    - otherwise ``"auto"``: MiniLM when ``turnkit[minilm]`` is installed and
      the collection is not MiniLM-encoded, else the collection's own encoder.

    Attributes:
        model: A `ChatModel`, or a model name the tool's ``models`` resolve.
        scorer: A `RelevanceScorer` or the name of a local scorer.
        weights: The battery's `RerankWeights` (all three, summing to 1) or a dict of them.
        top_k: Results kept after reranking (also capped by the call's ``top_k``).
        pool_factor: Over-fetch factor.
        max_pool: Most candidates scored.
        on_error: ``"raise"`` (the call reports ``E_VECTOR_RERANK_FAILED``) or
            ``"fallback"`` (keep the retrieval order, with a note).
    """

    model: ChatModel | str | None = None
    scorer: RelevanceScorer | Literal["auto", "encoder", "minilm"] | None = None
    weights: RerankWeights = DEFAULT_RERANK_WEIGHTS
    top_k: int = 3
    pool_factor: int = 4
    max_pool: int = 100
    on_error: Literal["raise", "fallback"] = "raise"

    def __post_init__(self) -> None:
        model, scorer = self.model, self.scorer
        if isinstance(model, str):
            if not model.strip():
                raise _bad("reranker.model", "must be a ChatModel or a non-empty model name, got ''.")
        elif model is not None and not callable(getattr(model, "complete", None)):
            raise _bad("reranker.model", f"must be a ChatModel or a model name, got {type(model).__name__}.")
        if isinstance(scorer, str):
            if scorer not in _LOCAL_SCORERS:
                raise _bad("reranker.scorer", f"must be one of {', '.join(_LOCAL_SCORERS)}, got {scorer!r}.")
        elif scorer is not None and not callable(getattr(scorer, "score", None)):
            raise _bad("reranker.scorer", f"must have .score(query, passages), got {type(scorer).__name__}.")
        if model is not None and scorer is not None:
            raise _bad("reranker", "set model or scorer, not both.")
        try:
            options = self.options()
        except InvalidRankingConfigError as exc:
            field = exc.context.get("field", "weights")
            raise _bad(f"reranker.{field}", exc.message, exc.hint) from None
        object.__setattr__(self, "weights", options.weights)

    def options(self, top_k: int | None = None) -> RerankOptions:
        """The battery's `RerankOptions` for this config (``top_k`` overrides the config's)."""
        return RerankOptions(
            weights=self.weights,
            top_k=self.top_k if top_k is None else top_k,
            pool_factor=self.pool_factor,
            max_pool=self.max_pool,
            on_error=self.on_error,
        )

    @classmethod
    def coerce(cls, value: RerankConfig | Mapping[str, Any] | bool | None) -> RerankConfig | None:
        """Accept a `RerankConfig`, ``True`` (the defaults), a dict of its fields, or ``None``/``False``.

        Mastra's shape works too: ``{"model": ..., "options": {"weights": ..., "topK": 5}}``.
        """
        if value is None or value is False or isinstance(value, RerankConfig):
            return value or None
        if value is True:
            return cls()
        if not isinstance(value, Mapping):
            raise _bad("reranker", f"must be a RerankConfig or a dict, got {type(value).__name__}.")
        data = dict(value)
        options = data.pop("options", None)
        if isinstance(options, Mapping):  # Mastra's shape: {"model", "options": {"weights", "topK"}}
            data.update(options)
        if "topK" in data:
            data["top_k"] = data.pop("topK")
        unknown = set(data) - set(_RERANK_KEYS)
        if unknown:
            keys = ", ".join(_RERANK_KEYS)
            raise _bad("reranker", f"unknown keys {sorted(map(str, unknown))}; use {keys}.")
        return cls(**data)


ModelResolver: TypeAlias = "Mapping[str, ChatModel] | Callable[[str], ChatModel | None]"
"""Host models by name, for ``llm_ranker.model_name`` and ``RerankConfig(model="name")``:
a mapping, or a function returning ``None`` for an unknown name."""


def resolve_model(models: Any, name: str, option: str) -> ChatModel:
    """The `ChatModel` called ``name``, or `UnknownModelError`."""
    found: Any = None
    if isinstance(models, Mapping):
        found = models.get(name)
    elif callable(models):
        found = models(name)
    if found is None:
        known = sorted(models) if isinstance(models, Mapping) else []
        hint = (
            f"Known models: {', '.join(known)}."
            if known
            else "The host must pass models= (a mapping of names to ChatModel objects)."
        )
        raise UnknownModelError(f"{option}: no model named {name!r}.", hint=hint, model=name, option=option)
    if not callable(getattr(found, "complete", None)):
        raise InvalidToolConfigError(
            f"The model resolved for {name!r} is a {type(found).__name__}, not a ChatModel.", option=option
        )
    return cast("ChatModel", found)


def check_models(models: Any, option: str = "models") -> Any:
    """Validate a `ModelResolver` argument (``None`` allowed)."""
    if models is not None and not isinstance(models, Mapping) and not callable(models):
        raise InvalidToolConfigError(
            f"{option} must be a mapping of names to ChatModel objects or a function, "
            f"got {type(models).__name__}.",
            option=option,
        )
    return models


@dataclass(frozen=True, slots=True, kw_only=True)
class DatabaseConfig:
    """LanceDB search knobs (Mastra's ``database_config``, LanceDB's own options).

    Every field defaults to ``None``: the store's defaults apply (prefilter on,
    index-aware ``ef``/``refine_factor``).

    Attributes:
        nprobes: IVF partitions to probe.
        refine_factor: Re-rank ``refine_factor × top_k`` candidates exactly (IVF_PQ).
        ef: HNSW candidate-list size.
        min_score: Drop matches whose vector similarity (in [0, 1]) is lower.
            Under hybrid search it reads the dense similarity, not the fused
            ``score`` the result reports, so a kept match can show a lower score.
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
            keys, or a filter node). It turns model filtering on for the call.
            ``None`` or an empty filter is refused, never read as "no guard":
            leave the key out instead.
        top_k: Forces the number of results (still clamped to ``max_top_k``).
        include_vectors: Return each match's vector in ``sources``.
        include_sources: Return ``sources`` at all.
        reranker: A `RerankConfig` (or its dict form, or ``False`` to turn it off).
        hybrid: Hybrid search for this call (``True``, an ``alpha``, a dict, or ``False``).
        database_config: A `DatabaseConfig` (or its dict form); replaces the
            creation-time one.
        provider_options: Options forwarded to the encoder.
    """

    collection: str
    filter: Mapping[str, Any] | FilterNode
    top_k: int
    include_vectors: bool
    include_sources: bool
    reranker: RerankConfig | Mapping[str, Any] | bool | None
    hybrid: HybridOption
    database_config: DatabaseConfig | Mapping[str, Any]
    provider_options: Mapping[str, Mapping[str, Any]]
