"""``create_vector_query_tool``: check the host's options once, build the tool."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from ..batteries.vector import Encoder, FilterNode, HybridOption, VectorStore
from ._config import DatabaseConfig, ModelResolver, RerankConfig, check_models, resolve_model
from ._errors import InvalidToolConfigError
from ._filters import FIELDS_SAMPLE, compile_guard, normalize_filter_fields
from ._vector_query import DEFAULT_DESCRIPTION, FilterFields, Resolver, VectorQueryTool
from ._vq_options import (
    VectorQueryOptions,
    check_bool,
    check_collection,
    check_int,
    check_provider_options,
    coerce_tool_hybrid,
)

__all__ = ["create_vector_query_tool"]


def create_vector_query_tool(
    *,
    store: VectorStore | Resolver,
    collection: str | None = None,
    id: str | None = None,
    description: str | None = None,
    encoder: Encoder | None = None,
    enable_filter: bool = False,
    filter_fields: Sequence[str] | Mapping[str, str] | Literal["auto", "any"] | None = "auto",
    filter_fields_sample: int = FIELDS_SAMPLE,
    filter_fields_ttl: float = 60.0,
    guard_filter: Mapping[str, Any] | FilterNode | None = None,
    include_vectors: bool = False,
    include_sources: bool = True,
    reranker: RerankConfig | Mapping[str, Any] | bool | None = None,
    hybrid: HybridOption = None,
    models: ModelResolver | None = None,
    database_config: DatabaseConfig | Mapping[str, Any] | None = None,
    provider_options: Mapping[str, Mapping[str, Any]] | None = None,
    default_top_k: int = 10,
    max_top_k: int = 50,
    max_filter_depth: int = 6,
    max_filter_conditions: int = 50,
    max_query_chars: int = 2000,
) -> VectorQueryTool:
    """Create a semantic-search tool an agent can call (Mastra's ``createVectorQueryTool``).

    Every value except ``id``, ``description``, ``encoder`` and the limits is a
    default that a request context can override per call (see
    `VectorQueryRequestContext`).

    Args:
        store: A `VectorStore`, or a resolver ``fn(request_context) -> store``
            (sync or async) for multi-tenant hosts.
        collection: The collection to search (Mastra's ``indexName``).
        id: Tool id; default ``"VectorQuery lancedb {collection} Tool"``.
        description: What the model is told; default `DEFAULT_DESCRIPTION`.
        encoder: Encodes the query instead of the store's encoder (creation only).
        enable_filter: Let the model send a metadata ``filter``. A request
            context with a guard (a non-``None`` ``filter``) turns filtering on
            for that call; ``{"filter": None}`` is refused, never read as "no guard".
        filter_fields: The metadata keys the model may filter on: ``"auto"``
            (default; the keys the collection has inside the request's guard,
            read on first use and cached), a list or ``{key: description}``
            (declared), or ``"any"`` (any metadata key, unchecked). ``None``
            means ``"auto"``. A filter on another key is an ``invalid_input``
            error that lists the allowed keys.
        filter_fields_sample: Records read to learn the keys with ``"auto"``.
        filter_fields_ttl: Seconds the ``"auto"`` keys are cached (a filter on
            an unknown key re-reads them, at most every 5 seconds).
        guard_filter: A host filter ANDed with every query and never shown to
            the model (a Mongo dict over metadata keys, or a filter node).
        include_vectors: Return vectors in ``sources``.
        include_sources: Return ``sources`` (default on).
        reranker: A `RerankConfig` (or its dict form, or ``True`` for the
            defaults): over-fetch, score with an LLM judge or a local scorer,
            and keep the reranker's ``top_k`` (see `RerankConfig`).
        hybrid: Hybrid search (BM25 full-text plus vector, fused; not in
            Mastra): ``True``, an ``alpha`` (0 full-text only, 1 vector only),
            or a dict of ``alpha``, ``fusion``, ``rrf_k``, ``candidates``.
        models: Chat models by name (a mapping or a function), for a
            ``RerankConfig(model="name")``, e.g. one a request context names.
        database_config: LanceDB knobs (`DatabaseConfig` or its dict form).
        provider_options: Options forwarded to ``encode(...,
            provider_options=...)`` of ``encoder``, or of the store's encoder
            when ``encoder`` is not given; that encoder must accept them.
        default_top_k: Results when the model gives no ``top_k``.
        max_top_k: Larger requests are clamped to this (and the result says so).
        max_filter_depth: Deepest nesting a model filter may use.
        max_filter_conditions: Most conditions and groups in a model filter.
        max_query_chars: Longest ``query_text`` accepted (longer is an ``invalid_input`` error).

    Returns:
        A `VectorQueryTool`.

    Raises:
        InvalidToolConfigError: An option is invalid.
    """
    if not isinstance(store, VectorStore) and not callable(store):
        raise InvalidToolConfigError(
            "store must be a VectorStore or a resolver function of the request context.", option="store"
        )
    if collection is not None:
        check_collection(collection)
    if encoder is not None and not (
        isinstance(getattr(encoder, "name", None), str)
        and isinstance(getattr(encoder, "dimension", None), int)
        and callable(getattr(encoder, "encode", None))
    ):
        raise InvalidToolConfigError(f"encoder {encoder!r} is not an Encoder.", option="encoder")
    for option, value in (("id", id), ("description", description)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidToolConfigError(f"{option} must be a non-empty string.", option=option)
    check_bool(enable_filter, "enable_filter")
    check_bool(include_vectors, "include_vectors")
    check_bool(include_sources, "include_sources")
    max_top_k = check_int(max_top_k, "max_top_k")
    default_top_k = check_int(default_top_k, "default_top_k", maximum=max_top_k)
    check_int(max_filter_depth, "max_filter_depth", maximum=32)
    check_int(max_filter_conditions, "max_filter_conditions", maximum=1000)
    guard = compile_guard(guard_filter, option="guard_filter")
    rerank_config = RerankConfig.coerce(reranker)
    check_models(models)
    if rerank_config is not None and isinstance(rerank_config.model, str):
        resolve_model(models, rerank_config.model, "reranker.model")  # an unknown name fails now
    check_int(max_query_chars, "max_query_chars", maximum=100_000)
    check_int(filter_fields_sample, "filter_fields_sample", maximum=1_000_000)
    if (
        isinstance(filter_fields_ttl, bool)
        or not isinstance(filter_fields_ttl, int | float)
        or not 0 <= filter_fields_ttl <= 86_400
    ):
        raise InvalidToolConfigError(
            f"filter_fields_ttl must be a number of seconds in [0, 86400], got {filter_fields_ttl!r}.",
            option="filter_fields_ttl",
        )
    fields: FilterFields
    if filter_fields is None or filter_fields == "auto":
        fields = "auto"
    elif filter_fields == "any":
        fields = "any"
    else:
        fields = cast("dict[str, str]", normalize_filter_fields(filter_fields))
    # The store's own encoder takes the provider options when no encoder= is given.
    takes_options = encoder or (store.encoder if isinstance(store, VectorStore) else None)
    options = VectorQueryOptions(
        collection=collection,
        guard=guard,
        include_vectors=include_vectors,
        include_sources=include_sources,
        reranker=rerank_config,
        hybrid=coerce_tool_hybrid(hybrid),
        database_config=DatabaseConfig.coerce(database_config),
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
        filter_fields_sample=filter_fields_sample,
        filter_fields_ttl=float(filter_fields_ttl),
        models=models,
        default_top_k=default_top_k,
        max_top_k=max_top_k,
        max_filter_depth=max_filter_depth,
        max_filter_conditions=max_filter_conditions,
        max_query_chars=max_query_chars,
    )
