"""``create_vector_query_tool``: a Mastra-shaped semantic-search tool over a turnkit store."""

from __future__ import annotations

import inspect
import logging
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final, Literal, TypeAlias, cast

import numpy as np

from ..._aio import run_sync, sync_form
from ..._errors import TurnkitError
from ...batteries.vector import (
    Encoder,
    FilterKeyNotFoundError,
    FilterNode,
    InvalidRankingConfigError,
    RetrievalSettings,
    UnknownFieldError,
    VectorMatch,
    VectorStore,
    VectorStoreUsageError,
    encode_texts,
    local_scorer,
    retrieve,
)
from .._config import ModelResolver, StoreResolver, ToolLimits
from .._errors import ToolRuntimeError, config_error, input_error
from .._filters import check_filter_fields, check_keys_held, compile_model_filter, describe_metadata_fields
from .._results import ToolErrorInfo, VectorQueryResult, VectorQuerySource
from ._classify import classify
from ._input import FieldsCache, input_schema, parse_input, without_values
from ._options import OptionsEncoder, VectorQueryOptions, check_provider_options

__all__ = ["DEFAULT_DESCRIPTION", "FilterFields", "VectorQueryTool"]

log = logging.getLogger("turnkit.tools")

DEFAULT_DESCRIPTION: Final = "Access the knowledge base to find information needed to answer user questions"
"""The seed's default tool description."""

# An unknown key re-reads the collection's keys at most this often (a model cannot force a scan per call).
_MISS_REFRESH_SECONDS: Final = 5.0
FilterFields: TypeAlias = "dict[str, str] | Literal['auto', 'any']"
_OPENAI_NAME: Final = re.compile(r"[^A-Za-z0-9_-]+")


class VectorQueryTool:
    """A semantic-search tool for agents; create it with `create_vector_query_tool`.

    Attributes:
        id: The tool id (Mastra's default: ``VectorQuery {store} {collection} Tool``).
        name: ``id`` made safe as a function name for tool-calling APIs.
        description: What the model is told the tool does.
        options: The host's options, its `RetrievalSettings` included; a request context merges into them.
        limits: What a model's request may ask (`ToolLimits`).
    """

    def __init__(
        self,
        *,
        id: str,
        description: str,
        store: VectorStore | StoreResolver,
        encoder: Encoder | None,
        options: VectorQueryOptions,
        enable_filter: bool,
        filter_fields: FilterFields,
        models: ModelResolver | None,
        limits: ToolLimits,
    ) -> None:
        self.id = id
        self.name = _OPENAI_NAME.sub("_", id).strip("_")[:64] or "vector_query"
        self.description = description
        self.options = options
        self.limits = limits
        self._store = store
        self._encoder = encoder
        self._enable_filter = enable_filter
        self._filter_fields = filter_fields
        self._fields_cache = FieldsCache(limits.fields_ttl)
        self._models = models
        self._checked_encoders: set[tuple[int, str]] = set()

    def __repr__(self) -> str:
        return f"<VectorQueryTool id={self.id!r} collection={self.options.collection!r}>"

    # -- schema ---------------------------------------------------------------------------
    @property
    def filter_enabled(self) -> bool:
        """Whether the model may send a ``filter`` (the schema then shows it)."""
        return self._enable_filter

    @property
    def max_top_k(self) -> int:
        """The largest ``top_k`` a call can get; larger requests are clamped."""
        return self.limits.max_top_k

    def _schema(self, filtering: bool, fields: Mapping[str, str] | Literal["any"] | None) -> dict[str, Any]:
        return input_schema(
            fields, filtering=filtering, limits=self.limits, default_top_k=self.options.settings.top_k
        )

    @property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema of the arguments a model sends (``filter`` only when filtering is on).

        With ``filter_fields="auto"`` it lists the keys read inside the creation-time guard, and the
        values seen only when there is one (a request-context guard could narrow it further). Use
        `input_schema_for` to describe one request exactly.
        """
        fields: Mapping[str, str] | Literal["any"] | None = None
        spec, guard, collection = self._filter_fields, self.options.guard, self.options.collection
        if spec != "auto":
            fields = spec
        elif self._enable_filter and isinstance(self._store, VectorStore) and collection is not None:
            try:
                read = run_sync(self._auto_fields(self._store, collection, guard))
            except TurnkitError as exc:  # e.g. the collection does not exist yet
                log.info("vector query tool %r: filter keys not read: %s", self.id, exc)
            else:
                fields = read if guard is not None else without_values(read)
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
        options = self.options.for_request(context, self.id, self._models)
        filtering = self._enable_filter or options.request_guard is not None
        return self._schema(filtering, await self.filter_fields_for(context) if filtering else None)

    input_schema_for_sync = sync_form(input_schema_for)

    async def filter_fields_for(
        self, request_context: Mapping[str, Any] | None = None
    ) -> Mapping[str, str] | Literal["any"]:
        """The metadata keys a model may filter on in one request, with what is known of their values.

        With ``filter_fields="auto"``: `describe_metadata_fields` inside the request's guard, cached
        like the keys a filter is checked against.

        Raises:
            TurnkitError: The request context is invalid, or the store or collection cannot be read.
        """
        if self._filter_fields != "auto":
            return self._filter_fields
        context = request_context or {}
        options = self.options.for_request(context, self.id, self._models)
        store = await self._resolve_store(context)
        return await self._auto_fields(store, options.searched(), options.guard)

    filter_fields_for_sync = sync_form(filter_fields_for)

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
        fields = await describe_metadata_fields(
            store, collection, guard=guard, sample=self.limits.fields_sample
        )
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
        context = request_context if request_context is not None else {}
        try:
            if not isinstance(context, Mapping):
                raise config_error("request_context must be a mapping.", option="request_context")
            return await self._execute(input, context)
        except TurnkitError as exc:
            return VectorQueryResult(status="error", error=classify(exc, self.id))
        except Exception:
            # Details may hold SQL with the guard's values: log them, do not show them.
            log.exception("vector query tool %r failed unexpectedly", self.id)
            error = ToolRuntimeError("The knowledge-base search failed unexpectedly.", code="E_TOOL_FAILED")
            return VectorQueryResult(status="error", error=ToolErrorInfo.from_error(error, "failed"))

    execute_sync = sync_form(execute)

    async def _execute(self, raw: Mapping[str, Any] | str, context: Mapping[str, Any]) -> VectorQueryResult:
        # Every TurnkitError raised here becomes a structured error through one table (`classify`):
        # the model's mistakes are shown to it, the host's and the backend's are logged.
        notes: list[str] = []
        options = self.options.for_request(context, self.id, self._models)
        # Only a real guard from the host turns filtering on; {"filter": None} is refused.
        filtering = self._enable_filter or options.request_guard is not None
        limits = self.limits
        request = parse_input(raw, filtering=filtering, limits=limits)
        if request.filter is not None and not filtering:
            raise input_error(
                "This tool does not take a filter.",
                hint="Call it again with query_text (and top_k) only.",
                field="filter",
            )
        model_filter = compile_model_filter(
            request.filter,
            allowed_fields=self._filter_fields if isinstance(self._filter_fields, dict) else None,
            max_depth=limits.max_filter_depth,
            max_nodes=limits.max_filter_conditions,
        )
        top_k = self._top_k(request.top_k, options, notes)
        limit = min(top_k, options.rerank_cap) if options.rerank_cap is not None else top_k
        collection = options.searched()
        store = await self._resolve_store(context)
        settings = options.settings
        settings = self._with_scorer(
            settings.merge(top_k=limit) if limit != settings.top_k else settings, store
        )
        if model_filter is not None and self._filter_fields == "auto":
            await self._check_keys(
                partial(check_filter_fields, model_filter), store, collection, options.guard
            )
        query = store(collection)
        encoder = self._query_encoder(store, options)
        if encoder is not None:
            query = query.near_vector(await self._encode(store, collection, encoder, request.query_text))
        else:
            query = query.near_text(request.query_text)
        # The guard wraps the model's filter as a separate AND branch: the model's
        # $or / $not can only narrow inside its own branch, never widen the guard.
        if options.guard is not None:
            query = query.where(options.guard)
        if model_filter is not None:
            query = query.where(model_filter)
        try:
            found = await retrieve(query, settings, text=request.query_text)
        except FilterKeyNotFoundError:
            if options.guard is None:
                raise
            found = None  # the store looked at every record; its hint may name keys outside the guard
        if options.guard is not None and model_filter is not None and (found is None or not found.matches):
            # Inside a guard an empty answer is explained by the guard's records only, the same way
            # whether a key is held by no record or by records outside the guard.
            held = partial(check_keys_held, model_filter, guard=options.guard)
            await self._check_keys(held, store, collection, options.guard)
        if found is None:
            return self._result([], top_k, notes, settings)
        if found.reranked and settings.rerank is not None:
            model, scorer = settings.rerank_model, settings.rerank_scorer
            name = (
                "the retrieval scores only"
                if settings.rerank.weights.semantic == 0
                else f"llm:{getattr(model, 'model', type(model).__name__)}"
                if model is not None
                else getattr(scorer, "name", str(scorer))
            )
            notes.append(f"Reranked {found.reranked} candidates with {name}; kept {len(found.matches)}.")
            unscored = all(r.semantic is None for r in found.ranked)
            if settings.rerank.weights.semantic > 0 and unscored:
                notes.append("The reranker's scorer gave no usable scores; the retrieval order was kept.")
        return self._result(found.matches, top_k, notes, settings)

    def _top_k(self, requested: int | None, options: VectorQueryOptions, notes: list[str]) -> int:
        # The request context's top_k wins over the model's; the settings' is the default.
        value = options.settings.top_k if options.top_k_forced or requested is None else requested
        most = self.limits.max_top_k
        if value > most:
            notes.append(f"top_k {value} is above the maximum of {most}; used {most}.")
            return most
        if value < 1:
            notes.append(f"top_k {value} is below 1; used 1.")
            return 1
        return value

    def _with_scorer(self, settings: RetrievalSettings, store: VectorStore) -> RetrievalSettings:
        """``settings`` with the local scorer resolved, over this tool's encoder when it has one.

        A semantic weight of 0 needs no scorer.
        """
        rerank, scorer = settings.rerank, settings.rerank_scorer
        if rerank is None or settings.rerank_model is not None or rerank.weights.semantic == 0:
            return settings
        if scorer is not None and not isinstance(scorer, str):
            return settings
        try:
            resolved = local_scorer(self._encoder or store.encoder, cast("Any", scorer or "auto"))
        except InvalidRankingConfigError as exc:
            raise config_error(exc.message, hint=exc.hint, option="reranker.scorer") from None
        return settings.merge(rerank_scorer=resolved)

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
            raise ToolRuntimeError(
                "The store resolver failed; the details are in the host's log.",
                code="E_TOOL_STORE_RESOLVER_FAILED",
            ) from exc
        if not isinstance(result, VectorStore):
            raise ToolRuntimeError(
                f"The store resolver returned {type(result).__name__}, not a VectorStore.",
                code="E_TOOL_STORE_RESOLVER_FAILED",
                hint="Return the result of create_vector_store(...) for this request.",
            )
        return result

    def _query_encoder(self, store: VectorStore, options: VectorQueryOptions) -> Encoder | None:
        """The encoder the tool runs itself: its own, or the store's when provider options go to it."""
        if not options.provider_options:
            return self._encoder
        encoder = self._encoder or store.encoder
        if encoder is None:
            return None  # the store refuses a text query without an encoder, with its own hint
        check_provider_options(options.provider_options, encoder)
        return OptionsEncoder(encoder, options.provider_options)

    async def _encode(self, store: VectorStore, collection: str, encoder: Encoder, text: str) -> Any:
        key = (id(store), collection)
        if key not in self._checked_encoders:
            # Once per store and collection: a query encoded by another model finds nonsense.
            info = await store.collection_info(collection)
            if info.encoder and info.encoder != encoder.name:
                raise VectorStoreUsageError(
                    f"Collection {collection!r} was built with encoder {info.encoder!r}; "
                    f"this tool encodes queries with {encoder.name!r}.",
                    code="E_VECTOR_STORE_ENCODER_MISMATCH",
                    hint=f"Create the tool with encoder= {info.encoder!r} (or leave encoder= out to use the "
                    f"store's), or re-ingest the collection with {encoder.name!r}.",
                    collection=collection,
                )
            self._checked_encoders.add(key)
        vectors = await encode_texts(encoder, [text], "query")
        return np.asarray(vectors[0])

    async def _check_keys(
        self,
        check: Callable[[dict[str, str]], None],
        store: VectorStore,
        collection: str,
        guard: FilterNode | None,
    ) -> None:
        """``check`` the keys read inside ``guard``; when it refuses, re-read them once and check again."""
        try:
            check(await self._auto_fields(store, collection, guard))
        except (UnknownFieldError, FilterKeyNotFoundError):
            # Maybe written since the keys were read: look again (at most every few seconds).
            check(await self._auto_fields(store, collection, guard, max_age=_MISS_REFRESH_SECONDS))

    def _result(
        self, matches: list[VectorMatch], top_k: int, notes: list[str], settings: RetrievalSettings
    ) -> VectorQueryResult:
        sources = [VectorQuerySource.of(m, with_vector=settings.include_vectors) for m in matches]
        if not sources:
            notes.append("The search ran and no chunk matched; try other words or a looser filter.")
            return VectorQueryResult(status="no_results", top_k=top_k, notes=notes)
        # One list entry per chunk: JSON string boundaries are unforgeable, whatever the chunk text says.
        return VectorQueryResult(
            status="ok",
            relevant_context=[s.document or "" for s in sources],
            sources=sources if settings.include_sources else [],
            top_k=top_k,
            notes=notes,
        )
