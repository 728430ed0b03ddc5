"""``serve``: run the MCP server over stdio or streamable HTTP (what ``turnkit serve`` calls)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import anyio

from ..batteries.vector import Encoder
from ._errors import InvalidMCPServerConfigError
from ._server import create_mcp_server

__all__ = ["serve"]

Transport = Literal["stdio", "http"]


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
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
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
        log_level: Server log level; logs go to stderr, never stdout.

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
        collections=collections if collections is not None else collection,
        encoder=encoder,
        enable_writes=enable_writes,
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
