"""``create_mcp_server``: turnkit's tools on an official-SDK MCP server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal

from mcp.server.mcpserver import MCPServer
from mcp_types import Tool as MCPTool

from turnkit._checks import is_number

from .._aio import run_sync
from ..batteries.vector import (
    Encoder,
    FilterNode,
    RelevanceScorer,
    SettingsInput,
    VectorStore,
    create_vector_store,
)
from ..tools import RetrieveContextsRequest, RetrieveContextsResponse, ToolLimits, create_vector_query_tool
from ..tools._config import ModelResolver, tool_settings
from ..tools._filters import compile_guard
from ..tools._retrieve import RETRIEVE_CONTEXTS_DESCRIPTION, retrieve_contexts
from ..tools.vector_query._input import filter_description
from ..tools.vector_query._tool import DEFAULT_DESCRIPTION, VectorQueryTool
from ._encoders import recorded_encoder, spec_encoder
from ._errors import config_error
from ._tools import (
    DELETE_SCHEMA,
    READ_ONLY_ANNOTATIONS,
    STORE_SCHEMA,
    WRITE_ANNOTATIONS,
    Scope,
    Tools,
    make_tool,
    with_collection,
)

__all__ = [
    "DEFAULT_READ_CONSISTENCY_INTERVAL",
    "READ_ONLY_ANNOTATIONS",
    "WRITE_ANNOTATIONS",
    "create_mcp_server",
]

DEFAULT_READ_CONSISTENCY_INTERVAL = timedelta(seconds=1)
"""How stale a server opened with ``uri=`` may be with respect to other processes' writes, by default.

Looking once a second left the median search as fast as never looking (docs/performance.md).
"""
_SCORE_TEXT: Final = {
    "distance": "the raw vector distance (cosine: in [0, 2], 0 is the most relevant)",
    "similarity": "a similarity in [0, 1], 1 is the most relevant",
}


def read_consistency(value: timedelta | float | None) -> timedelta | None:
    """``read_consistency_interval`` as a `timedelta` (seconds accepted), or ``None`` (never look).

    Raises:
        MCPUsageError: ``E_INVALID_MCP_SERVER_CONFIG``: Not a duration of zero or more.
    """
    if value is None:
        return None
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if not is_number(seconds, 0):
        raise config_error(
            f"read_consistency_interval must be seconds >= 0, a timedelta, or None; got {value!r}.",
            option="read_consistency_interval",
            hint="0 looks for other processes' writes before every read; None never looks.",
        )
    return value if isinstance(value, timedelta) else timedelta(seconds=seconds)


class _PerPrincipalServer(MCPServer[Any]):
    """Lists ``vector_query`` with the filter keys seen inside the calling principal's guard."""

    def __init__(self, *args: Any, handlers: Tools, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._handlers = handlers

    async def list_tools(self) -> list[MCPTool]:
        tools = await super().list_tools()
        schema = await self._handlers.vector_query_schema()
        if schema is None:
            return tools
        return [
            t.model_copy(update={"input_schema": schema}) if t.name == "vector_query" else t for t in tools
        ]


def _ranking_text(models: Any, scorers: Mapping[str, Any] | None) -> str:
    """What a model may put in ``ranking``, when the names are known up front."""
    parts = []
    if isinstance(models, Mapping) and models:
        parts.append(f"ranking.llm_ranker.model_name: {', '.join(sorted(models))}")
    if scorers:
        parts.append(f"ranking.rank_service.model_name: {', '.join(sorted(scorers))}")
    return f" Rankers: {'; '.join(parts)}." if parts else ""


def _open_store(
    store: VectorStore | None,
    uri: str | None,
    encoder: Encoder | str | None,
    connect: Mapping[str, Any] | None = None,
    consistency: timedelta | float | None = DEFAULT_READ_CONSISTENCY_INTERVAL,
) -> tuple[VectorStore, bool]:
    """The store to serve, and whether its encoder must still be read from the collections."""
    if (store is None) == (uri is None):
        raise config_error("Pass exactly one of store= and uri=.", option="store")
    if store is not None:
        if not isinstance(store, VectorStore):
            raise config_error("store must be a VectorStore.", option="store")
        if encoder is not None:
            raise config_error("encoder= is for uri=; a store brings its own encoder.", option="encoder")
        if consistency is not DEFAULT_READ_CONSISTENCY_INTERVAL:
            raise config_error(
                "read_consistency_interval= is for uri=; a store brings its own.",
                option="read_consistency_interval",
                hint="Pass it to create_vector_store(read_consistency_interval=...).",
            )
        return store, False
    if not isinstance(uri, str) or not uri:
        raise config_error("uri must be a non-empty string.", option="uri")
    if "://" not in uri and not Path(uri).expanduser().is_dir():
        # Connecting would create an empty database directory; serving one is always a mistake.
        raise config_error(
            f"No database at {uri!r}.",
            option="uri",
            hint="Check the path, or ingest documents first (turnkit ingest PATH --uri ...).",
        )
    resolved = spec_encoder(encoder) if isinstance(encoder, str) else encoder
    # A server runs for long while other processes ingest: it looks for their writes.
    options = {"read_consistency_interval": read_consistency(consistency), **dict(connect or {})}
    return create_vector_store(uri=uri, encoder=resolved, **options), resolved is None


def create_mcp_server(
    store: VectorStore | None = None,
    *,
    uri: str | None = None,
    connect: Mapping[str, Any] | None = None,
    read_consistency_interval: timedelta | float | None = DEFAULT_READ_CONSISTENCY_INTERVAL,
    collections: str | Sequence[str] | None = None,
    encoder: Encoder | str | None = None,
    enable_writes: bool = False,
    enable_filter: bool = True,
    filter_fields: Sequence[str] | Mapping[str, str] | Literal["auto", "any"] | None = "auto",
    guard: Mapping[str, Any] | FilterNode | None = None,
    settings: SettingsInput = None,
    limits: ToolLimits | Mapping[str, Any] | None = None,
    score: Literal["distance", "similarity"] = "distance",
    models: ModelResolver | None = None,
    scorers: Mapping[str, RelevanceScorer] | None = None,
    principal_guards: Mapping[str, Mapping[str, Any] | FilterNode | None] | None = None,
    name: str = "turnkit",
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
) -> MCPServer:
    """Build an MCP server exposing ``vector_query`` and ``retrieve_contexts`` (read-only) over a store.

    docs/mcp.md describes every option; in short:

    Args:
        store: The store to serve (its encoder embeds queries). Or pass ``uri``.
        uri: Open the store at this URI instead.
        connect: With ``uri``: more `create_vector_store` arguments (``storage_options``, ``api_key``).
        encoder: With ``uri``: an `Encoder` or a spec (``"hash:64"``); default what the collections recorded.
        read_consistency_interval: With ``uri``: how often (seconds or a `timedelta`) a search
            looks for other processes' writes; ``0`` before every read, ``None`` never.
        collections: The collection(s) to expose; default all. With several, each tool takes ``collection``.
        enable_writes: Add the destructive ``store_documents`` and ``delete_documents`` tools.
        enable_filter: Let models send a metadata ``filter`` to ``vector_query``.
        filter_fields: ``"auto"`` (keys read inside the guard), a list or dict of keys, or ``"any"``.
        guard: A filter ANDed with every search and delete, that every stored record must satisfy.
        settings: `RetrievalSettings` (or a dict of its fields) for both tools.
        limits: `ToolLimits` (or a dict) for both tools.
        score: The ``retrieve_contexts`` score: raw ``"distance"`` or ``"similarity"``.
        models: Chat models by name, for ``ranking.llm_ranker.model_name``.
        scorers: Relevance scorers by name, for ``ranking.rank_service``.
        principal_guards: A guard per authenticated principal (the token's ``client_id``), ANDed
            with ``guard``; a call from any other principal is ``E_MCP_UNKNOWN_PRINCIPAL``.
        name: The server name reported to clients.
        log_level: The SDK's log level (logs go to stderr).

    Raises:
        MCPUsageError: ``E_INVALID_MCP_SERVER_CONFIG``: Conflicting or invalid options.
    """
    served, read_encoder = _open_store(store, uri, encoder, connect, read_consistency_interval)
    if collections is None:
        names = served.list_collections_sync()
        if not names:
            raise config_error(
                f"The store at {served.uri!r} has no collections.",
                option="collections",
                hint="Ingest documents first, or name the collection(s) to serve.",
            )
    else:
        names = [collections] if isinstance(collections, str) else list(collections)
        if not names or not all(isinstance(n, str) for n in names):
            raise config_error("collections must name at least one collection.", option="collections")
        for n in names:
            served(n)  # validates the name
        missing = [n for n in names if not served.has_collection_sync(n)]
        if missing:
            existing = served.list_collections_sync()
            raise config_error(
                f"No collection {missing[0]!r} in the store at {served.uri!r}.",
                option="collections",
                hint=f"Collections there: {', '.join(existing) or '(none)'}. Ingest into it first, "
                "or name an existing one.",
            )
    names = list(dict.fromkeys(names))
    if read_encoder:  # every name is a collection by now
        served.encoder = run_sync(recorded_encoder(served, names))
    if not isinstance(enable_writes, bool):
        raise config_error("enable_writes must be true or false.", option="enable_writes")
    guard = compile_guard(guard, option="guard")
    per_principal = _principal_guards(principal_guards)
    values, bounds = tool_settings(settings), ToolLimits.of(limits)

    auto = filter_fields is None or filter_fields == "auto"

    def query_tool(n: str, scope_guard: FilterNode | None, fields: Any = filter_fields) -> VectorQueryTool:
        return create_vector_query_tool(
            store=served,
            collection=n,
            id="vector_query",
            enable_filter=enable_filter,
            filter_fields=fields,
            guard=scope_guard,
            settings=values,
            models=models,
            limits=bounds,
        )

    def make_scope(scope_guard: FilterNode | None) -> Scope:
        return Scope(guard=scope_guard, query_tools={n: query_tool(n, scope_guard) for n in names})

    handlers = Tools(
        store=served,
        collections=names,
        make_scope=make_scope,
        guard=guard,
        principal_guards=per_principal,
        auto_listing=auto and enable_filter,
        retrieve=partial(
            retrieve_contexts,
            store=served,
            collection=names[0] if len(names) == 1 else None,
            allowed_collections=names,
            settings=values,
            score=score,
            models=models,
            scorers=scorers,
            limits=bounds,
        ),
    )
    # With one server-wide guard it is the whole boundary: the listing may show the keys and values
    # seen inside it. Per principal, the static listing shows no values (see _PerPrincipalServer).
    if per_principal is None:
        schema = run_sync(handlers.vector_query_schema())
        assert schema is not None
    else:
        # Before a principal is known, list no keys or values read from anyone's rows.
        schema = query_tool(names[0], guard, "any" if auto else filter_fields).input_schema
        if auto and "filter" in schema["properties"]:
            schema["properties"]["filter"]["description"] = filter_description(None)
        schema = with_collection(schema, names)
    tools = [
        make_tool(
            "vector_query",
            title="Search the knowledge base",
            description=f"{DEFAULT_DESCRIPTION}. Returns the matching chunks' text in relevant_context and "
            "their citations in sources.",
            schema=schema,
            annotations=READ_ONLY_ANNOTATIONS,
            handler=handlers.vector_query,
        ),
        make_tool(
            "retrieve_contexts",
            title="Retrieve contexts (Vertex RAG Engine shape)",
            description=f"{RETRIEVE_CONTEXTS_DESCRIPTION} Corpora (rag_corpus): {', '.join(names)}. "
            f"Each context's score is {_SCORE_TEXT[score]}.{_ranking_text(models, scorers)}",
            schema=RetrieveContextsRequest.model_json_schema(by_alias=False),
            annotations=READ_ONLY_ANNOTATIONS,
            handler=handlers.retrieve_contexts,
            output_schema=RetrieveContextsResponse.model_json_schema(by_alias=True),
        ),
    ]
    if enable_writes:
        tools += [
            make_tool(
                "store_documents",
                title="Store documents (destructive)",
                description="Insert or replace records by id in the knowledge base. Replacing overwrites the "
                "stored text and metadata.",
                schema=with_collection(STORE_SCHEMA, names),
                annotations=WRITE_ANNOTATIONS,
                handler=handlers.store_documents,
            ),
            make_tool(
                "delete_documents",
                title="Delete documents (destructive)",
                description="Delete records by id from the knowledge base. This cannot be undone.",
                schema=with_collection(DELETE_SCHEMA, names),
                annotations=WRITE_ANNOTATIONS,
                handler=handlers.delete_documents,
            ),
        ]
    instructions = (
        "Search turnkit's knowledge base with vector_query (Mastra-style) or retrieve_contexts "
        f"(Vertex-style). Collections: {', '.join(names)}."
    )
    if per_principal is None:
        return MCPServer(name, instructions=instructions, tools=list(tools), log_level=log_level)
    return _PerPrincipalServer(
        name, instructions=instructions, tools=list(tools), log_level=log_level, handlers=handlers
    )


def _principal_guards(value: Mapping[str, Any] | None) -> dict[str, FilterNode | None] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not value or not all(isinstance(k, str) and k for k in value):
        raise config_error(
            "principal_guards must map principal names to guards (None for no guard of its own).",
            option="principal_guards",
        )
    return {name: compile_guard(g, option=f"principal_guards[{name!r}]") for name, g in value.items()}
