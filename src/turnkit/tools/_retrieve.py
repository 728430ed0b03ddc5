"""``retrieve_contexts``: Vertex AI RAG Engine's retrieval call over a turnkit store."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any, Final, Literal

from pydantic import ValidationError

from .._aio import sync_form
from .._models import ChatModel
from .._validation import describe_validation
from ..batteries.vector import (
    FilterKeyNotFoundError,
    FilterNode,
    HybridSpec,
    InvalidRankingConfigError,
    QueryBuilder,
    RelevanceScorer,
    RetrievalSettings,
    SettingsInput,
    VectorStore,
    local_scorer,
    parse_filter_expression,
    retrieve,
)
from ._config import ModelResolver, ToolLimits, check_models, resolve_model, tool_config_errors, tool_settings
from ._errors import ToolUsageError, config_error, input_error
from ._filters import check_keys_held, compile_guard, describe_metadata_fields
from ._results import Citation, CollapsedCopy
from ._vertex_models import (
    RagChunk,
    RagContext,
    RagContexts,
    RagRetrievalConfig,
    Ranking,
    RetrieveContextsRequest,
    RetrieveContextsResponse,
    VertexRagStore,
)

__all__ = [
    "RETRIEVE_CONTEXTS_DESCRIPTION",
    "retrieve_contexts",
    "retrieve_contexts_sync",
]

RETRIEVE_CONTEXTS_DESCRIPTION: Final = (
    "Retrieves relevant contexts from the specified corpus via similarity search for the given query."
)


def parse_request(request: RetrieveContextsRequest | Mapping[str, Any]) -> RetrieveContextsRequest:
    """Validate a request dict (snake_case or camelCase), raising ``E_TOOL_INVALID_INPUT``."""
    if isinstance(request, RetrieveContextsRequest):
        return request
    if not isinstance(request, Mapping):
        raise input_error(
            f"The request must be an object, not {type(request).__name__}.",
            hint='Send {"query": {"text": "..."}}.',
        )
    try:
        return RetrieveContextsRequest.model_validate(dict(request))
    except ValidationError as exc:
        message, field = describe_validation(exc, "retrieve_contexts request")
        raise input_error(
            message,
            field=field,
            hint='Minimal request: {"query": {"text": "...", "rag_retrieval_config": {"top_k": 5}}}.',
        ) from None


def _ranker(
    ranking: Ranking, store: VectorStore, models: Any, scorers: Mapping[str, RelevanceScorer] | None
) -> tuple[ChatModel | None, RelevanceScorer | None]:
    """The ``(model, scorer)`` a request's ranking asks for; unknown names are errors."""
    if ranking.llm_ranker is not None:
        name = ranking.llm_ranker.model_name
        if not name:
            raise input_error("ranking.llm_ranker needs a model_name.", hint="Name one of the host's models.")
        return resolve_model(models, name, "ranking.llm_ranker.model_name"), None
    if ranking.rank_service is not None:
        name = ranking.rank_service.model_name
        if scorers is not None:
            if name is None or name not in scorers:
                raise ToolUsageError(
                    f"ranking.rank_service.model_name: no scorer named {name!r}.",
                    code="E_TOOL_UNKNOWN_MODEL",
                    hint=f"Known rank_service models: {', '.join(sorted(scorers))}.",
                    model=name,
                    option="ranking.rank_service.model_name",
                )
            return None, scorers[name]
        try:
            return None, local_scorer(store.encoder)
        except InvalidRankingConfigError as exc:
            raise config_error(exc.message, hint=exc.hint, option="scorers") from None
    return None, None


async def retrieve_contexts(
    request: RetrieveContextsRequest | Mapping[str, Any],
    *,
    store: VectorStore,
    collection: str | None = None,
    allowed_collections: Collection[str] | None = None,
    guard: Mapping[str, Any] | FilterNode | None = None,
    settings: SettingsInput = None,
    score: Literal["distance", "similarity"] = "distance",
    models: ModelResolver | None = None,
    scorers: Mapping[str, RelevanceScorer] | None = None,
    limits: ToolLimits | Mapping[str, Any] | None = None,
) -> RetrieveContextsResponse:
    """Retrieve contexts for a Vertex-shaped request.

    ``vertex_rag_store.rag_resources[0].rag_corpus`` names the collection; without it,
    ``collection`` is searched (the request models' docstrings say what each field does).

    The request's own options override ``settings`` exactly: ``top_k``, the
    thresholds (strict, as in Vertex), ``hybrid_search.alpha`` and
    ``ranking``. ``llm_ranker.model_name`` names one of ``models`` (an LLM
    judge); ``rank_service.model_name`` names one of ``scorers``, or, without
    ``scorers``, any name selects turnkit's offline scorer (`local_scorer`
    over the store's encoder, MiniLM when installed). A request that sets none
    of them gets ``settings``, by default turnkit's measured best: hybrid
    search with duplicate texts collapsed (Vertex searches by vector only).

    Args:
        request: A `RetrieveContextsRequest` or its dict form.
        store: The store to search.
        collection: The default collection.
        allowed_collections: When set, the only collections a request may name.
        guard: A host filter ANDed with every query (Mongo dict over metadata keys, or a filter node).
        settings: `RetrievalSettings` (or a dict of its fields): the defaults a request's options
            override; ``rerank`` gives the weights and pool of a request's ``ranking``.
        score: ``"distance"`` (Vertex's default for COSINE_DISTANCE: the raw
            metric value, lower is closer; cosine in [0, 2]) or
            ``"similarity"`` (turnkit's score in [0, 1], higher is closer; the
            fused score under hybrid search, the blended score after ranking).
            The similarity threshold always reads the dense similarity.
        models: Chat models by name for ``llm_ranker`` (see `ModelResolver`).
        scorers: Relevance scorers by name for ``rank_service``.
        limits: `ToolLimits` (or a dict); ``max_top_k`` clamps ``top_k``, and a longer ``query.text``
            than ``max_query_chars`` is refused (it would be encoded, and paid for, whole).

    Returns:
        The contexts, best first; an empty list when nothing matched.

    Raises:
        ToolUsageError: ``E_TOOL_INVALID_INPUT``: The request does not validate.
        InvalidFilterError: ``metadata_filter`` does not parse.
        ToolUsageError: ``E_TOOL_COLLECTION_NOT_ALLOWED``: The corpus is not in ``allowed_collections``.
        ToolUsageError: ``E_TOOL_OPTION_MISSING``: No corpus in the request and no default ``collection``.
        ToolUsageError: ``E_TOOL_UNKNOWN_MODEL``: ``ranking`` names a model or scorer the host did not
            provide.
        VectorStoreRuntimeError: ``E_VECTOR_RERANK_FAILED``: The judge or scorer failed (with
            ``on_error="raise"``).
    """
    check_models(models)
    if scorers is not None and (
        not isinstance(scorers, Mapping)
        or not all(isinstance(k, str) and callable(getattr(v, "score", None)) for k, v in scorers.items())
    ):
        raise config_error(
            "scorers must map rank_service model names to RelevanceScorer objects.",
            option="scorers",
        )
    base = tool_settings(settings)
    bounds = ToolLimits.of(limits)
    if score not in ("distance", "similarity"):
        raise config_error(
            f"score must be 'distance' or 'similarity', got {score!r}.",
            option="score",
        )
    req = parse_request(request)
    if len(req.query.text) > bounds.max_query_chars:
        raise input_error(
            f"query.text has {len(req.query.text)} characters; "
            f"at most {bounds.max_query_chars} are accepted.",
            hint="Send a shorter query: a question or a few keywords.",
        )
    config = req.query.rag_retrieval_config
    resource = next(iter(req.vertex_rag_store.rag_resources), None) if req.vertex_rag_store else None
    # Vertex resource names end in ".../ragCorpora/{id}"; the id is the collection.
    name = (
        resource.rag_corpus.rstrip("/").rsplit("/", 1)[-1] if resource and resource.rag_corpus else collection
    )
    if name is None:
        raise ToolUsageError(
            "No corpus to search.",
            code="E_TOOL_OPTION_MISSING",
            hint="Name one in vertex_rag_store.rag_resources[0].rag_corpus.",
            option="collection",
        )
    if allowed_collections is not None and name not in allowed_collections:
        raise ToolUsageError(
            f"Corpus {name!r} is not available.",
            code="E_TOOL_COLLECTION_NOT_ALLOWED",
            hint=f"Available corpora: {', '.join(sorted(allowed_collections))}.",
            collection=name,
        )

    query: QueryBuilder = store(name).near_text(req.query.text)
    guard = compile_guard(guard, option="guard")
    if guard is not None:
        query = query.where(guard)
    asked: FilterNode | None = None
    flt = config.filter if config is not None else None
    if flt is not None and flt.metadata_filter and flt.metadata_filter.strip():
        asked = parse_filter_expression(flt.metadata_filter, field_prefix="metadata.")
        query = query.where(asked)
    if resource is not None and resource.rag_file_ids:
        file_ids = list(resource.rag_file_ids)
        query = query.where(
            lambda g: g.where_in("metadata.source_uri", file_ids).or_where_in(
                "metadata.source_display_name", file_ids
            )
        )
    overrides = _request_settings(config, req.vertex_rag_store, base, store, models, scorers)
    if overrides.get("top_k", base.top_k) > bounds.max_top_k:
        overrides["top_k"] = bounds.max_top_k
    with tool_config_errors("settings"):
        steps = base.merge(overrides)
    try:
        matches = (await retrieve(query, steps)).matches
    except FilterKeyNotFoundError:
        if guard is None:
            raise
        matches = []  # the store looked at every record; its hint may name keys outside the guard
    if guard is not None and asked is not None and not matches:
        # Inside a guard an empty answer is explained by the guard's records only, the same way
        # whether a key is held by no record or by records outside the guard.
        check_keys_held(asked, await describe_metadata_fields(store, name, guard=guard), guard)

    contexts = [
        RagContext(
            source_uri=cited.source_uri,
            source_display_name=cited.source_display_name,
            text=cited.text,
            score=match.distance if score == "distance" else match.score,
            chunk=RagChunk(text=cited.text, page_span=cited.page_span),
            duplicates=CollapsedCopy.list_of(match),
        )
        for match, cited in ((m, Citation.of(m)) for m in matches)
    ]
    return RetrieveContextsResponse(contexts=RagContexts(contexts=contexts))


def _request_settings(
    config: RagRetrievalConfig | None,
    rag_store: VertexRagStore | None,
    base: RetrievalSettings,
    store: VectorStore,
    models: Any,
    scorers: Mapping[str, RelevanceScorer] | None,
) -> dict[str, Any]:
    """The settings a Vertex request sets explicitly; every other knob keeps ``base``'s."""
    overrides: dict[str, Any] = {}
    flt = config.filter if config is not None else None
    distance_max = flt.vector_distance_threshold if flt is not None else None
    legacy = rag_store.vector_distance_threshold if rag_store is not None else None
    if legacy is not None:
        if distance_max is not None or (flt is not None and flt.vector_similarity_threshold is not None):
            raise input_error(
                "Set one vector threshold: vertex_rag_store.vector_distance_threshold is deprecated.",
                hint="Use query.rag_retrieval_config.filter.vector_distance_threshold only.",
            )
        distance_max = legacy
    similarity_min = flt.vector_similarity_threshold if flt is not None else None
    if distance_max is not None or similarity_min is not None:
        # Vertex's thresholds are strict ("smaller than", "larger than").
        overrides.update(min_score=similarity_min, max_distance=distance_max, strict_thresholds=True)
    if config is None:
        return overrides
    if config.top_k is not None:
        overrides["top_k"] = config.top_k
    if config.hybrid_search is not None:
        spec = base.hybrid or HybridSpec()
        alpha = config.hybrid_search.alpha
        overrides["hybrid"] = spec if alpha is None else replace(spec, alpha=alpha)
    if config.ranking is not None:
        model, scorer = _ranker(config.ranking, store, models, scorers)
        overrides["rerank"] = base.rerank or True
        if model is not None or scorer is not None:
            overrides.update(rerank_model=model, rerank_scorer=scorer)
    return overrides


retrieve_contexts_sync = sync_form(retrieve_contexts)
