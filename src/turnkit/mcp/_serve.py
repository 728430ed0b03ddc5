"""``serve``: run the MCP server over stdio or streamable HTTP (what ``turnkit serve`` calls)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import anyio

from turnkit._checks import is_int

from .._errors import TurnkitError
from ..batteries.vector import Encoder, FilterNode, SettingsInput, parse_filter_expression
from ._auth import Principal, TokenVerifier, is_loopback, load_principals
from ._errors import config_error
from ._http import HttpLimits, allowed_hosts, bracket, build_http_app, check_bind, describe_hosts, listen
from ._server import DEFAULT_READ_CONSISTENCY_INTERVAL, create_mcp_server
from ._stdio import DEFAULT_MAX_MESSAGE_BYTES, run_stdio

__all__ = ["ENV_TOKEN", "parse_filter_fields", "parse_guard", "serve"]

ENV_TOKEN = "TURNKIT_MCP_TOKEN"
"""The environment variable `serve` reads a bearer token from when none is given."""


def parse_guard(value: str | Mapping[str, Any] | FilterNode | None) -> Mapping[str, Any] | FilterNode | None:
    """A guard from the command line: a filter expression (``tenant = "acme"``) over metadata keys.

    Raises:
        MCPUsageError: ``E_INVALID_MCP_SERVER_CONFIG``: The expression is empty or does not parse.
    """
    if not isinstance(value, str):
        return value
    if not value.strip():
        raise config_error(
            "--guard is empty; it would allow every record.",
            option="guard",
            hint='Give a condition such as tenant = "acme", or leave --guard out.',
        )
    try:
        return parse_filter_expression(value, field_prefix="metadata.")
    except TurnkitError as exc:
        raise config_error(f"--guard does not parse: {exc.message}", option="guard", hint=exc.hint) from None


def parse_filter_fields(value: str | Sequence[str] | Mapping[str, str] | None) -> Any:
    """``"auto"``, ``"any"``, or comma-separated keys (``"kind,year"``) from the command line."""
    if not isinstance(value, str) or value in ("auto", "any"):
        return value
    keys = [k.strip() for k in value.split(",") if k.strip()]
    if not keys:
        raise config_error(
            "--filter-fields names no keys.",
            option="filter_fields",
            hint="Use auto, any, or keys such as kind,year.",
        )
    return keys


def serve(
    uri: str,
    collection: str | Sequence[str] | None = None,
    *,
    collections: Sequence[str] | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    enable_writes: bool = False,
    encoder: Encoder | str | None = None,
    settings: SettingsInput = None,
    guard: str | Mapping[str, Any] | FilterNode | None = None,
    filter_fields: str | Sequence[str] | Mapping[str, str] | None = "auto",
    enable_filter: bool = True,
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "WARNING",
    token: str | None = None,
    tokens_file: str | Path | None = None,
    allow_hosts: Sequence[str] = (),
    insecure_no_auth: bool = False,
    limits: HttpLimits | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    connect: Mapping[str, Any] | None = None,
    read_consistency_interval: timedelta | float | None = DEFAULT_READ_CONSISTENCY_INTERVAL,
) -> None:
    """Serve a store's collections over MCP until interrupted (blocking); docs/mcp.md describes every option.

    Args:
        uri: The store to open (a directory, ``s3://…``, ``db://…``).
        collection: One collection (or several) to expose; default all.
        collections: The same, for callers with a list.
        transport: ``"stdio"`` (a client launches this process) or ``"http"`` (streamable HTTP).
        host: HTTP interface; anything but loopback needs a token, or ``insecure_no_auth``.
        port: HTTP port; 0 picks a free one.
        path: HTTP endpoint path.
        enable_writes: Add the destructive write tools.
        encoder: An `Encoder` or a spec (``"hash:64"``); default what the collections recorded.
        settings: `RetrievalSettings` (or a dict of its fields) for both tools.
        guard: A filter expression over metadata keys (``'tenant = "acme"'``), a Mongo dict or a
            filter node, ANDed with every search and write.
        filter_fields: ``"auto"``, ``"any"``, comma-separated keys (``"kind,year"``), or a list.
        enable_filter: Let ``vector_query`` take a model ``filter``.
        log_level: Server log level; logs go to stderr, never stdout.
        token: HTTP bearer token of the principal ``default``; default the ``TURNKIT_MCP_TOKEN`` variable.
        tokens_file: A JSON or TOML file of principals and their guards (see `load_principals`).
        allow_hosts: Host names clients use, beyond the loopback names and ``host``.
        insecure_no_auth: Serve a non-loopback ``host`` with no token (something in front authenticates).
        limits: HTTP body and session limits (`HttpLimits`).
        max_message_bytes: Over stdio, a longer message is dropped (and logged).
        connect: More `create_vector_store` arguments for ``uri``.
        read_consistency_interval: How often a search looks for other processes' writes (seconds).

    Raises:
        MCPUsageError: ``E_INVALID_MCP_SERVER_CONFIG``: Bad options (checked before serving), or
            an address that cannot be bound (a port in use).
        MCPUsageError: ``E_MCP_INSECURE_BIND``: A non-loopback ``host`` without a token or
            ``insecure_no_auth``.
    """
    if collection is not None and collections is not None:
        raise config_error("Pass collection= or collections=, not both.", option="collections")
    if transport not in ("stdio", "http"):
        raise config_error(f"transport must be 'stdio' or 'http', got {transport!r}.", option="transport")
    if not is_int(port, 0, 65535):
        raise config_error(f"port must be in [0, 65535], got {port!r}.", option="port")
    if not isinstance(path, str) or not path.startswith("/"):
        raise config_error(f"path must start with '/', got {path!r}.", option="path")
    if not is_int(max_message_bytes, 1):
        raise config_error("max_message_bytes must be a positive integer.", option="max_message_bytes")
    token_source = "--token"
    if token is None:
        token, token_source = os.environ.get(ENV_TOKEN) or None, ENV_TOKEN
    principals = load_principals(token, tokens_file, token_source=token_source) if transport == "http" else []
    if transport == "http":
        check_bind(host, authenticated=bool(principals), insecure_no_auth=insecure_no_auth)
    guards = {p.name: parse_guard(p.guard) for p in principals} if tokens_file is not None else None
    server = create_mcp_server(
        uri=uri,
        connect=connect,
        read_consistency_interval=read_consistency_interval,
        collections=collections if collections is not None else collection,
        encoder=encoder,
        enable_writes=enable_writes,
        guard=parse_guard(guard),
        filter_fields=parse_filter_fields(filter_fields),
        enable_filter=enable_filter,
        settings=settings,
        principal_guards=guards,
        log_level=log_level,
    )
    if transport == "stdio":
        anyio.run(run_stdio, server, max_message_bytes)
        return
    import uvicorn  # a dependency of the mcp SDK

    app = build_http_app(
        server,
        path=path,
        bind=host,
        verifier=TokenVerifier(principals) if principals else None,
        extra_hosts=tuple(allow_hosts),
        limits=limits,
    )
    sock = listen(host, port)
    bound = sock.getsockname()[1]
    where = f"http://{bracket(host)}:{bound}{path}"
    hosts = describe_hosts(allowed_hosts(host, tuple(allow_hosts)))
    if host in ("0.0.0.0", "::", "") and not allow_hosts:
        hosts += "; clients that use another name need --allow-host NAME"
    auth = _auth_mode(principals, token_source if token is not None else None, tokens_file, host)
    for line in (f"serving MCP over HTTP at {where}", f"auth: {auth}", f"allowed hosts: {hosts}"):
        print(f"turnkit: {line}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=bound, log_level=log_level.lower())
    try:
        anyio.run(uvicorn.Server(config).serve, [sock])
    finally:
        sock.close()


def _auth_mode(
    principals: list[Principal], token_source: str | None, tokens_file: str | Path | None, host: str
) -> str:
    """How the server tells clients apart, for the line printed at start (never a token)."""
    if not principals:
        if is_loopback(host):
            return "none (loopback only; give a token to serve other machines)"
        return "none (--insecure-no-auth): anyone who can reach this address can use every tool"
    parts = [f"bearer token from {token_source}"] if token_source is not None else []
    if tokens_file is not None:
        from_file = principals[1:] if token_source is not None else principals  # the token's comes first
        parts.append(f"bearer tokens from {tokens_file} (principals: {', '.join(p.name for p in from_file)})")
    return "; ".join(parts)
