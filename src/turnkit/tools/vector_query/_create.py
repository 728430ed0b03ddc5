"""``create_vector_query_tool``: check the host's options once, build the tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from ...batteries.vector import Encoder, FilterNode, SettingsInput, VectorStore
from .._config import ModelResolver, StoreResolver, ToolLimits, check_models, tool_settings
from .._errors import config_error
from .._filters import compile_guard, normalize_filter_fields
from ._options import VectorQueryOptions, check_collection, check_provider_options
from ._tool import DEFAULT_DESCRIPTION, FilterFields, VectorQueryTool

__all__ = ["create_vector_query_tool"]


def create_vector_query_tool(
    *,
    store: VectorStore | StoreResolver,
    collection: str | None = None,
    id: str | None = None,
    description: str | None = None,
    encoder: Encoder | None = None,
    settings: SettingsInput = None,
    enable_filter: bool = False,
    filter_fields: Sequence[str] | Mapping[str, str] | Literal["auto", "any"] | None = "auto",
    guard: Mapping[str, Any] | FilterNode | None = None,
    models: ModelResolver | None = None,
    provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    limits: ToolLimits | Mapping[str, Any] | None = None,
) -> VectorQueryTool:
    """Create a semantic-search tool an agent can call (Mastra's ``createVectorQueryTool``).

    Every retrieval knob comes from ``settings``, and with none set the tool
    runs turnkit's measured default: hybrid search with duplicate texts
    collapsed, 5 results. A request context merges its overrides into them per
    call (see `VectorQueryRequestContext`).

    Args:
        store: A `VectorStore`, or a resolver ``fn(request_context) -> store``
            (sync or async) for multi-tenant hosts.
        collection: The collection to search (Mastra's ``indexName``).
        id: Tool id; default ``"VectorQuery lancedb {collection} Tool"``.
        description: What the model is told; default `DEFAULT_DESCRIPTION`.
        encoder: Encodes the query instead of the store's encoder (creation only).
        settings: `RetrievalSettings` (or a dict of its fields); its ``top_k`` is the results when
            the model gives none. ``None``: turnkit's defaults.
        enable_filter: Let the model send a metadata ``filter``. A request
            context with a guard (a non-``None`` ``filter``) turns filtering on
            for that call; ``{"filter": None}`` is refused, never read as "no guard".
        filter_fields: The metadata keys the model may filter on: ``"auto"``
            (default; the keys the collection has inside the request's guard,
            read on first use and cached), a list or ``{key: description}``
            (declared), or ``"any"`` (any metadata key, unchecked). ``None``
            means ``"auto"``. A filter on another key is an ``invalid_input``
            error that lists the allowed keys.
        guard: A host filter ANDed with every query and never shown to
            the model (a Mongo dict over metadata keys, or a filter node).
        models: Chat models by name (a mapping or a function), for a request
            context's ``reranker={"model": "name"}``.
        provider_options: Options forwarded to ``encode(...,
            provider_options=...)`` of ``encoder``, or of the store's encoder
            when ``encoder`` is not given; that encoder must accept them.
        limits: `ToolLimits` (or a dict of its fields).

    Raises:
        ToolUsageError: ``E_INVALID_TOOL_CONFIG``: An option is invalid.
    """
    if not isinstance(store, VectorStore) and not callable(store):
        raise config_error(
            "store must be a VectorStore or a resolver function of the request context.",
            option="store",
        )
    if collection is not None:
        check_collection(collection)
    if encoder is not None and not (
        isinstance(getattr(encoder, "name", None), str)
        and isinstance(getattr(encoder, "dimension", None), int)
        and callable(getattr(encoder, "encode", None))
    ):
        raise config_error(f"encoder {encoder!r} is not an Encoder.", option="encoder")
    for option, value in (("id", id), ("description", description)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise config_error(f"{option} must be a non-empty string.", option=option)
    if not isinstance(enable_filter, bool):
        raise config_error(
            f"enable_filter must be true or false, got {enable_filter!r}.",
            option="enable_filter",
        )
    checked = ToolLimits.of(limits)
    values = tool_settings(settings)
    if values.top_k > checked.max_top_k:
        raise config_error(
            f"settings.top_k ({values.top_k}) is above limits.max_top_k ({checked.max_top_k}).",
            option="settings.top_k",
        )
    guard = compile_guard(guard, option="guard")
    check_models(models)
    fields = cast("FilterFields", "auto" if filter_fields is None else filter_fields)
    if fields not in ("auto", "any"):
        fields = cast("dict[str, str]", normalize_filter_fields(filter_fields))
    # The store's own encoder takes the provider options when no encoder= is given.
    takes_options = encoder or (store.encoder if isinstance(store, VectorStore) else None)
    options = VectorQueryOptions(
        collection=collection,
        settings=values,
        guard=guard,
        provider_options=check_provider_options(provider_options, takes_options) or None,
    )
    return VectorQueryTool(
        id=id or f"VectorQuery lancedb {collection or 'dynamic'} Tool",
        description=description or DEFAULT_DESCRIPTION,
        store=store,
        encoder=encoder,
        options=options,
        enable_filter=enable_filter,
        filter_fields=fields,
        models=models,
        limits=checked,
    )
