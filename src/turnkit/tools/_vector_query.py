"""``create_vector_query_tool``: a Mastra-shaped semantic-search tool over a turnkit store."""

from __future__ import annotations

import inspect
import json
import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

import numpy as np

from .._aio import run_sync
from .._errors import RuntimeFailure, TurnkitError
from ..batteries.vector import (
    Encoder,
    FilterNode,
    HybridOption,
    HybridSpec,
    InvalidFilterError,
    InvalidRankingConfigError,
    RelevanceScorer,
    RerankFailedError,
    UnknownFieldError,
    UnsupportedFilterOperatorError,
    VectorMatch,
    VectorStore,
    coerce_hybrid,
    encode_texts,
    local_scorer,
    rerank,
)
from ..batteries.vector._builder import QueryBuilder
from ..batteries.vector._hybrid import apply_hybrid
from ._config import DatabaseConfig, ModelResolver, RerankConfig, check_models, resolve_model
from ._errors import (
    InvalidToolConfigError,
    InvalidToolInputError,
    StoreResolverError,
    ToolFailedError,
    ToolOptionMissingError,
)
from ._filters import (
    FILTER_OPERATORS,
    compile_guard,
    compile_model_filter,
    describe_metadata_fields,
    normalize_filter_fields,
)
from ._results import ErrorKind, PageSpan, ToolErrorInfo, VectorQueryResult, VectorQuerySource

__all__ = ["DEFAULT_DESCRIPTION", "VectorQueryTool", "create_vector_query_tool"]

log = logging.getLogger("turnkit.tools")

DEFAULT_DESCRIPTION: Final = "Access the knowledge base to find information needed to answer user questions"
"""The seed's default tool description."""

_INPUT_KEYS: Final = frozenset({"query_text", "top_k", "filter"})
_OPENAI_NAME: Final = re.compile(r"[^A-Za-z0-9_-]+")
_MODEL_INPUT_ERRORS = (
    InvalidToolInputError,
    InvalidFilterError,
    UnknownFieldError,
    UnsupportedFilterOperatorError,
)

Resolver = Callable[[Mapping[str, Any]], "VectorStore | Awaitable[VectorStore]"]


class _Failure(Exception):
    """Carries a structured error out of the execute pipeline."""

    def __init__(self, info: ToolErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


def _fail(exc: TurnkitError, kind: ErrorKind | None = None) -> _Failure:
    return _Failure(ToolErrorInfo.from_error(exc, kind))


@dataclass(frozen=True, slots=True)
class _Request:
    query_text: str
    top_k: int | None
    filter: Any


class _OptionsEncoder:
    """Forwards ``provider_options`` to an encoder whose ``encode`` accepts them."""

    def __init__(self, inner: Encoder, options: Mapping[str, Mapping[str, Any]]) -> None:
        self.name = inner.name
        self.dimension = inner.dimension
        self._inner = inner
        self._options = options

    def encode(self, texts: Sequence[str], *, kind: Literal["query", "document"]) -> Any:
        return self._inner.encode(texts, kind=kind, provider_options=self._options)  # type: ignore[call-arg]


def _accepts_provider_options(encoder: Encoder) -> bool:
    try:
        params = inspect.signature(encoder.encode).parameters
    except (TypeError, ValueError):
        return False
    return "provider_options" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _check_provider_options(value: Any, encoder: Encoder | None) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, Mapping) for k, v in value.items()
    ):
        raise InvalidToolConfigError(
            "provider_options must map a provider name to a dict of options.", option="provider_options"
        )
    if value and (encoder is None or not _accepts_provider_options(encoder)):
        raise InvalidToolConfigError(
            "provider_options were given but the encoder cannot take them.",
            hint="Pass encoder=... whose encode(texts, *, kind, provider_options) accepts options, "
            "or configure the options on the encoder itself.",
            option="provider_options",
        )
    return {k: dict(v) for k, v in value.items()}


def _check_bool(value: Any, option: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidToolConfigError(f"{option} must be true or false, got {value!r}.", option=option)
    return value


def _check_int(value: Any, option: str, *, minimum: int = 1, maximum: int = 10_000) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InvalidToolConfigError(
            f"{option} must be an integer in [{minimum}, {maximum}], got {value!r}.", option=option
        )
    return value


def _page_span(value: Any) -> PageSpan | None:
    if isinstance(value, Mapping):
        first, last = value.get("first_page"), value.get("last_page")
        if isinstance(first, int) and isinstance(last, int) and not isinstance(first, bool):
            return PageSpan(first_page=first, last_page=last)
    return None


def _text_of(match: VectorMatch) -> str:
    if match.document:
        return match.document
    # Records written without a document may keep their text in metadata (a common ingest habit).
    text = (match.metadata or {}).get("text")
    return text if isinstance(text, str) else ""


def _label(source: VectorQuerySource) -> str:
    parts: list[str] = []
    if source.source_display_name:
        parts.append(source.source_display_name)
    if source.page_span is not None:
        span = source.page_span
        pages = (
            str(span.first_page)
            if span.first_page == span.last_page
            else f"{span.first_page}-{span.last_page}"
        )
        parts.append(f"p. {pages}")
    return f" ({', '.join(parts)})" if parts else ""


class VectorQueryTool:
    """A semantic-search tool for agents; create it with `create_vector_query_tool`.

    Attributes:
        id: The tool id (Mastra's default: ``VectorQuery {store} {collection} Tool``).
        name: ``id`` made safe as a function name for tool-calling APIs.
        description: What the model is told the tool does.
    """

    def __init__(
        self,
        *,
        id: str,
        description: str,
        store: VectorStore | Resolver,
        collection: str | None,
        encoder: Encoder | None,
        enable_filter: bool,
        filter_fields: dict[str, str] | None,
        guard: FilterNode | None,
        include_vectors: bool,
        include_sources: bool,
        reranker: RerankConfig | None,
        hybrid: HybridSpec | None,
        models: ModelResolver | None,
        database_config: DatabaseConfig,
        provider_options: dict[str, dict[str, Any]],
        default_top_k: int,
        max_top_k: int,
        max_filter_depth: int,
        max_filter_conditions: int,
    ) -> None:
        self.id = id
        self.name = _OPENAI_NAME.sub("_", id).strip("_")[:64] or "vector_query"
        self.description = description
        self._store = store
        self._collection = collection
        self._encoder = encoder
        self._enable_filter = enable_filter
        self._filter_fields = filter_fields
        self._guard = guard
        self._include_vectors = include_vectors
        self._include_sources = include_sources
        self._reranker = reranker
        self._hybrid = hybrid
        self._models = models
        self._database_config = database_config
        self._provider_options = provider_options
        self._default_top_k = default_top_k
        self._max_top_k = max_top_k
        self._max_filter_depth = max_filter_depth
        self._max_filter_conditions = max_filter_conditions
        self._checked_encoders: set[tuple[int, str]] = set()

    def __repr__(self) -> str:
        return f"<VectorQueryTool id={self.id!r} collection={self._collection!r}>"

    # -- schema ---------------------------------------------------------------------------
    @property
    def filter_enabled(self) -> bool:
        """Whether the model may send a ``filter`` (the schema then shows it)."""
        return self._enable_filter

    @property
    def max_top_k(self) -> int:
        """The largest ``top_k`` a call can get; larger requests are clamped."""
        return self._max_top_k

    def _filter_description(self) -> str:
        if self._filter_fields is None:
            keys = "Any metadata key (letters, digits, '_' and '-'; nested keys joined with '.')."
        else:
            lines = [f"- {k}: {d}" if d else f"- {k}" for k, d in sorted(self._filter_fields.items())]
            keys = "Keys you may filter on:\n" + "\n".join(lines)
        return (
            "Optional metadata filter, a JSON object (not a string) in MongoDB style. "
            "Keys of one object are ANDed; a value is a literal (equality), a list (any of) or an "
            f"object of operators. Operators: {' '.join(FILTER_OPERATORS)}. "
            'Example: {"kind": "faq", "year": {"$gte": 2020}}. ' + keys
        )

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments a model sends (``filter`` only when filtering is on)."""
        properties: dict[str, Any] = {
            "query_text": {
                "type": "string",
                "minLength": 1,
                "description": "What to search for: the user's question or topic in plain words, "
                "not wrapped in quotes.",
            },
            "top_k": {
                "type": "integer",
                "minimum": 1,
                "maximum": self._max_top_k,
                "default": self._default_top_k,
                "description": f"How many chunks to return (default {self._default_top_k}, at most "
                f"{self._max_top_k}). More gives broader context, fewer gives precision.",
            },
        }
        if self._enable_filter:
            properties["filter"] = {"type": "object", "description": self._filter_description()}
        return {
            "type": "object",
            "properties": properties,
            "required": ["query_text"],
            "additionalProperties": False,
        }

    def to_openai_tool(self, *, name: str | None = None) -> dict[str, Any]:
        """The tool as an OpenAI chat-completions function definition.

        Args:
            name: Function name to use instead of `name`.

        Returns:
            ``{"type": "function", "function": {"name", "description", "parameters"}}``.
        """
        return {
            "type": "function",
            "function": {
                "name": name or self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }

    # -- execution ------------------------------------------------------------------------
    async def execute(
        self, input: Mapping[str, Any] | str, *, request_context: Mapping[str, Any] | None = None
    ) -> VectorQueryResult:
        """Run one tool call. Never raises for bad input or a failing backend.

        Args:
            input: The model's arguments: a dict, or the JSON text of one (as
                chat-completions APIs deliver it).
            request_context: Per-request host values (see `VectorQueryRequestContext`);
                other keys are passed to a store resolver.

        Returns:
            A `VectorQueryResult` whose ``status`` is ``ok``, ``no_results`` or ``error``.
        """
        try:
            return await self._execute(input, request_context or {})
        except _Failure as failure:
            return VectorQueryResult(status="error", error=failure.info)
        except TurnkitError as exc:
            log.info("vector query tool %r: %s", self.id, exc)
            return VectorQueryResult(status="error", error=ToolErrorInfo.from_error(exc))
        except Exception:
            # Details may hold SQL with the guard's values: log them, do not show them.
            log.exception("vector query tool %r failed unexpectedly", self.id)
            error = ToolFailedError("The knowledge-base search failed unexpectedly.")
            return VectorQueryResult(status="error", error=ToolErrorInfo.from_error(error, "failed"))

    def execute_sync(
        self, input: Mapping[str, Any] | str, *, request_context: Mapping[str, Any] | None = None
    ) -> VectorQueryResult:
        """Sync form of `execute` (works inside a running event loop too)."""
        return run_sync(self.execute(input, request_context=request_context))

    def _parse_input(self, raw: Mapping[str, Any] | str) -> _Request:
        if isinstance(raw, str | bytes):
            try:
                raw = json.loads(raw or "{}")
            except (ValueError, RecursionError):
                raise InvalidToolInputError(
                    "The tool arguments are not valid JSON.",
                    hint='Send a JSON object such as {"query_text": "refund policy", "top_k": 5}.',
                ) from None
        if not isinstance(raw, Mapping):
            raise InvalidToolInputError(
                f"The tool arguments must be a JSON object, not {type(raw).__name__}.",
                hint='Send {"query_text": "..."}.',
            )
        unknown = sorted(str(k) for k in raw if k not in _INPUT_KEYS)
        if unknown:
            allowed = "query_text, top_k" + (", filter" if self._enable_filter else "")
            raise InvalidToolInputError(f"Unknown arguments {unknown}.", hint=f"The arguments are {allowed}.")
        text = raw.get("query_text")
        if not isinstance(text, str) or not text.strip():
            raise InvalidToolInputError(
                "`query_text` must be a non-empty string.",
                hint="Put the user's question or topic in query_text.",
                field="query_text",
            )
        top_k = raw.get("top_k")
        if top_k is not None:
            if isinstance(top_k, float) and math.isfinite(top_k) and top_k.is_integer():
                top_k = int(top_k)
            if isinstance(top_k, bool) or not isinstance(top_k, int):
                raise InvalidToolInputError(
                    f"`top_k` must be an integer, not {top_k!r}.",
                    hint=f"Use a whole number from 1 to {self._max_top_k}, or leave it out.",
                    field="top_k",
                )
        return _Request(text.strip(), top_k, raw.get("filter"))

    def _top_k(self, requested: int | None, context: Mapping[str, Any], notes: list[str]) -> int:
        if "top_k" in context:
            value = _check_int(context["top_k"], "request_context.top_k")
        else:
            value = self._default_top_k if requested is None else requested
        if value > self._max_top_k:
            notes.append(f"top_k {value} is above the maximum of {self._max_top_k}; used {self._max_top_k}.")
            return self._max_top_k
        if value < 1:
            notes.append(f"top_k {value} is below 1; used 1.")
            return 1
        return value

    async def _resolve_store(self, context: Mapping[str, Any]) -> VectorStore:
        if isinstance(self._store, VectorStore):
            return self._store
        try:
            result = self._store(context)
            if inspect.isawaitable(result):
                result = await result
        except TurnkitError as exc:
            raise StoreResolverError(f"The store resolver failed: {exc.message}", hint=exc.hint) from exc
        except Exception as exc:
            log.warning("store resolver of tool %r raised", self.id, exc_info=True)
            raise StoreResolverError(f"The store resolver failed: {type(exc).__name__}: {exc}") from exc
        if not isinstance(result, VectorStore):
            raise StoreResolverError(
                f"The store resolver returned {type(result).__name__}, not a VectorStore.",
                hint="Return the result of create_vector_store(...) for this request.",
            )
        return result

    async def _encode(
        self, store: VectorStore, collection: str, text: str, options: Mapping[str, Any]
    ) -> Any:
        assert self._encoder is not None
        key = (id(store), collection)
        if key not in self._checked_encoders:
            # Once per store and collection: a query encoded by another model finds nonsense.
            info = await store.collection_info(collection)
            if info.encoder and info.encoder != self._encoder.name:
                raise InvalidToolConfigError(
                    f"Collection {collection!r} was built with encoder {info.encoder!r}; "
                    f"this tool encodes with {self._encoder.name!r}.",
                    option="encoder",
                )
            self._checked_encoders.add(key)
        encoder: Encoder = _OptionsEncoder(self._encoder, options) if options else self._encoder
        vectors = await encode_texts(encoder, [text], "query")
        return np.asarray(vectors[0])

    async def _execute(self, raw: Mapping[str, Any] | str, context: Mapping[str, Any]) -> VectorQueryResult:
        if not isinstance(context, Mapping):
            raise _fail(
                InvalidToolConfigError("request_context must be a mapping.", option="request_context")
            )
        notes: list[str] = []
        # 1. The model's arguments: every mistake here is the model's to correct.
        try:
            request = self._parse_input(raw)
        except _MODEL_INPUT_ERRORS as exc:
            raise _fail(exc, "invalid_input") from None
        # 2. The host's values: creation-time defaults, overridden by the request context.
        try:
            options = self._options(context)
        except TurnkitError as exc:
            raise _fail(exc, "configuration") from None
        collection, guard, include_vectors, include_sources, reranker, hybrid, db, provider_options = options
        filtering = self._enable_filter or "filter" in context
        try:
            if request.filter is not None and not filtering:
                raise InvalidToolInputError(
                    "This tool does not take a filter.",
                    hint="Call it again with query_text (and top_k) only.",
                    field="filter",
                )
            model_filter = compile_model_filter(
                request.filter,
                allowed_fields=self._filter_fields,
                max_depth=self._max_filter_depth,
                max_nodes=self._max_filter_conditions,
            )
        except _MODEL_INPUT_ERRORS as exc:
            raise _fail(exc, "invalid_input") from None
        try:
            top_k = self._top_k(request.top_k, context, notes)
        except TurnkitError as exc:
            raise _fail(exc, "configuration") from None
        limit = top_k
        judge: tuple[Any, RelevanceScorer | None] | None = None
        if reranker is not None:
            limit = min(top_k, reranker.top_k)
        # 3. The search. Errors here are the host's (configuration) or the backend's (failed).
        try:
            store = await self._resolve_store(context)
            if reranker is not None:
                judge = self._judge(reranker, store)
        except TurnkitError as exc:
            raise _fail(exc, "configuration") from None
        query: QueryBuilder = store(collection)
        if self._encoder is not None:
            query = query.near_vector(
                await self._encode(store, collection, request.query_text, provider_options)
            )
        else:
            query = query.near_text(request.query_text)
        query = apply_hybrid(query, hybrid, request.query_text)
        # The guard wraps the model's filter as a separate AND branch: the model's
        # $or / $not can only narrow inside its own branch, never widen the guard.
        if guard is not None:
            query = query.where(guard)
        if model_filter is not None:
            query = query.where(model_filter)
        fields = ["id", "document", "metadata"] + (["vector"] if include_vectors else [])
        rank_opts = reranker.options(limit) if reranker is not None else None
        fetch = rank_opts.pool() if rank_opts is not None else limit
        query = _apply_database_config(query.select(*fields).limit(fetch), db)
        try:
            matches = await query.search()
        except RuntimeFailure as exc:
            # Backend messages can quote the compiled SQL, guard values included: log, do not show.
            log.warning("vector query tool %r: search failed: %s", self.id, exc)
            hidden = ToolFailedError("The knowledge-base search failed in the database.")
            raise _fail(hidden, "failed") from None
        if rank_opts is not None and judge is not None and matches:
            model, scorer = judge
            try:
                ranked = await rerank(request.query_text, matches, rank_opts, model=model, scorer=scorer)
            except RerankFailedError as exc:
                log.warning("vector query tool %r: rerank failed: %s", self.id, exc)
                raise _fail(exc, "failed") from None
            name = (
                scorer.name
                if scorer is not None
                else "the retrieval scores only"
                if model is None
                else f"llm:{getattr(model, 'model', type(model).__name__)}"
            )
            notes.append(f"Reranked {len(matches)} candidates with {name}; kept {len(ranked)}.")
            if rank_opts.weights.semantic > 0 and all(r.semantic is None for r in ranked):
                notes.append("The reranker's scorer gave no usable scores; the retrieval order was kept.")
            matches = [r.as_match() for r in ranked]
        return self._result(matches, top_k, notes, include_vectors, include_sources)

    def _options(
        self, context: Mapping[str, Any]
    ) -> tuple[
        str,
        FilterNode | None,
        bool,
        bool,
        RerankConfig | None,
        HybridSpec | None,
        DatabaseConfig,
        dict[str, dict[str, Any]],
    ]:
        collection = context.get("collection", self._collection)
        if collection is None:
            raise ToolOptionMissingError(
                "No collection to search: set collection= when creating the tool or "
                "'collection' in the request context.",
                option="collection",
            )
        if not isinstance(collection, str) or not collection:
            raise InvalidToolConfigError(
                f"collection must be a non-empty string, got {collection!r}.", option="collection"
            )
        guard = self._guard
        if "filter" in context:
            extra = compile_guard(context["filter"], option="request_context.filter")
            if extra is not None:
                guard = extra if guard is None else _and(guard, extra)
        include_vectors = _check_bool(
            context.get("include_vectors", self._include_vectors), "include_vectors"
        )
        include_sources = _check_bool(
            context.get("include_sources", self._include_sources), "include_sources"
        )
        reranker = RerankConfig.coerce(context["reranker"]) if "reranker" in context else self._reranker
        hybrid = _hybrid(context["hybrid"]) if "hybrid" in context else self._hybrid
        db = (
            DatabaseConfig.coerce(context["database_config"])
            if "database_config" in context
            else (self._database_config)
        )
        provider_options = self._provider_options
        if "provider_options" in context:
            provider_options = _check_provider_options(context["provider_options"], self._encoder)
        return collection, guard, include_vectors, include_sources, reranker, hybrid, db, provider_options

    def _judge(self, reranker: RerankConfig, store: VectorStore) -> tuple[Any, RelevanceScorer | None]:
        """The reranker's ``(model, scorer)``: exactly one is set when the semantic weight counts."""
        model, scorer = reranker.model, reranker.scorer
        if isinstance(model, str):
            return resolve_model(self._models, model, "reranker.model"), None
        if model is not None:
            return model, None
        if scorer is not None and not isinstance(scorer, str):
            return None, scorer
        if reranker.weights.semantic == 0:
            return None, None
        kind = scorer if isinstance(scorer, str) else "auto"
        try:
            encoder = self._encoder or store.encoder
            return None, local_scorer(encoder, cast("Any", kind))
        except InvalidRankingConfigError as exc:
            raise InvalidToolConfigError(exc.message, hint=exc.hint, option="reranker.scorer") from None

    def _result(
        self,
        matches: list[VectorMatch],
        top_k: int,
        notes: list[str],
        include_vectors: bool,
        include_sources: bool,
    ) -> VectorQueryResult:
        sources: list[VectorQuerySource] = []
        for match in matches:
            meta = match.metadata or {}
            uri, name = meta.get("source_uri"), meta.get("source_display_name")
            sources.append(
                VectorQuerySource(
                    id=match.id,
                    score=match.score,
                    distance=match.distance,
                    document=_text_of(match) or None,
                    metadata=match.metadata,
                    vector=match.vector if include_vectors else None,
                    source_uri=uri if isinstance(uri, str) else None,
                    source_display_name=name if isinstance(name, str) else None,
                    page_span=_page_span(meta.get("page_span")),
                )
            )
        if not sources:
            notes.append("The search ran and no chunk matched; try other words or a looser filter.")
            return VectorQueryResult(status="no_results", top_k=top_k, notes=notes)
        context = "\n\n".join(
            f"[{i}]{_label(s)} {s.document or ''}".rstrip() for i, s in enumerate(sources, 1)
        )
        return VectorQueryResult(
            status="ok",
            relevant_context=context,
            sources=sources if include_sources else [],
            top_k=top_k,
            notes=notes,
        )


def _hybrid(value: HybridOption) -> HybridSpec | None:
    try:
        return coerce_hybrid(value, option="hybrid")
    except InvalidRankingConfigError as exc:
        raise InvalidToolConfigError(exc.message, hint=exc.hint, option="hybrid") from None


def _and(a: FilterNode, b: FilterNode) -> FilterNode:
    from ..batteries.vector import and_

    return and_(a, b)


def _apply_database_config(query: QueryBuilder, db: DatabaseConfig) -> QueryBuilder:
    if db.nprobes is not None:
        query = query.nprobes(db.nprobes)
    if db.refine_factor is not None:
        query = query.refine_factor(db.refine_factor)
    if db.ef is not None:
        query = query.ef(db.ef)
    if db.min_score is not None:
        query = query.min_score(db.min_score)
    if db.prefilter is not None:
        query = query.prefilter(db.prefilter)
    return query


def create_vector_query_tool(
    *,
    store: VectorStore | Resolver,
    collection: str | None = None,
    id: str | None = None,
    description: str | None = None,
    encoder: Encoder | None = None,
    enable_filter: bool = False,
    filter_fields: Sequence[str] | Mapping[str, str] | Literal["auto"] | None = None,
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
            context with a ``filter`` turns filtering on for that call.
        filter_fields: The metadata keys the model may filter on, as a list or
            ``{key: description}``; ``"auto"`` reads them from the collection
            now; ``None`` allows any metadata key. Shown in the schema.
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
        provider_options: Options forwarded to ``encoder.encode(...,
            provider_options=...)``; the encoder must accept them.
        default_top_k: Results when the model gives no ``top_k``.
        max_top_k: Larger requests are clamped to this (and the result says so).
        max_filter_depth: Deepest nesting a model filter may use.
        max_filter_conditions: Most conditions and groups in a model filter.

    Returns:
        A `VectorQueryTool`.

    Raises:
        InvalidToolConfigError: An option is invalid.
    """
    if not isinstance(store, VectorStore) and not callable(store):
        raise InvalidToolConfigError(
            "store must be a VectorStore or a resolver function of the request context.", option="store"
        )
    if collection is not None and (not isinstance(collection, str) or not collection):
        raise InvalidToolConfigError(
            f"collection must be a non-empty string, got {collection!r}.", option="collection"
        )
    if encoder is not None and not (
        isinstance(getattr(encoder, "name", None), str)
        and isinstance(getattr(encoder, "dimension", None), int)
        and callable(getattr(encoder, "encode", None))
    ):
        raise InvalidToolConfigError(f"encoder {encoder!r} is not an Encoder.", option="encoder")
    for option, value in (("id", id), ("description", description)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise InvalidToolConfigError(f"{option} must be a non-empty string.", option=option)
    _check_bool(enable_filter, "enable_filter")
    _check_bool(include_vectors, "include_vectors")
    _check_bool(include_sources, "include_sources")
    max_top_k = _check_int(max_top_k, "max_top_k")
    default_top_k = _check_int(default_top_k, "default_top_k", maximum=max_top_k)
    _check_int(max_filter_depth, "max_filter_depth", maximum=32)
    _check_int(max_filter_conditions, "max_filter_conditions", maximum=1000)
    guard = compile_guard(guard_filter, option="guard_filter")
    rerank_config = RerankConfig.coerce(reranker)
    check_models(models)
    if rerank_config is not None and isinstance(rerank_config.model, str):
        resolve_model(models, rerank_config.model, "reranker.model")  # an unknown name fails now
    if filter_fields == "auto":
        if not isinstance(store, VectorStore) or collection is None:
            raise InvalidToolConfigError(
                'filter_fields="auto" needs a store instance and a collection.', option="filter_fields"
            )
        fields: dict[str, str] | None = run_sync(describe_metadata_fields(store, collection, guard=guard))
    else:
        fields = normalize_filter_fields(filter_fields)
    return VectorQueryTool(
        id=id or f"VectorQuery lancedb {collection or 'dynamic'} Tool",
        description=description or DEFAULT_DESCRIPTION,
        store=store,
        collection=collection,
        encoder=encoder,
        enable_filter=enable_filter,
        filter_fields=fields,
        guard=guard,
        include_vectors=include_vectors,
        include_sources=include_sources,
        reranker=rerank_config,
        hybrid=_hybrid(hybrid),
        models=models,
        database_config=DatabaseConfig.coerce(database_config),
        provider_options=_check_provider_options(provider_options, encoder),
        default_top_k=default_top_k,
        max_top_k=max_top_k,
        max_filter_depth=max_filter_depth,
        max_filter_conditions=max_filter_conditions,
    )
