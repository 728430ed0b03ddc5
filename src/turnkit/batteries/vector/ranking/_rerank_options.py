"""What a rerank is asked for: the blend weights, the options, and a reranked match."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from turnkit._checks import is_int, is_number
from turnkit._validation import describe_validation
from turnkit.batteries.vector._errors import InvalidRankingConfigError, InvalidRankingValue
from turnkit.batteries.vector._matches import VectorMatch


def check_min_score(min_score: Any) -> float:
    """``min_score`` as a float, or `InvalidRankingConfigError` when it is not a number in [0, 1]."""
    if not is_number(min_score, 0.0, 1.0):
        raise InvalidRankingConfigError(f"min_score must be a number in [0, 1], got {min_score!r}.")
    return float(min_score)


def _bad(detail: str, **context: Any) -> InvalidRankingConfigError:
    return InvalidRankingConfigError(detail, **context)


def _int_in(value: Any, name: str, low: int, high: int) -> int:
    if not is_int(value, low, high):
        raise _bad(f"{name} must be an integer in [{low}, {high}], got {value!r}.", field=name)
    return value


class RankingOptions(BaseModel):
    """A frozen, strictly validated ranking value whose bad input raises `InvalidRankingConfigError`."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            message, field = describe_validation(exc, type(self).__name__)
            detail = message.removeprefix(f"Invalid {type(self).__name__}: ").removesuffix(".")
            raise InvalidRankingValue(message, field=field, detail=detail) from None


_Weight = Annotated[float, Field(ge=0.0, le=1.0, allow_inf_nan=False)]


class RerankWeights(RankingOptions):
    """The blend of the three signals: all three are required and must sum to 1.

    There are no per-field defaults on purpose: ``{semantic: 0.5, vector: 0.5}``
    must not silently keep a default ``position``. Use `DEFAULT_RERANK_WEIGHTS` for
    0.4 / 0.4 / 0.2.

    Attributes:
        semantic: Weight of the scorer's relevance.
        vector: Weight of the retrieval score.
        position: Weight of the retrieval rank (``1 - i/n``).

    Raises:
        InvalidRankingConfigError: a weight is missing, outside [0, 1], or they do not sum to 1.
    """

    semantic: _Weight
    vector: _Weight
    position: _Weight

    @model_validator(mode="before")
    @classmethod
    def _all_three(cls, data: Any) -> Any:
        missing = [k for k in cls.model_fields if k not in data] if isinstance(data, dict) else []
        if missing:
            raise ValueError(
                f"rerank weights need exactly semantic, vector and position; missing {missing}. "
                "Weights are never merged with the defaults"
            )
        return data

    @model_validator(mode="after")
    def _sum_to_one(self) -> RerankWeights:
        total = self.semantic + self.vector + self.position
        # A tolerance, not float equality: 0.7 + 0.2 + 0.1 is 0.9999999999999999.
        if not math.isclose(total, 1.0, rel_tol=0.0, abs_tol=1e-9):
            raise ValueError(
                f"the weights sum to {total:g} (semantic {self.semantic:g} + vector {self.vector:g} "
                f"+ position {self.position:g}); they must sum to 1 and are never merged with the defaults"
            )
        return self


DEFAULT_RERANK_WEIGHTS = RerankWeights(semantic=0.4, vector=0.4, position=0.2)
"""Semantic 0.4, vector 0.4, position 0.2 (Mastra's defaults)."""


class RerankOptions(RankingOptions):
    """How `rerank` and `rerank_search` work.

    Attributes:
        weights: The blend (default `DEFAULT_RERANK_WEIGHTS`); a dict of all three weights is taken.
        top_k: Matches kept after reranking.
        pool_factor: `rerank_search` fetches ``top_k × pool_factor`` candidates
            (at most ``max_pool``) before reordering; reranking only what the
            top-k search returned could never promote anything.
        max_pool: Upper bound of the candidate pool.
        on_error: When the scorer or model raises: ``"raise"`` a
            `VectorStoreRuntimeError` (``E_VECTOR_RERANK_FAILED``), or ``"fallback"`` to the retrieval order.

    Raises:
        InvalidRankingConfigError: an option is out of range.
    """

    weights: RerankWeights = DEFAULT_RERANK_WEIGHTS
    top_k: int = Field(default=3, ge=1, le=1000)
    pool_factor: int = Field(default=4, ge=1, le=100)
    max_pool: int = Field(default=100, ge=1, le=10_000)
    on_error: Literal["raise", "fallback"] = "raise"

    def pool(self, top_k: int | None = None) -> int:
        """Candidates to fetch for ``top_k`` (default: this config's) results."""
        k = self.top_k if top_k is None else top_k
        return max(k, min(self.max_pool, k * self.pool_factor))


@dataclass(frozen=True, slots=True)
class RerankedMatch:
    """One reranked match, with the parts of its score.

    Attributes:
        match: The match as retrieved (its ``score`` is the retrieval score).
        score: The blended score in [0, 1], higher is better.
        semantic: The scorer's absolute relevance in [0, 1], exactly as the
            scorer (or judge) gave it; ``None`` when it gave no usable value
            (the normalized retrieval score stood in).
        vector: The retrieval score min-max normalized within the pool, in
            [0, 1] (1 for every match when all scores are equal).
        position: ``1 - i/n`` for retrieval rank ``i`` of ``n``.
    """

    match: VectorMatch
    score: float
    semantic: float | None
    vector: float
    position: float

    def as_match(self) -> VectorMatch:
        """The match with ``score`` replaced by the blended score."""
        return replace(self.match, score=self.score)
