"""``create_mcp_server``: turnkit's tools on an official-SDK MCP server."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .._aio import run_sync
from .._errors import RuntimeFailure, TurnkitError
from ..batteries.vector import (
    CollectionNotFoundError,
    Encoder,
    FilterNode,
    HybridOption,
    RelevanceScorer,
    RerankOptions,
    VectorStore,
    create_vector_store,
    evaluate,
)
from ..tools import (
    RETRIEVE_CONTEXTS_DESCRIPTION,
    InvalidToolInputError,
    ModelResolver,
    RerankConfig,
    RetrieveContextsResponse,
    ToolErrorInfo,
    ToolFailedError,
    VectorQueryTool,
    create_vector_query_tool,
    describe_metadata_fields,
    retrieve_contexts,
    retrieve_contexts_input_schema,
)
from ..tools._filters import compile_guard
from ..tools._vector_query import filter_description
from ._encoders import encoder_from_spec, recorded_encoder
from ._errors import InvalidMCPServerConfigError

__all__ = ["READ_ONLY_ANNOTATIONS", "WRITE_ANNOTATIONS", "create_mcp_server"]

log = logging.getLogger("turnkit.mcp")

READ_ONLY_ANNOTATIONS: Final = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
"""The seed's annotations for retrieval tools: read-only, idempotent, not destructive, closed world."""

WRITE_ANNOTATIONS: Final = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
"""Write tools replace or remove records: destructive (repeating a call changes nothing more)."""

_MAX_WRITE_BATCH: Final = 100
_SCORE_TEXT: Final = {
    "distance": "the raw vector distance (cosine: in [0, 2], 0 is the most relevant)",
    "similarity": "a similarity in [0, 1], 1 is the most relevant",
}
Handler = Callable[[dict[str, Any]], Awaitable[CallToolResult]]


class _HandlerTool(Tool):
    """An SDK tool with a hand-written JSON schema; arguments go to ``handler`` as received.

    turnkit validates arguments itself so a model gets turnkit's structured
    errors, and so the SDK never re-parses string arguments as JSON.
    """

    handler: Handler = Field(exclude=True)
    published_output_schema: dict[str, Any] | None = Field(default=None, exclude=True)

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.published_output_schema

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        return await self.handler(dict(arguments))


async def _no_arguments() -> None:
    """Placeholder signature; `_HandlerTool.run` never calls it."""


def _tool(
    name: str,
    *,
    title: str,
    description: str,
    schema: dict[str, Any],
    annotations: ToolAnnotations,
    handler: Handler,
    output_schema: dict[str, Any] | None = None,
) -> _HandlerTool:
    base = Tool.from_function(
        _no_arguments, name=name, title=title, description=description, structured_output=False
    )
    fields = {key: getattr(base, key) for key in Tool.model_fields}
    fields.update(
        parameters=schema,
        annotations=annotations.model_copy(update={"title": title}),
    )
    return _HandlerTool(**fields, handler=handler, published_output_schema=output_schema)


def _result(payload: dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=payload, is_error=is_error
    )


def _error(exc: BaseException) -> CallToolResult:
    if isinstance(exc, TurnkitError):
        kind: Literal["invalid_input", "failed"] = (
            "failed" if isinstance(exc, RuntimeFailure) else "invalid_input"
        )
        if kind == "failed":
            # Backend, encoder and judge messages can quote SQL (guard values included), keys or
            # endpoints: log them, keep only the stable code.
            log.warning("MCP tool failed: %s", exc, exc_info=exc)
            info = ToolErrorInfo(
                code=exc.code,
                message="The knowledge-base operation failed; the details are in the server's log.",
                hint=ToolFailedError.default_hint,
                kind="failed",
            )
        else:
            info = ToolErrorInfo.from_error(exc, kind)
    else:
        log.exception("MCP tool raised unexpectedly", exc_info=exc)
        info = ToolErrorInfo.from_error(ToolFailedError("The tool failed unexpectedly."), "failed")
    return _result({"error": info.model_dump()}, is_error=True)


def _ranking_text(models: Any, scorers: Mapping[str, Any] | None) -> str:
    """What a model may put in ``ranking``, when the names are known up front."""
    parts = []
    if isinstance(models, Mapping) and models:
        parts.append(f"ranking.llm_ranker.model_name: {', '.join(sorted(models))}")
    if scorers:
        parts.append(f"ranking.rank_service.model_name: {', '.join(sorted(scorers))}")
    return f" Rankers: {'; '.join(parts)}." if parts else ""


def _with_collection(schema: dict[str, Any], collections: Sequence[str]) -> dict[str, Any]:
    if len(collections) < 2:
        return schema
    out = dict(schema)
    out["properties"] = {
        "collection": {
            "type": "string",
            "enum": list(collections),
            "description": "The collection to use.",
        },
        **schema["properties"],
    }
    out["required"] = ["collection", *schema.get("required", [])]
    return out


def _pick_collection(arguments: dict[str, Any], collections: Sequence[str]) -> str:
    if len(collections) == 1:
        if "collection" in arguments and arguments.pop("collection") != collections[0]:
            raise InvalidToolInputError(
                "Unknown collection.", hint=f"This server serves {collections[0]!r} only.", field="collection"
            )
        return collections[0]
    name = arguments.pop("collection", None)
    if name not in collections:
        raise InvalidToolInputError(
            f"`collection` must be one of {list(collections)}, got {name!r}.", field="collection"
        )
    return str(name)


class _Tools:
    """The handlers, bound to one store and its configuration."""

    def __init__(
        self,
        *,
        store: VectorStore,
        collections: list[str],
        query_tools: dict[str, VectorQueryTool],
        guard: FilterNode | None,
        default_top_k: int,
        max_top_k: int,
        score: Literal["distance", "similarity"],
        models: ModelResolver | None,
        scorers: Mapping[str, RelevanceScorer] | None,
        rerank_options: RerankOptions | None,
    ) -> None:
        self.models = models
        self.scorers = scorers
        self.rerank_options = rerank_options
        self.store = store
        self.collections = collections
        self.query_tools = query_tools
        self.guard = guard
        self.default_top_k = default_top_k
        self.max_top_k = max_top_k
        self.score = score

    async def vector_query(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            collection = _pick_collection(arguments, self.collections)
        except TurnkitError as exc:
            return _error(exc)
        result = await self.query_tools[collection].execute(arguments)
        return _result(result.to_dict(), is_error=result.status == "error")

    async def retrieve_contexts(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            response = await retrieve_contexts(
                arguments,
                store=self.store,
                collection=self.collections[0] if len(self.collections) == 1 else None,
                allowed_collections=self.collections,
                guard_filter=self.guard,
                default_top_k=self.default_top_k,
                max_top_k=self.max_top_k,
                score=self.score,
                models=self.models,
                scorers=self.scorers,
                rerank_options=self.rerank_options,
            )
        except Exception as exc:
            return _error(exc)
        # The seed's REST spelling (sourceUri, pageSpan…), so clients written against Vertex read it.
        return _result(response.model_dump(mode="json", exclude_none=True, by_alias=True))

    async def store_documents(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            collection = _pick_collection(arguments, self.collections)
            records = _write_records(arguments)
            if self.guard is not None:
                await self._check_guard(collection, records)
            result = await self.store(collection).upsert(records)
        except Exception as exc:
            return _error(exc)
        return _result({"inserted": result.inserted, "updated": result.updated})

    async def _check_guard(self, collection: str, records: list[dict[str, Any]]) -> None:
        assert self.guard is not None
        for record in records:
            if not evaluate(self.guard, record):
                raise InvalidToolInputError(
                    f"Record {record['id']!r} is outside what this server may write.",
                    hint="Give it the metadata this server requires.",
                    record_id=record["id"],
                )
        try:
            # An id that already exists outside the guard must not be overwritten.
            clash = await (
                self.store(collection)
                .where_in("id", [r["id"] for r in records])
                .where_not(self.guard)
                .count()
            )
        except CollectionNotFoundError:
            clash = 0
        if clash:
            raise InvalidToolInputError("Some of these ids are already used.", hint="Choose other ids.")

    async def delete_documents(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            collection = _pick_collection(arguments, self.collections)
            if set(arguments) != {"ids"}:
                raise InvalidToolInputError("The only argument besides `collection` is `ids`.")
            ids = arguments["ids"]
            if (
                not isinstance(ids, list)
                or not 1 <= len(ids) <= 1000
                or not all(isinstance(i, str) and i for i in ids)
            ):
                raise InvalidToolInputError(
                    "`ids` must be a list of 1 to 1000 non-empty strings.", field="ids"
                )
            query = self.store(collection).where_in("id", ids)
            if self.guard is not None:
                query = query.where(self.guard)
            deleted = await query.delete()
        except Exception as exc:
            return _error(exc)
        return _result({"deleted": deleted})


def _write_records(arguments: dict[str, Any]) -> list[dict[str, Any]]:
    if set(arguments) != {"records"}:
        raise InvalidToolInputError("The only argument besides `collection` is `records`.")
    records = arguments["records"]
    if not isinstance(records, list) or not 1 <= len(records) <= _MAX_WRITE_BATCH:
        raise InvalidToolInputError(f"`records` must be a list of 1 to {_MAX_WRITE_BATCH} objects.")
    out: list[dict[str, Any]] = []
    for i, record in enumerate(records):
        if not isinstance(record, Mapping) or not set(record) <= {"id", "text", "metadata"}:
            raise InvalidToolInputError(
                f"records[{i}] must be an object with id, text and optional metadata."
            )
        rid, text, metadata = record.get("id"), record.get("text"), record.get("metadata")
        if not isinstance(rid, str) or not rid or not isinstance(text, str) or not text.strip():
            raise InvalidToolInputError(f"records[{i}] needs a non-empty string id and text.")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidToolInputError(f"records[{i}].metadata must be an object.")
        out.append({"id": rid, "document": text, "metadata": dict(metadata or {})})
    return out


_STORE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "records": {
            "type": "array",
            "minItems": 1,
            "maxItems": _MAX_WRITE_BATCH,
            "description": "Records to insert or replace by id; the text is embedded by the server.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "text": {"type": "string", "minLength": 1},
                    "metadata": {"type": "object"},
                },
                "required": ["id", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["records"],
    "additionalProperties": False,
}
_DELETE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "ids": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {"type": "string", "minLength": 1},
            "description": "Ids of the records to delete.",
        }
    },
    "required": ["ids"],
    "additionalProperties": False,
}


def _open_store(
    store: VectorStore | None,
    uri: str | None,
    encoder: Encoder | str | None,
    connect: Mapping[str, Any] | None = None,
) -> tuple[VectorStore, bool]:
    """The store to serve, and whether its encoder must still be read from the collections."""
    if (store is None) == (uri is None):
        raise InvalidMCPServerConfigError("Pass exactly one of store= and uri=.", option="store")
    if store is not None:
        if not isinstance(store, VectorStore):
            raise InvalidMCPServerConfigError("store must be a VectorStore.", option="store")
        if encoder is not None:
            raise InvalidMCPServerConfigError(
                "encoder= is for uri=; a store brings its own encoder.", option="encoder"
            )
        return store, False
    if not isinstance(uri, str) or not uri:
        raise InvalidMCPServerConfigError("uri must be a non-empty string.", option="uri")
    if "://" not in uri and not Path(uri).expanduser().is_dir():
        # Connecting would create an empty database directory; serving one is always a mistake.
        raise InvalidMCPServerConfigError(
            f"No database at {uri!r}.",
            hint="Check the path, or ingest documents first (turnkit ingest PATH --uri ...).",
            option="uri",
        )
    resolved = encoder_from_spec(encoder) if isinstance(encoder, str) else encoder
    return create_vector_store(uri=uri, encoder=resolved, **dict(connect or {})), resolved is None


def create_mcp_server(
    store: VectorStore | None = None,
    *,
    uri: str | None = None,
    connect: Mapping[str, Any] | None = None,
    collections: str | Sequence[str] | None = None,
    encoder: Encoder | str | None = None,
    enable_writes: bool = False,
    enable_filter: bool = True,
    filter_fields: Sequence[str] | Mapping[str, str] | Literal["auto", "any"] | None = "auto",
    guard_filter: Mapping[str, Any] | FilterNode | None = None,
    default_top_k: int = 10,
    max_top_k: int = 50,
    score: Literal["distance", "similarity"] = "distance",
    reranker: RerankConfig | Mapping[str, Any] | bool | None = None,
    hybrid: HybridOption = None,
    models: ModelResolver | None = None,
    scorers: Mapping[str, RelevanceScorer] | None = None,
    rerank_options: RerankOptions | None = None,
    name: str = "turnkit",
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer:
    """Build an MCP server exposing ``vector_query`` and ``retrieve_contexts`` over a store.

    Both tools are annotated read-only, idempotent, not destructive and closed
    world. With ``enable_writes=True`` the server also offers
    ``store_documents`` and ``delete_documents``, annotated destructive.

    Args:
        store: The store to serve (its encoder embeds queries). Or pass ``uri``.
        uri: Open the store at this URI instead.
        connect: With ``uri``: more `create_vector_store` arguments
            (``storage_options``, ``api_key``, ``region``).
        collections: The collection(s) to expose; default every collection in
            the store. With more than one, each tool takes a ``collection``.
        encoder: With ``uri``: an `Encoder` or a spec (``"hash:64"``,
            ``"wordllama"``); default the encoder the collections recorded.
        enable_writes: Add the destructive write tools.
        enable_filter: Let models send a metadata ``filter`` to ``vector_query``.
        filter_fields: Metadata keys models may filter on: ``"auto"`` (default,
            or ``None``) reads them from each collection inside the guard and
            refuses others; a list or dict declares them; ``"any"`` allows any key.
        guard_filter: A filter ANDed with every search and delete (and that
            every stored record must satisfy); never shown to models.
        default_top_k: Results when a call gives no ``top_k``.
        max_top_k: Larger requests are clamped.
        score: The ``retrieve_contexts`` score: raw ``"distance"`` or ``"similarity"``.
        reranker: ``vector_query`` reranks every call with this `RerankConfig`
            (``True``: the defaults, scored by the offline scorer).
        hybrid: ``vector_query`` uses hybrid search (``True``, an ``alpha`` or
            a dict; see `create_vector_query_tool`).
        models: Chat models by name: what ``retrieve_contexts`` requests may
            name in ``ranking.llm_ranker.model_name`` (and a ``reranker``'s
            model name).
        scorers: Relevance scorers by name for ``ranking.rank_service``;
            without them, any name selects the offline scorer.
        rerank_options: Weights and pool size for ``retrieve_contexts`` ranking.
        name: The server name reported to clients.
        log_level: The SDK's log level (logs go to stderr).

    Returns:
        An ``mcp.server.mcpserver.MCPServer``; pass it to ``mcp.Client`` in
        process, or run it with `serve`.

    Raises:
        InvalidMCPServerConfigError: Conflicting or invalid options.
    """
    served, read_encoder = _open_store(store, uri, encoder, connect)
    if collections is None:
        names = served.list_collections_sync()
        if not names:
            raise InvalidMCPServerConfigError(
                f"The store at {served.uri!r} has no collections.",
                hint="Ingest documents first, or name the collection(s) to serve.",
                option="collections",
            )
    else:
        names = [collections] if isinstance(collections, str) else list(collections)
        if not names or not all(isinstance(n, str) for n in names):
            raise InvalidMCPServerConfigError(
                "collections must name at least one collection.", option="collections"
            )
        for n in names:
            served(n)  # validates the name
        missing = [n for n in names if not served.has_collection_sync(n)]
        if missing:
            existing = served.list_collections_sync()
            raise InvalidMCPServerConfigError(
                f"No collection {missing[0]!r} in the store at {served.uri!r}.",
                hint=f"Collections there: {', '.join(existing) or '(none)'}. Ingest into it first, "
                "or name an existing one.",
                option="collections",
            )
    names = list(dict.fromkeys(names))
    if read_encoder:
        existing = [n for n in names if served.has_collection_sync(n)]
        served.encoder = run_sync(recorded_encoder(served, existing))
    if not isinstance(enable_writes, bool):
        raise InvalidMCPServerConfigError("enable_writes must be true or false.", option="enable_writes")
    guard = compile_guard(guard_filter, option="guard_filter")

    auto = filter_fields is None or filter_fields == "auto"
    listed: dict[str, str] | None = None
    if auto and enable_filter:
        # MCP calls carry no request guard, so the server's guard is the whole boundary: the listing
        # may show the keys and values seen inside it. Each tool checks its own collection's keys.
        listed = {}
        for n in names:
            for key, text in run_sync(describe_metadata_fields(served, n, guard=guard)).items():
                listed.setdefault(key, text)
    query_tools = {
        n: create_vector_query_tool(
            store=served,
            collection=n,
            id="vector_query",
            enable_filter=enable_filter,
            filter_fields="auto" if auto else filter_fields,
            guard_filter=guard,
            default_top_k=default_top_k,
            max_top_k=max_top_k,
            reranker=reranker,
            hybrid=hybrid,
            models=models,
        )
        for n in names
    }
    handlers = _Tools(
        store=served,
        collections=names,
        query_tools=query_tools,
        guard=guard,
        default_top_k=default_top_k,
        max_top_k=max_top_k,
        score=score,
        models=models,
        scorers=scorers,
        rerank_options=rerank_options,
    )
    first = query_tools[names[0]]
    schema = first.input_schema
    if listed is not None:
        schema["properties"]["filter"]["description"] = filter_description(listed)
    tools = [
        _tool(
            "vector_query",
            title="Search the knowledge base",
            description=f"{first.description}. Returns the matching chunks' text in relevant_context and "
            "their citations in sources.",
            schema=_with_collection(schema, names),
            annotations=READ_ONLY_ANNOTATIONS,
            handler=handlers.vector_query,
        ),
        _tool(
            "retrieve_contexts",
            title="Retrieve contexts (Vertex RAG Engine shape)",
            description=f"{RETRIEVE_CONTEXTS_DESCRIPTION} Corpora (rag_corpus): {', '.join(names)}. "
            f"Each context's score is {_SCORE_TEXT[score]}.{_ranking_text(models, scorers)}",
            schema=retrieve_contexts_input_schema(),
            annotations=READ_ONLY_ANNOTATIONS,
            handler=handlers.retrieve_contexts,
            output_schema=RetrieveContextsResponse.model_json_schema(by_alias=True),
        ),
    ]
    if enable_writes:
        tools += [
            _tool(
                "store_documents",
                title="Store documents (destructive)",
                description="Insert or replace records by id in the knowledge base. Replacing overwrites the "
                "stored text and metadata.",
                schema=_with_collection(_STORE_SCHEMA, names),
                annotations=WRITE_ANNOTATIONS,
                handler=handlers.store_documents,
            ),
            _tool(
                "delete_documents",
                title="Delete documents (destructive)",
                description="Delete records by id from the knowledge base. This cannot be undone.",
                schema=_with_collection(_DELETE_SCHEMA, names),
                annotations=WRITE_ANNOTATIONS,
                handler=handlers.delete_documents,
            ),
        ]
    return MCPServer(
        name,
        instructions="Search turnkit's knowledge base with vector_query (Mastra-style) or retrieve_contexts "
        f"(Vertex-style). Collections: {', '.join(names)}.",
        tools=list(tools),
        log_level=log_level,
    )
