"""The tools' options: one `RetrievalSettings` for retrieval, `ToolLimits` for what a model may ask.

Every retrieval knob is defined, defaulted and validated by `RetrievalSettings`; the tools add the
limits on a model's request, host models by name, and the seeds' per-request keys as overrides.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, cast

from pydantic import ConfigDict, Field, ValidationError

from .._errors import TurnkitError
from .._validation import CheckedModel
from ..batteries.vector import InvalidRankingConfigError, RetrievalSettings, SettingsInput
from ._errors import ToolUsageError, config_error
from ._filters import FIELDS_SAMPLE

if TYPE_CHECKING:
    from .._models import ChatModel
    from ..batteries.vector import FilterNode, HybridOption, VectorStore

__all__ = [
    "ModelResolver",
    "StoreResolver",
    "ToolLimits",
    "VectorQueryRequestContext",
    "check_models",
    "request_overrides",
    "resolve_model",
    "tool_config_errors",
    "tool_settings",
]


@contextmanager
def tool_config_errors(option: str) -> Iterator[None]:
    """Report a settings error as the tools' ``E_INVALID_TOOL_CONFIG``.

    The option is ``{option}.{field}``, the knob `RetrievalSettings` named.
    """
    try:
        yield
    except InvalidRankingConfigError as exc:
        field = exc.context.get("field")
        name = f"{option}.{field}" if field and field != "settings" else option
        raise config_error(exc.message, hint=exc.hint, option=name) from None


def tool_settings(value: SettingsInput, option: str = "settings") -> RetrievalSettings:
    """``value`` as `RetrievalSettings` (``None``: turnkit's defaults), or ``E_INVALID_TOOL_CONFIG``."""
    with tool_config_errors(option):
        return RetrievalSettings.of(value)


class ToolLimits(CheckedModel):
    """What a model's request may ask of a tool, and how the automatic filter keys are read.

    A frozen value; ``limits=`` also takes a dict of its fields.

    Attributes:
        max_top_k: A larger ``top_k`` is clamped to it (and the result says so).
        max_filter_depth: Deepest nesting of a model filter.
        max_filter_conditions: Most conditions and groups in a model filter.
        max_query_chars: Longest query text accepted; a longer one is an ``invalid_input`` error.
        fields_sample: Records read to learn the filter keys with ``filter_fields="auto"``.
        fields_ttl: Seconds the automatic keys are cached (a filter on an unknown
            key re-reads them, at most every 5 seconds).

    Raises:
        ToolUsageError: ``E_INVALID_TOOL_CONFIG``: A value is out of range (``option`` is ``limits.<field>``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    max_top_k: int = Field(default=50, ge=1, le=10_000)
    max_filter_depth: int = Field(default=6, ge=1, le=32)
    max_filter_conditions: int = Field(default=50, ge=1, le=1000)
    max_query_chars: int = Field(default=2000, ge=1, le=100_000)
    fields_sample: int = Field(default=FIELDS_SAMPLE, ge=1, le=1_000_000)
    fields_ttl: float = Field(default=60.0, ge=0, le=86_400, allow_inf_nan=False)

    option = "limits"

    @classmethod
    def invalid(cls, message: str, field: str, exc: ValidationError | None = None) -> TurnkitError:
        return config_error(message, option=field if exc is None else f"limits.{field}")


ModelResolver: TypeAlias = "Mapping[str, ChatModel] | Callable[[str], ChatModel | None]"
"""Host models by name, for ``llm_ranker.model_name`` and a request's ``reranker={"model": "name"}``:
a mapping, or a function returning ``None`` for an unknown name."""


def resolve_model(models: Any, name: str, option: str) -> ChatModel:
    """The `ChatModel` called ``name``, or `ToolUsageError` (``E_TOOL_UNKNOWN_MODEL``)."""
    found = models.get(name) if isinstance(models, Mapping) else models(name) if callable(models) else None
    if found is None:
        known = sorted(models) if isinstance(models, Mapping) else []
        hint = (
            f"Known models: {', '.join(known)}."
            if known
            else "The host must pass models= (a mapping of names to ChatModel objects)."
        )
        raise ToolUsageError(
            f"{option}: no model named {name!r}.",
            code="E_TOOL_UNKNOWN_MODEL",
            hint=hint,
            model=name,
            option=option,
        )
    if not callable(getattr(found, "complete", None)):
        raise config_error(
            f"The model resolved for {name!r} is a {type(found).__name__}, not a ChatModel.",
            option=option,
        )
    return cast("ChatModel", found)


def check_models(models: Any, option: str = "models") -> None:
    """Validate a `ModelResolver` argument (``None`` allowed)."""
    if models is not None and not isinstance(models, Mapping) and not callable(models):
        raise config_error(
            f"{option} must be a mapping of names to ChatModel objects or a function, "
            f"got {type(models).__name__}.",
            option=option,
        )


_RERANKER_KEYS = ("model", "scorer", "weights", "top_k", "pool_factor", "max_pool", "on_error")
_DATABASE_KEYS = ("nprobes", "refine_factor", "ef", "min_score", "prefilter")
_PLAIN_KEYS = ("top_k", "hybrid", "include_vectors", "include_sources")


def _reranker(value: Any, models: Any) -> tuple[dict[str, Any], int | None]:
    """Mastra's ``reranker`` (see `VectorQueryRequestContext`) as overrides, and its ``top_k`` cap."""
    off = {"rerank_model": None, "rerank_scorer": None}
    if value is None or value is False:
        return {"rerank": None, **off}, None
    if value is True:
        return {"rerank": True, **off}, None
    if not isinstance(value, Mapping):
        raise config_error(
            f"reranker must be true, false or a dict, got {type(value).__name__}.",
            option="reranker",
        )
    data = dict(value)
    options = data.pop("options", None)
    if isinstance(options, Mapping):  # Mastra's shape: {"model", "options": {"weights", "topK"}}
        data.update(options)
    if "topK" in data:
        data["top_k"] = data.pop("topK")
    unknown = sorted(map(str, set(data) - set(_RERANKER_KEYS)))
    if unknown:
        raise config_error(
            f"reranker: unknown keys {unknown}; use {', '.join(_RERANKER_KEYS)}.",
            option="reranker",
        )
    model, scorer, cap = data.pop("model", None), data.pop("scorer", None), data.pop("top_k", None)
    if isinstance(model, str):
        model = resolve_model(models, model, "reranker.model")
    if cap is not None:
        # Mastra's reranker keeps its own topK: the call gets at most that many.
        with tool_config_errors("reranker"):
            cap = RetrievalSettings(top_k=cap).top_k
    return {"rerank": data, "rerank_model": model, "rerank_scorer": scorer}, cap


def _database_config(value: Any) -> dict[str, Any]:
    """Mastra's ``database_config`` (also under a ``"lancedb"`` key) as overrides of the index knobs."""
    if not isinstance(value, Mapping):
        raise config_error(
            f"database_config must be a dict, got {type(value).__name__}.",
            option="database_config",
        )
    data = dict(value)
    if set(data) == {"lancedb"} and isinstance(data["lancedb"], Mapping):
        data = dict(data["lancedb"])
    unknown = sorted(map(str, set(data) - set(_DATABASE_KEYS)))
    if unknown:
        raise config_error(
            f"database_config: unknown keys {unknown}.",
            hint="LanceDB takes nprobes, refine_factor, ef, min_score and prefilter.",
            option="database_config",
        )
    return data


def request_overrides(context: Mapping[str, Any], models: Any) -> tuple[dict[str, Any], int | None]:
    """The settings a request context overrides (only the keys present), and a Mastra reranker's cap."""
    overrides: dict[str, Any] = {}
    given = context.get("settings")
    if isinstance(given, RetrievalSettings):
        overrides.update({name: getattr(given, name) for name in given.model_fields_set})
    elif isinstance(given, Mapping):
        overrides.update(given)
    elif given is not None:
        raise config_error(
            f"request_context.settings must be RetrievalSettings or a dict, got {type(given).__name__}.",
            option="request_context.settings",
        )
    overrides.update({key: context[key] for key in _PLAIN_KEYS if key in context})
    if "database_config" in context:
        overrides.update(_database_config(context["database_config"]))
    cap = None
    if "reranker" in context:
        rerank, cap = _reranker(context["reranker"], models)
        overrides.update(rerank)
    return overrides, cap


StoreResolver: TypeAlias = "Callable[[Mapping[str, Any]], VectorStore | Awaitable[VectorStore]]"
"""A function of the request context that returns the store to search (sync or async)."""


class VectorQueryRequestContext(TypedDict, total=False):
    """Per-request values a host passes to ``tool.execute(..., request_context=...)``.

    Each key overrides the tool's settings for one request (merged with
    `RetrievalSettings.merge`: a key left out keeps the tool's value). Any other
    key (a tenant id, say) is passed through untouched to a store resolver.

    Attributes:
        collection: The collection to search.
        filter: A guard filter, ANDed with the creation-time guard and the
            model's filter; never shown to the model (Mongo dict over metadata
            keys, or a filter node). It turns model filtering on for the call.
            ``None`` or an empty filter is refused, never read as "no guard":
            leave the key out instead.
        settings: Any `RetrievalSettings` fields (a dict or a value).
        top_k: Forces the number of results (still clamped to ``max_top_k``).
        include_vectors: Return each match's vector in ``sources``.
        include_sources: Return ``sources`` at all.
        reranker: Mastra's reranker: ``True``, ``False`` (off), or a dict of
            ``model`` (a `ChatModel` or a name in ``models``), ``scorer``,
            ``weights``, ``top_k`` (caps the results), ``pool_factor``,
            ``max_pool``, ``on_error``; Mastra's ``{"model", "options":
            {"weights", "topK"}}`` works too.
        hybrid: Hybrid search for this call (``True``, an ``alpha``, a dict, or ``False``: vector only).
        database_config: LanceDB knobs ``nprobes``, ``refine_factor``, ``ef``,
            ``min_score``, ``prefilter`` (also under a ``"lancedb"`` key).
        provider_options: Options forwarded to the encoder.
    """

    collection: str
    filter: Mapping[str, Any] | FilterNode
    settings: RetrievalSettings | Mapping[str, Any]
    top_k: int
    include_vectors: bool
    include_sources: bool
    reranker: Mapping[str, Any] | bool | None
    hybrid: HybridOption
    database_config: Mapping[str, Any]
    provider_options: Mapping[str, Mapping[str, Any]]
