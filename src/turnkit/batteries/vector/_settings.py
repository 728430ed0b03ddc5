"""`RetrievalSettings`: every retrieval knob, defined, defaulted and validated once.

Every surface takes this one value: the retrieval callbacks, the vector query
tool, ``retrieve_contexts``, the MCP server and ``turnkit serve``, ``turnkit
query``, the framework adapters and the demo. A surface merges per-request
overrides into it (``settings.merge(top_k=3)`` or ``settings | {"hybrid":
False}``), as pydantic-ai merges ``ModelSettings``; none keeps its own copy of
a knob, its default or its check.

The defaults are the best retrieval measured in docs/ranking.md: hybrid
search (BM25 beside the vectors, z-score fused, alpha by query length) with
duplicate texts collapsed. Vector-only search is ``hybrid=False``. The query
builder stays the explicit low-level layer: ``near_text()`` is a vector
search whatever these settings say.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ConfigDict, Field, ValidationError, field_validator

from turnkit._errors import TurnkitError
from turnkit._validation import CheckedModel
from turnkit.batteries.vector._errors import InvalidRankingConfigError
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
from turnkit.batteries.vector.filters._where import FilterGroup
from turnkit.batteries.vector.query._ranking_specs import HybridSpec, MmrSpec, coerce_hybrid
from turnkit.batteries.vector.query._spec import MAX_LIMIT, NearText
from turnkit.batteries.vector.ranking._rerank_options import RerankOptions

if TYPE_CHECKING:
    from turnkit.batteries.vector.query._builder import QueryBuilder

__all__ = ["RetrievalSettings", "SettingsInput", "to_filter_node"]

_NODE_TYPES = (Condition, And, Or, Not, Raw)
_SELECT = ("id", "document", "metadata")
_DIVERSIFY_KEYS = ("lambda_mult", "fetch_k")
_LOCAL_SCORERS = ("auto", "encoder", "minilm")


def to_filter_node(spec: Any, *, option: str = "filter") -> FilterNode | None:
    """A filter option as a node: a node, a Mongo-style dict, a group callable, SQL, or ``(sql, bindings)``.

    Raises:
        InvalidFilterError: the filter is malformed.
        InvalidRankingConfigError: ``spec`` is none of those shapes.
    """
    if spec is None or isinstance(spec, _NODE_TYPES):
        return spec
    if isinstance(spec, str):
        return FilterGroup().where_raw(spec).node
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str):
        return FilterGroup().where_raw(spec[0], spec[1]).node
    if isinstance(spec, Mapping) or callable(spec):
        return FilterGroup().where(spec).node
    raise InvalidRankingConfigError(
        f"{option} must be a filter node, a dict, a (sql, bindings) pair or a callable, "
        f"got {type(spec).__name__}.",
        hint='Examples: condition("metadata.kind", "eq", "faq"), {"metadata.kind": "faq"}, '
        "(\"json_get_int(metadata, 'year') >= ?\", [2020]).",
        field=option,
    )


class RetrievalSettings(CheckedModel):
    """Every retrieval knob, as one frozen value (see the module docstring).

    Shorthands are accepted where a knob is a small value: ``hybrid=True`` /
    an alpha / a dict, ``diversify=True`` / a lambda / a dict, ``rerank=True``
    / a dict, ``filter=`` as a dict, SQL or a node.

    Attributes:
        top_k: Results returned, from 1 to 10,000.
        hybrid: Full-text (BM25) beside the vector search, fused: a
            `HybridSpec` (``True``, an ``alpha`` in [0, 1] where 0 is full-text
            only and 1 vector only, or a dict of ``alpha``, ``fusion``,
            ``rrf_k``, ``candidates``). On by default with turnkit's fusion;
            ``False`` or ``None`` is vector-only. A vector query has no words
            and searches by vector only unless the surface passes its text.
        collapse_duplicates: Keep one result per text (an ``.md`` page and its
            ``.html`` rendering are one text); the other copies go to the kept
            match's ``duplicates``. The search fetches three times ``top_k``,
            and four times more again while a full pool holds fewer than
            ``top_k`` texts. On by default.
        diversify: Maximal marginal relevance: a `MmrSpec` (``True``, a
            ``lambda_mult`` in [0, 1], or a dict of ``lambda_mult``, ``fetch_k``). Off by default.
        min_score: Keep matches whose dense similarity (in [0, 1]) clears it;
            under hybrid search the dense similarity, never the fused score.
        max_distance: Keep matches whose raw metric distance clears it.
        strict_thresholds: Compare ``>`` / ``<`` (Vertex's thresholds) instead of ``>=`` / ``<=``.
        rerank: Over-fetch and rerank: `RerankOptions` (``True`` or a dict of
            ``weights``, ``pool_factor``, ``max_pool``, ``on_error``); its
            ``top_k`` is replaced by this value's ``top_k``.
        rerank_model: A `turnkit.ChatModel` used as the LLM judge.
        rerank_scorer: A `RelevanceScorer`, or a local scorer by name: ``"auto"``
            (the default when no model is given: MiniLM when ``turnkit[minilm]``
            is installed and the collection is not MiniLM-encoded, else the
            store's encoder), ``"encoder"`` or ``"minilm"``.
        filter: ANDed to every search: a filter node, a Mongo-style dict, a
            group callable, a raw SQL string or ``(sql, bindings)`` pair.
        include_vectors: Return each match's vector.
        include_sources: The tools return their ``sources`` list.
        nprobes: IVF indexes: partitions to probe.
        refine_factor: Re-rank ``refine_factor × limit`` candidates exactly (IVF_PQ).
        ef: HNSW indexes: the candidate list size.
        prefilter: Filter before (``True``, the store's default) or after the vector search.

    Raises:
        InvalidRankingConfigError: a value is unusable (``E_VECTOR_RANKING_INVALID_CONFIG``;
            its ``field`` names the knob).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, arbitrary_types_allowed=True)

    top_k: int = Field(default=5, ge=1, le=MAX_LIMIT)
    hybrid: HybridSpec | None = HybridSpec()
    collapse_duplicates: bool = True
    diversify: MmrSpec | None = None
    min_score: float | None = Field(default=None, ge=0.0, le=1.0, allow_inf_nan=False)
    max_distance: float | None = Field(default=None, ge=0.0, allow_inf_nan=False)
    strict_thresholds: bool = False
    rerank: RerankOptions | None = None
    rerank_model: Any = None
    rerank_scorer: Any = None
    filter: Any = None
    include_vectors: bool = False
    include_sources: bool = True
    nprobes: int | None = Field(default=None, ge=1, le=100_000)
    refine_factor: int | None = Field(default=None, ge=1, le=1_000)
    ef: int | None = Field(default=None, ge=1, le=100_000)
    prefilter: bool | None = None

    FIELDS: ClassVar[tuple[str, ...]]

    option = "settings"

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except InvalidRankingConfigError as exc:
            # Raised by a knob's own check (hybrid's, the rerank weights'): the knob's hint, not the class's.
            field = str(exc.context.get("field", ""))
            if exc.hint == InvalidRankingConfigError.hints[exc.code] and field in _HINTS:
                exc.hint = _HINTS[field]
            raise

    # -- shorthands -----------------------------------------------------------------------------
    @field_validator("min_score", "max_distance", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        # Strict mode takes an int for a float field already; a bool is no number here.
        if isinstance(value, bool):
            raise ValueError("must be a number")
        return float(value) if isinstance(value, int) else value

    @field_validator("hybrid", mode="before")
    @classmethod
    def _hybrid(cls, value: Any) -> HybridSpec | None:
        if isinstance(value, HybridSpec) and value.text is None:
            return value
        return coerce_hybrid(value)

    @field_validator("diversify", mode="before")
    @classmethod
    def _diversify(cls, value: Any) -> MmrSpec | None:
        if value is None or value is False or isinstance(value, MmrSpec):
            return value or None
        if value is True:
            return MmrSpec()
        data = {"lambda_mult": value} if isinstance(value, int | float) else value
        if not isinstance(data, Mapping) or set(data) - set(_DIVERSIFY_KEYS):
            raise ValueError("must be true, a lambda_mult in [0, 1], or a dict of lambda_mult and fetch_k")
        return MmrSpec.checked(**data)

    @field_validator("rerank", mode="before")
    @classmethod
    def _rerank(cls, value: Any) -> RerankOptions | Mapping[str, Any] | None:
        if value is None or value is False or isinstance(value, RerankOptions):
            return value or None
        if value is True:
            return RerankOptions()
        if not isinstance(value, Mapping):
            raise ValueError(f"must be true, a dict or RerankOptions, got {type(value).__name__}")
        return value  # pydantic validates the dict into RerankOptions

    @field_validator("rerank_model")
    @classmethod
    def _model(cls, value: Any) -> Any:
        if value is not None and not callable(getattr(value, "complete", None)):
            raise ValueError(f"must be a ChatModel, got {type(value).__name__}")
        return value

    @field_validator("rerank_scorer")
    @classmethod
    def _scorer(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value not in _LOCAL_SCORERS:
                raise ValueError(
                    f"must be a RelevanceScorer or one of {', '.join(_LOCAL_SCORERS)}, got {value!r}"
                )
        elif value is not None and not callable(getattr(value, "score", None)):
            raise ValueError(f"must have .score(query, passages), got {type(value).__name__}")
        return value

    @field_validator("filter", mode="before")
    @classmethod
    def _filter(cls, value: Any) -> FilterNode | None:
        return to_filter_node(value)

    def model_post_init(self, context: Any, /) -> None:
        if self.rerank_model is not None and self.rerank_scorer is not None:
            raise InvalidRankingConfigError("Pass rerank_model or rerank_scorer, not both.", field="rerank")
        if self.rerank is not None and self.rerank.top_k != self.top_k:
            # The result's size is top_k: the rerank keeps that many, and its pool is sized from it.
            object.__setattr__(
                self, "rerank", self.rerank.model_copy(update={"top_k": min(self.top_k, 1000)})
            )

    # -- merging --------------------------------------------------------------------------------
    @classmethod
    def invalid(cls, message: str, field: str, exc: ValidationError | None = None) -> TurnkitError:
        return InvalidRankingConfigError(message, hint=_HINTS.get(field), field=field)

    @classmethod
    def of(cls, value: SettingsInput = None) -> RetrievalSettings:
        """``value`` as settings: as it is, a dict of fields over the defaults, or ``None`` (the defaults)."""
        return _DEFAULT if value is None else super().of(value)

    def merge(self, overrides: SettingsInput = None, /, **changes: Any) -> RetrievalSettings:
        """These settings with ``overrides`` on top: a dict, or the fields another value set explicitly.

        Fields the overrides do not name keep this value's; ``None`` in a dict
        sets a knob to ``None`` (``{"hybrid": None}`` is vector-only).
        """
        data = {name: getattr(self, name) for name in self.model_fields_set}
        if isinstance(overrides, RetrievalSettings):
            data.update({name: getattr(overrides, name) for name in overrides.model_fields_set})
        elif overrides is not None:
            if not isinstance(overrides, Mapping):
                raise InvalidRankingConfigError(
                    f"overrides must be RetrievalSettings or a dict, got {type(overrides).__name__}.",
                    field="settings",
                )
            data.update(overrides)
        data.update(changes)
        if "top_k" in data and "rerank" not in data and self.rerank is not None:
            data["rerank"] = self.rerank  # resized to the new top_k after validation
        return RetrievalSettings(**data)

    def __or__(self, overrides: SettingsInput) -> RetrievalSettings:
        return self.merge(overrides)

    # -- applying -------------------------------------------------------------------------------
    def pool(self) -> int:
        """Candidates the search fetches: ``top_k``, the rerank pool, more when duplicates collapse."""
        wanted = self.top_k if self.rerank is None else self.rerank.pool(self.top_k)
        if self.collapse_duplicates:
            # Each copy collapsed frees a slot; the next distinct results fill it.
            wanted = max(wanted, 3 * self.top_k)
        return min(MAX_LIMIT, wanted)

    def apply(self, query: QueryBuilder, text: str | None = None) -> QueryBuilder:
        """``query`` with these settings' search steps, where the builder did not set its own.

        Hybrid search (with ``text``, else the ``near_text`` text), diversify,
        the filter (ANDed), the index knobs, and, with no ``select``, the
        projection ``id, document, metadata`` (``vector`` too with
        ``include_vectors``). The limit is `pool`.
        """
        spec = query.spec
        words = text if text is not None else spec.near.text if isinstance(spec.near, NearText) else None
        if self.hybrid is not None and spec.hybrid is None and words and words.strip():
            hybrid = self.hybrid
            if hybrid.candidates is None:
                # Each leg fetches what it would for the uncollapsed result, so the fused order (its
                # z-scores are taken over the candidates) is the plain hybrid search's, copies aside.
                shown = self.top_k if self.rerank is None else self.rerank.pool(self.top_k)
                hybrid = replace(hybrid, candidates=hybrid.pool(min(shown, MAX_LIMIT), 0))
            query = query.with_hybrid(hybrid, words)
        if self.diversify is not None and spec.mmr is None:
            query = query.diversify(self.diversify.lambda_mult, fetch_k=self.diversify.fetch_k)
        if self.filter is not None:
            query = query.where(self.filter)
        for knob in ("nprobes", "refine_factor", "ef", "prefilter"):
            value = getattr(self, knob)
            if value is not None and getattr(spec, knob) is None:
                query = getattr(query, knob)(value)
        if spec.select is None:
            query = query.select(*_SELECT, *(("vector",) if self.include_vectors else ()))
        return query.limit(self.pool())


SettingsInput = RetrievalSettings | Mapping[str, Any] | None
"""What ``settings=`` takes: a `RetrievalSettings`, a dict of its fields, or ``None`` (the defaults)."""

RetrievalSettings.FIELDS = tuple(RetrievalSettings.model_fields)

_HINTS: dict[str, str] = {
    "top_k": f"top_k is an integer from 1 to {MAX_LIMIT}.",
    "min_score": "min_score is a similarity in [0, 1] (higher is closer).",
    "max_distance": "max_distance is a finite metric distance >= 0.",
    "hybrid": "hybrid is true, false, an alpha in [0, 1] (0 full-text only, 1 vector only) or a dict "
    "of alpha, fusion ('zscore', 'linear', 'rrf'), rrf_k, candidates; see docs/ranking.md.",
    "diversify": "diversify is true, a lambda_mult in [0, 1] or a dict of lambda_mult and fetch_k.",
    "rerank": "rerank is true or a dict of weights, pool_factor, max_pool, on_error; see docs/ranking.md.",
}


_DEFAULT = RetrievalSettings()
