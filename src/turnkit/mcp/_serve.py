"""``serve``: run the MCP server over stdio or streamable HTTP (what ``turnkit serve`` calls)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import anyio

from .._errors import TurnkitError
from ..batteries.vector import Encoder, FilterNode, parse_filter_expression
from ._errors import InvalidMCPServerConfigError
from ._server import create_mcp_server

__all__ = ["parse_filter_fields", "parse_guard", "serve"]

Transport = Literal["stdio", "http"]


def parse_guard(value: str | Mapping[str, Any] | FilterNode | None) -> Mapping[str, Any] | FilterNode | None:
    """A guard from the command line: a filter expression (``tenant = "acme"``) over metadata keys.

    Raises:
        InvalidMCPServerConfigError: The expression is empty or does not parse.
    """
    if not isinstance(value, str):
        return value
    if not value.strip():
        raise InvalidMCPServerConfigError(
            "--guard is empty; it would allow every record.",
            hint='Give a condition such as tenant = "acme", or leave --guard out.',
            option="guard",
        )
    try:
        return parse_filter_expression(value, field_prefix="metadata.")
    except TurnkitError as exc:
        raise InvalidMCPServerConfigError(
            f"--guard does not parse: {exc.message}", hint=exc.hint, option="guard"
        ) from None


def parse_filter_fields(value: str | Sequence[str] | Mapping[str, str] | None) -> Any:
    """``"auto"``, ``"any"``, or comma-separated keys (``"kind,year"``) from the command line."""
    if not isinstance(value, str) or value in ("auto", "any"):
        return value
    keys = [k.strip() for k in value.split(",") if k.strip()]
    if not keys:
        raise InvalidMCPServerConfigError(
            "--filter-fields names no keys.",
            hint="Use auto, any, or keys such as kind,year.",
            option="filter_fields",
        )
    return keys


def serve(
    uri: str,
    collection: str | Sequence[str] | None = None,
    *,
    collections: Sequence[str] | None = None,
    transport: Transport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    enable_writes: bool = False,
    encoder: Encoder | str | None = None,
    hybrid: float | None = None,
    rerank: bool = False,
    guard: str | Mapping[str, Any] | FilterNode | None = None,
    filter_fields: str | Sequence[str] | Mapping[str, str] | None = "auto",
    enable_filter: bool = True,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
    connect: Mapping[str, Any] | None = None,
) -> None:
    """Serve a store's collections over MCP until interrupted (blocking).

    Args:
        uri: The store to open (a directory, ``s3://…``, ``db://…``).
        collection: One collection (or several) to expose; default all.
        collections: Same as ``collection``, for callers with a list.
        transport: ``"stdio"`` (a client launches this process) or ``"http"``
            (streamable HTTP at ``http://{host}:{port}{path}``).
        host: HTTP interface; loopback by default. Binding anything else
            exposes the store to the network: put authentication in front.
        port: HTTP port.
        path: HTTP endpoint path.
        enable_writes: Add the destructive ``store_documents`` and
            ``delete_documents`` tools.
        encoder: An `Encoder` or a spec (``"hash:64"``, ``"wordllama"``);
            default the encoder the collections recorded.
        hybrid: When set, ``vector_query`` uses hybrid search with this ``alpha``.
        rerank: ``vector_query`` over-fetches and reranks with the offline
            scorer and the default weights, keeping the call's ``top_k``.
        guard: A guard filter ANDed with every search (and write): a filter
            expression over metadata keys (``'tenant = "acme"'``, the
            ``retrieve_contexts`` grammar), a Mongo dict or a filter node.
            Never shown to clients.
        filter_fields: ``"auto"`` (keys read from the collections inside the
            guard), ``"any"``, comma-separated keys (``"kind,year"``), or a list.
        enable_filter: Let ``vector_query`` take a model ``filter``.
        log_level: Server log level; logs go to stderr, never stdout.
        connect: More `create_vector_store` arguments for ``uri``
            (``storage_options``, ``api_key``, ``region``).

    Raises:
        InvalidMCPServerConfigError: Bad options (checked before serving).
    """
    if collection is not None and collections is not None:
        raise InvalidMCPServerConfigError("Pass collection= or collections=, not both.", option="collections")
    if transport not in ("stdio", "http"):
        raise InvalidMCPServerConfigError(
            f"transport must be 'stdio' or 'http', got {transport!r}.", option="transport"
        )
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InvalidMCPServerConfigError(f"port must be in [0, 65535], got {port!r}.", option="port")
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidMCPServerConfigError(f"path must start with '/', got {path!r}.", option="path")
    server = create_mcp_server(
        uri=uri,
        connect=connect,
        collections=collections if collections is not None else collection,
        encoder=encoder,
        enable_writes=enable_writes,
        guard_filter=parse_guard(guard),
        filter_fields=parse_filter_fields(filter_fields),
        enable_filter=enable_filter,
        hybrid=hybrid,
        # The call's top_k decides how many results come back, not Mastra's default of 3.
        reranker={"top_k": 1000} if rerank else None,
        log_level=log_level,
    )
    if transport == "stdio":
        anyio.run(server.run_stdio_async)
    else:

        async def run_http() -> None:
            await server.run_streamable_http_async(host=host, port=port, streamable_http_path=path)

        anyio.run(run_http)
