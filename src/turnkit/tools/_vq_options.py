"""The vector query tool's host options: one frozen value, replaced per request by the request context."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..batteries.vector import (
    Encoder,
    FilterNode,
    HybridOption,
    HybridSpec,
    InvalidRankingConfigError,
    QueryBuilder,
    and_,
)
from ._config import DatabaseConfig, RerankConfig
from ._errors import InvalidToolConfigError, ToolOptionMissingError
from ._filters import compile_guard

__all__ = ["OptionsEncoder", "VectorQueryOptions", "check_bool", "check_int", "check_provider_options"]

log = logging.getLogger("turnkit.tools")


def check_bool(value: Any, option: str) -> bool:
    """``value`` when it is a bool, else `InvalidToolConfigError` naming ``option``."""
    if not isinstance(value, bool):
        raise InvalidToolConfigError(f"{option} must be true or false, got {value!r}.", option=option)
    return value


def check_int(value: Any, option: str, *, minimum: int = 1, maximum: int = 10_000) -> int:
    """``value`` when it is an int in range, else `InvalidToolConfigError` naming ``option``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InvalidToolConfigError(
            f"{option} must be an integer in [{minimum}, {maximum}], got {value!r}.", option=option
        )
    return value


def check_collection(value: Any) -> str:
    """A collection name option: a non-empty string."""
    if not isinstance(value, str) or not value:
        raise InvalidToolConfigError(
            f"collection must be a non-empty string, got {value!r}.", option="collection"
        )
    return value


def accepts_provider_options(encoder: Encoder) -> bool:
    """Whether ``encoder.encode`` takes ``provider_options=``."""
    try:
        params = inspect.signature(encoder.encode).parameters
    except (TypeError, ValueError):
        return False
    return "provider_options" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def check_provider_options(value: Any, encoder: Encoder | None = None) -> dict[str, dict[str, Any]]:
    """``{provider: {option: value}}``; with ``encoder``, also check that it can take them."""
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Mapping) for k, v in value.items()
    ):
        raise InvalidToolConfigError(
            "provider_options must map a provider name to a dict of options.", option="provider_options"
        )
    if value and encoder is not None and not accepts_provider_options(encoder):
        raise InvalidToolConfigError(
            f"provider_options were given but the encoder {encoder.name!r} cannot take them.",
            hint="Use an encoder whose encode(texts, *, kind, provider_options) accepts options "
            "(the store's own, or encoder=...), or configure the options on the encoder itself.",
            option="provider_options",
        )
    return {k: dict(v) for k, v in value.items()}


class OptionsEncoder:
    """Forwards ``provider_options`` to an encoder whose ``encode`` accepts them."""

    def __init__(self, inner: Encoder, options: Mapping[str, Mapping[str, Any]]) -> None:
        self.name = inner.name
        self.dimension = inner.dimension
        self._inner = inner
        self._options = options

    def encode(self, texts: Sequence[str], *, kind: Literal["query", "document"]) -> Any:
        """Encode ``texts`` with the options."""
        return self._inner.encode(texts, kind=kind, provider_options=self._options)  # type: ignore[call-arg]


def coerce_tool_hybrid(value: HybridOption) -> HybridSpec | None:
    """A hybrid option as the tool reports it: an `InvalidToolConfigError` on ``hybrid``."""
    try:
        return HybridSpec.from_option(value, option="hybrid")
    except InvalidRankingConfigError as exc:
        raise InvalidToolConfigError(exc.message, hint=exc.hint, option="hybrid") from None


def request_guard(value: Any, tool_id: str) -> FilterNode:
    """A request context's guard: never ``None`` (which would mean "no guard"), never shown back."""
    option = "request_context.filter"
    if value is None:
        raise InvalidToolConfigError(
            f"{option} is None; a guard must be a filter.",
            hint="Pass the guard (e.g. {'tenant': 'acme'}), or leave the key out for no guard.",
            option=option,
        )
    try:
        guard = compile_guard(value, option=option)
    except InvalidToolConfigError as exc:
        # The message can quote the guard's values (a tenant id): log it, do not show it.
        log.warning("vector query tool %r: %s", tool_id, exc.message)
        raise InvalidToolConfigError(
            f"{option} (the host's guard) is invalid; the details are in the host's log.", option=option
        ) from None
    assert guard is not None
    return guard


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorQueryOptions:
    """The host's side of one vector query: the tool's defaults, or those replaced by a request context.

    Attributes:
        collection: The collection to search.
        guard: Every guard in force (the tool's AND the request's), never shown to the model.
        request_guard: The request context's own guard; it turns model filtering on.
        top_k: A ``top_k`` forced by the host (``None``: the model's, or the default).
        include_vectors: Return vectors in ``sources``.
        include_sources: Return ``sources``.
        reranker: Rerank the results.
        hybrid: Hybrid search.
        database_config: LanceDB knobs and ``min_score``.
        provider_options: Options forwarded to the encoder.
    """

    collection: str | None = None
    guard: FilterNode | None = None
    request_guard: FilterNode | None = None
    top_k: int | None = None
    include_vectors: bool = False
    include_sources: bool = True
    reranker: RerankConfig | None = None
    hybrid: HybridSpec | None = None
    database_config: DatabaseConfig = DatabaseConfig()
    provider_options: Mapping[str, Mapping[str, Any]] | None = None

    def for_request(self, context: Mapping[str, Any], tool_id: str) -> VectorQueryOptions:
        """These options with the request context's values: ``replace(defaults, **overrides)``."""
        overrides = {
            name: coerce(value)
            for name, value in context.items()
            if (coerce := _OVERRIDES.get(name)) is not None
        }
        if "filter" in context:
            guard = request_guard(context["filter"], tool_id)
            overrides["request_guard"] = guard
            overrides["guard"] = guard if self.guard is None else and_(self.guard, guard)
        return replace(self, **overrides)

    def searched(self) -> str:
        """The collection, or `ToolOptionMissingError` when neither the tool nor the request named one."""
        if self.collection is None:
            raise ToolOptionMissingError(
                "No collection to search: set collection= when creating the tool or "
                "'collection' in the request context.",
                option="collection",
            )
        return self.collection

    def apply_database_config(self, query: QueryBuilder) -> QueryBuilder:
        """``query`` with the LanceDB knobs set (``min_score`` is the pipeline's, not the query's)."""
        db = self.database_config
        if db.nprobes is not None:
            query = query.nprobes(db.nprobes)
        if db.refine_factor is not None:
            query = query.refine_factor(db.refine_factor)
        if db.ef is not None:
            query = query.ef(db.ef)
        if db.prefilter is not None:
            query = query.prefilter(db.prefilter)
        return query


# The request-context keys that replace an option, each with its check.
_OVERRIDES: dict[str, Callable[[Any], Any]] = {
    "collection": check_collection,
    "top_k": lambda v: check_int(v, "request_context.top_k"),
    "include_vectors": lambda v: check_bool(v, "include_vectors"),
    "include_sources": lambda v: check_bool(v, "include_sources"),
    "reranker": RerankConfig.coerce,
    "hybrid": coerce_tool_hybrid,
    "database_config": DatabaseConfig.coerce,
    "provider_options": check_provider_options,
}
