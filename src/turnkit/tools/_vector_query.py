"""``create_vector_query_tool``: a Mastra-shaped semantic-search tool over a turnkit store."""

from __future__ import annotations

import inspect
import json
import logging
import math
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeAlias, cast

import numpy as np

from .._aio import run_sync
from .._errors import RuntimeFailure, TurnkitError
from ..batteries.vector import (
    CollectionNotFoundError,
    Encoder,
    FilterNode,
    HybridOption,
    HybridSpec,
    InvalidFilterError,
    InvalidRankingConfigError,
    QueryBuilder,
    RelevanceScorer,
    RerankFailedError,
    RetrieveOptions,
    UnknownFieldError,
    UnsupportedFilterOperatorError,
    VectorMatch,
    VectorStore,
    coerce_hybrid,
    encode_texts,
    local_scorer,
    retrieve,
)
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
    check_filter_fields,
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
_VALUES_SEEN: Final = "; values seen:"
# An unknown key re-reads the collection's keys at most this often (a model cannot force a scan per call).
_MISS_REFRESH_SECONDS: Final = 5.0
FilterFields: TypeAlias = "dict[str, str] | Literal['auto', 'any']"
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


def _hidden(exc: TurnkitError, tool_id: str, kind: ErrorKind | None = None) -> _Failure:
    """Keep the stable code, log the details: host errors can quote URIs, keys, SQL or guard values."""
    log.warning("vector query tool %r: %s: %s", tool_id, exc.code, exc.message, exc_info=exc)
    if kind is None:
        kind = "failed" if isinstance(exc, RuntimeFailure) else "configuration"
    message = (
        "The knowledge-base search failed; the details are in the host's log."
        if kind == "failed"
        else "The knowledge-base tool is not set up correctly for this request; "
        "the details are in the host's log."
    )
    hint = (
        ToolFailedError.default_hint
        if kind == "failed"
        else "Answer without the knowledge base; the host must fix the tool's configuration."
    )
    return _Failure(ToolErrorInfo(code=exc.code, message=message, hint=hint, kind=kind))


class _FieldsCache:
    """Automatic filter keys per (store, collection, guard), re-read after ``ttl`` seconds (LRU-bounded)."""

    def __init__(self, ttl: float, max_entries: int = 256) -> None:
        self.ttl = ttl
        self._max = max_entries
        self._entries: OrderedDict[tuple[Any, ...], tuple[float, dict[str, str]]] = OrderedDict()

    def get(self, key: tuple[Any, ...], *, max_age: float) -> dict[str, str] | None:
        entry = self._entries.get(key)
        if entry is None or time.monotonic() - entry[0] > max_age:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: tuple[Any, ...], fields: dict[str, str]) -> None:
        self._entries[key] = (time.monotonic(), fields)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)


def _without_values(fields: Mapping[str, str]) -> dict[str, str]:
    return {key: text.split(_VALUES_SEEN, 1)[0] for key, text in fields.items()}


def filter_description(fields: Mapping[str, str] | Literal["any"] | None) -> str:
    """The ``filter`` argument's description for these keys (``None``: checked, list not known here)."""
    if fields == "any":
        keys = "Any metadata key (letters, digits, '_' and '-'; nested keys joined with '.')."
    elif fields is None:
        keys = (
            "Only the collection's own metadata keys are accepted; a filter on another key returns an "
            "error that lists the keys you may use."
        )
    elif not fields:
        keys = "No metadata keys are available to filter on."
    else:
        lines = [f"- {k}: {d}" if d else f"- {k}" for k, d in sorted(fields.items())]
        keys = "Keys you may filter on:\n" + "\n".join(lines)
    return (
        "Optional metadata filter, a JSON object (not a string) in MongoDB style. "
        "Keys of one object are ANDed; a value is a literal (equality), a list (any of) or an "
        f"object of operators. Operators: {' '.join(FILTER_OPERATORS)}. "
        'Example: {"kind": "faq", "year": {"$gte": 2020}}. ' + keys
    )


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
        filter_fields: FilterFields,
        filter_fields_sample: int,
        filter_fields_ttl: float,
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
        max_query_chars: int,
    ) -> None:
        self.id = id
        self.name = _OPENAI_NAME.sub("_", id).strip("_")[:64] or "vector_query"
        self.description = description
        self._store = store
        self._collection = collection
        self._encoder = encoder
        self._enable_filter = enable_filter
        self._filter_fields = filter_fields
        self._fields_sample = filter_fields_sample
        self._fields_cache = _FieldsCache(filter_fields_ttl)
        self._max_query_chars = max_query_chars
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

    def _schema(self, filtering: bool, fields: Mapping[str, str] | Literal["any"] | None) -> dict[str, Any]:
        properties: dict[str, Any] = {
            "query_text": {
                "type": "string",
                "minLength": 1,
                "maxLength": self._max_query_chars,
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
        if filtering:
            properties["filter"] = {"type": "object", "description": filter_description(fields)}
        return {
            "type": "object",
            "properties": properties,
            "required": ["query_text"],
            "additionalProperties": False,
        }

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments a model sends (``filter`` only when filtering is on).

        This is the schema for a request whose context is not known. With
        ``filter_fields="auto"`` it lists the keys read inside the creation-time
        guard; the values seen are listed only when there is such a guard,
        because a request-context guard could narrow it further. Use
        `input_schema_for` to describe one request exactly.
        """
        fields: Mapping[str, str] | Literal["any"] | None = None
        spec = self._filter_fields
        if spec != "auto":
            fields = spec
        elif self._enable_filter and isinstance(self._store, VectorStore) and self._collection is not None:
            try:
                read = run_sync(self._auto_fields(self._store, self._collection, self._guard))
            except TurnkitError as exc:  # e.g. the collection does not exist yet
                log.info("vector query tool %r: filter keys not read: %s", self.id, exc)
            else:
                fields = read if self._guard is not None else _without_values(read)
        return self._schema(self._enable_filter, fields)

    async def input_schema_for(self, request_context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The JSON Schema for one request: its guard, collection and store decide the keys shown.

        With ``filter_fields="auto"``, keys and values are read inside the
        effective guard (creation-time AND request context), so a tenant's
        model never sees another tenant's keys or values.

        Raises:
            TurnkitError: The request context is invalid, or the store or collection cannot be read.
        """
        context = request_context or {}
        collection, guard, context_guard, *_ = self._options(context)
        filtering = self._enable_filter or context_guard is not None
        fields: Mapping[str, str] | Literal["any"] | None = None
        if self._filter_fields != "auto":
            fields = self._filter_fields
        elif filtering:
            fields = await self._auto_fields(await self._resolve_store(context), collection, guard)
        return self._schema(filtering, fields)

    def input_schema_for_sync(self, request_context: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Sync form of `input_schema_for`."""
        return run_sync(self.input_schema_for(request_context))

    def to_openai_tool(
        self, *, name: str | None = None, request_context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The tool as an OpenAI chat-completions function definition.

        Args:
            name: Function name to use instead of `name`.
            request_context: Describe this request (see `input_schema_for`);
                a host with request-context guards should always pass it.

        Returns:
            ``{"type": "function", "function": {"name", "description", "parameters"}}``.
        """
        schema = self.input_schema if request_context is None else self.input_schema_for_sync(request_context)
        return {
            "type": "function",
            "function": {"name": name or self.name, "description": self.description, "parameters": schema},
        }

    async def _auto_fields(
        self, store: VectorStore, collection: str, guard: FilterNode | None, *, max_age: float | None = None
    ) -> dict[str, str]:
        """The metadata keys inside ``guard`` (the guard's own keys left out), cached per guard."""
        key = (id(store), store.uri, collection, repr(guard))
        ttl = self._fields_cache.ttl
        cached = self._fields_cache.get(key, max_age=ttl if max_age is None else min(max_age, ttl))
        if cached is not None:
            return cached
        fields = await describe_metadata_fields(store, collection, guard=guard, sample=self._fields_sample)
        self._fields_cache.put(key, fields)
        return fields

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
            return VectorQueryResult(status="error", error=_hidden(exc, self.id).info)
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
        text = text.strip()
        if len(text) > self._max_query_chars:
            raise InvalidToolInputError(
                f"`query_text` has {len(text)} characters; at most {self._max_query_chars} are accepted.",
                hint="Send the question or topic itself in a few words, not a whole document.",
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
        return _Request(text, top_k, raw.get("filter"))

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
        except Exception as exc:
            # The details (a connection string, a tenant's path) are for the host's log, never the model.
            log.warning("store resolver of tool %r raised", self.id, exc_info=True)
            raise StoreResolverError("The store resolver failed; the details are in the host's log.") from exc
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
        (collection, guard, context_guard, include_vectors, include_sources) = options[:5]
        reranker, hybrid, db, provider_options = options[5:]
        # Only a real guard from the host turns filtering on; {"filter": None} was refused in _options.
        filtering = self._enable_filter or context_guard is not None
        declared = self._filter_fields if isinstance(self._filter_fields, dict) else None
        try:
            if request.filter is not None and not filtering:
                raise InvalidToolInputError(
                    "This tool does not take a filter.",
                    hint="Call it again with query_text (and top_k) only.",
                    field="filter",
                )
            model_filter = compile_model_filter(
                request.filter,
                allowed_fields=declared,
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
        if model_filter is not None and self._filter_fields == "auto":
            await self._check_auto_fields(model_filter, store, collection, guard)
        query: QueryBuilder = store(collection)
        if self._encoder is not None:
            try:
                vector = await self._encode(store, collection, request.query_text, provider_options)
            except (InvalidToolConfigError, CollectionNotFoundError) as exc:
                raise _fail(exc, "configuration") from None
            except TurnkitError as exc:  # the encoder's own message can quote keys or endpoints
                raise _hidden(exc, self.id) from None
            query = query.near_vector(vector)
        else:
            query = query.near_text(request.query_text)
        query = query.with_hybrid(hybrid, request.query_text)
        # The guard wraps the model's filter as a separate AND branch: the model's
        # $or / $not can only narrow inside its own branch, never widen the guard.
        if guard is not None:
            query = query.where(guard)
        if model_filter is not None:
            query = query.where(model_filter)
        fields = ["id", "document", "metadata"] + (["vector"] if include_vectors else [])
        model, scorer = judge if judge is not None else (None, None)
        steps = RetrieveOptions(
            top_k=limit,
            min_score=db.min_score,
            rerank=reranker.options(limit) if reranker is not None else None,
            rerank_model=model,
            rerank_scorer=scorer,
        )
        try:
            found = await retrieve(_apply_database_config(query.select(*fields), db), steps)
        except CollectionNotFoundError as exc:
            raise _fail(exc, "configuration") from None
        except RerankFailedError as exc:  # a judge's API error can quote keys or endpoints
            raise _hidden(exc, self.id, "failed") from None
        except TurnkitError as exc:
            # Backend messages can quote the compiled SQL, guard values included: log, do not show.
            raise _hidden(exc, self.id) from None
        matches = found.matches
        if found.reranked:
            name = (
                scorer.name
                if scorer is not None
                else "the retrieval scores only"
                if model is None
                else f"llm:{getattr(model, 'model', type(model).__name__)}"
            )
            notes.append(f"Reranked {found.reranked} candidates with {name}; kept {len(matches)}.")
            unscored = all(r.semantic is None for r in found.ranked)
            if reranker is not None and reranker.weights.semantic > 0 and unscored:
                notes.append("The reranker's scorer gave no usable scores; the retrieval order was kept.")
        return self._result(matches, top_k, notes, include_vectors, include_sources)

    def _options(
        self, context: Mapping[str, Any]
    ) -> tuple[
        str,
        FilterNode | None,
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
        guard, context_guard = self._guard, None
        if "filter" in context:
            context_guard = _context_guard(context["filter"], self.id)
            guard = context_guard if guard is None else _and(guard, context_guard)
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
        return (
            collection,
            guard,
            context_guard,
            include_vectors,
            include_sources,
            reranker,
            hybrid,
            db,
            provider_options,
        )

    async def _check_auto_fields(
        self, node: FilterNode, store: VectorStore, collection: str, guard: FilterNode | None
    ) -> None:
        """Refuse keys the collection does not have inside ``guard``; re-read once before refusing."""
        try:
            try:
                check_filter_fields(node, await self._auto_fields(store, collection, guard))
            except UnknownFieldError:
                # Maybe written since the keys were read: look again (at most every few seconds).
                fresh = await self._auto_fields(store, collection, guard, max_age=_MISS_REFRESH_SECONDS)
                check_filter_fields(node, fresh)
        except UnknownFieldError as exc:
            raise _fail(exc, "invalid_input") from None
        except CollectionNotFoundError as exc:
            raise _fail(exc, "configuration") from None
        except TurnkitError as exc:
            raise _hidden(exc, self.id) from None

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
        # One list entry per chunk: JSON string boundaries are unforgeable, whatever the chunk text says.
        return VectorQueryResult(
            status="ok",
            relevant_context=[s.document or "" for s in sources],
            sources=sources if include_sources else [],
            top_k=top_k,
            notes=notes,
        )


def _hybrid(value: HybridOption) -> HybridSpec | None:
    try:
        return coerce_hybrid(value, option="hybrid")
    except InvalidRankingConfigError as exc:
        raise InvalidToolConfigError(exc.message, hint=exc.hint, option="hybrid") from None


def _context_guard(value: Any, tool_id: str) -> FilterNode:
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
    filter_fields: Sequence[str] | Mapping[str, str] | Literal["auto", "any"] | None = "auto",
    filter_fields_sample: int = 10_000,
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
        provider_options: Options forwarded to ``encoder.encode(...,
            provider_options=...)``; the encoder must accept them.
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
    _check_int(max_query_chars, "max_query_chars", maximum=100_000)
    _check_int(filter_fields_sample, "filter_fields_sample", maximum=1_000_000)
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
    return VectorQueryTool(
        id=id or f"VectorQuery lancedb {collection or 'dynamic'} Tool",
        description=description or DEFAULT_DESCRIPTION,
        store=store,
        collection=collection,
        encoder=encoder,
        enable_filter=enable_filter,
        filter_fields=fields,
        filter_fields_sample=filter_fields_sample,
        filter_fields_ttl=float(filter_fields_ttl),
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
        max_query_chars=max_query_chars,
    )
