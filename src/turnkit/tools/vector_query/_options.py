"""The vector query tool's host options: one frozen value, merged per request with the request context."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from ..._checks import expect_text
from ...batteries.vector import Encoder, FilterNode, RetrievalSettings, and_
from .._config import request_overrides, tool_config_errors
from .._errors import ToolUsageError, config_error
from .._filters import compile_guard

__all__ = ["OptionsEncoder", "VectorQueryOptions", "check_collection", "check_provider_options"]

log = logging.getLogger("turnkit.tools")


def check_collection(value: Any) -> str:
    """A collection name option: a non-empty string."""
    return expect_text(value, "collection", config_error, option="collection")


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
        raise config_error(
            "provider_options must map a provider name to a dict of options.",
            option="provider_options",
        )
    if value and encoder is not None and not accepts_provider_options(encoder):
        raise config_error(
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


def request_guard(value: Any, tool_id: str) -> FilterNode:
    """A request context's guard: never ``None`` (which would mean "no guard"), never shown back."""
    option = "request_context.filter"
    if value is None:
        raise config_error(
            f"{option} is None; a guard must be a filter.",
            hint="Pass the guard (e.g. {'tenant': 'acme'}), or leave the key out for no guard.",
            option=option,
        )
    try:
        return cast("FilterNode", compile_guard(value, option=option))  # not None: value is not None
    except ToolUsageError as exc:
        if exc.code != "E_INVALID_TOOL_CONFIG":
            raise
        # The message can quote the guard's values (a tenant id): log it, do not show it.
        log.warning("vector query tool %r: %s", tool_id, exc.message)
        raise config_error(
            f"{option} (the host's guard) is invalid; the details are in the host's log.",
            option=option,
        ) from None


@dataclass(frozen=True, slots=True, kw_only=True)
class VectorQueryOptions:
    """The host's side of one vector query: the tool's, or those a request context changed.

    Every retrieval knob is in ``settings``; the rest is the tool's own.

    Attributes:
        collection: The collection to search.
        settings: The retrieval settings (top_k, hybrid, rerank, thresholds, index knobs…).
        guard: Every guard in force (the tool's AND the request's), never shown to the model.
        request_guard: The request context's own guard; it turns model filtering on.
        top_k_forced: The request context set ``top_k``: it wins over the model's.
        rerank_cap: A Mastra reranker's ``top_k``: the call gets at most that many results.
        provider_options: Options forwarded to the encoder.
    """

    collection: str | None = None
    settings: RetrievalSettings = field(default_factory=RetrievalSettings)
    guard: FilterNode | None = None
    request_guard: FilterNode | None = None
    top_k_forced: bool = False
    rerank_cap: int | None = None
    provider_options: Mapping[str, Mapping[str, Any]] | None = None

    def for_request(self, context: Mapping[str, Any], tool_id: str, models: Any = None) -> VectorQueryOptions:
        """These options with the request context's values merged in (`RetrievalSettings.merge`)."""
        if not context:
            return self
        overrides, cap = request_overrides(context, models)
        changes: dict[str, Any] = {}
        if overrides:
            with tool_config_errors("request_context"):
                changes["settings"] = self.settings.merge(overrides)
            changes["top_k_forced"] = "top_k" in overrides
        if "reranker" in context:
            changes["rerank_cap"] = cap
        if "collection" in context:
            changes["collection"] = check_collection(context["collection"])
        if "provider_options" in context:
            changes["provider_options"] = check_provider_options(context["provider_options"]) or None
        if "filter" in context:
            guard = request_guard(context["filter"], tool_id)
            changes["request_guard"] = guard
            changes["guard"] = guard if self.guard is None else and_(self.guard, guard)
        return replace(self, **changes)

    def searched(self) -> str:
        """The collection, or ``E_TOOL_OPTION_MISSING`` when neither the tool nor the request named one."""
        if self.collection is None:
            raise ToolUsageError(
                "No collection to search: set collection= when creating the tool or "
                "'collection' in the request context.",
                code="E_TOOL_OPTION_MISSING",
                option="collection",
            )
        return self.collection
