"""Streamable HTTP that can face a network: bearer tokens, a Host/Origin allow-list, session limits.

Layers, outermost first: the SDK's bearer authentication (``BearerAuthBackend``,
``AuthContextMiddleware``, ``RequireAuthMiddleware``: 401 with
``WWW-Authenticate: Bearer``), then `SessionLimits` (per-client and global
session caps that evict idle sessions instead of refusing everyone), then the
SDK's own app (body cap with 413, Host/Origin checks with 421/403).
"""

from __future__ import annotations

import logging
import socket
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend, RequireAuthMiddleware
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from turnkit._checks import is_int, is_number

from ._auth import TokenVerifier, is_loopback
from ._errors import MCPUsageError, config_error

__all__ = [
    "HttpLimits",
    "SessionLimits",
    "allowed_hosts",
    "bracket",
    "build_http_app",
    "describe_hosts",
    "listen",
]

log = logging.getLogger("turnkit.mcp")


_SESSION_HEADER = b"mcp-session-id"


@dataclass(frozen=True, slots=True)
class HttpLimits:
    """Bounds on what HTTP clients can make the server hold (docs/mcp.md says what happens at each).

    Attributes:
        max_body_bytes: A larger request body is refused with 413.
        max_sessions: Open sessions in all; at the cap an idle one is ended, else 503.
        max_sessions_per_client: Open sessions per principal (per address without tokens); at the
            cap the client's own idle session is ended, else 429.
        idle_timeout: Seconds a session may go without a request before it ends.
        uninitialized_timeout: Seconds a session silent after ``initialize`` is kept when room is needed.
    """

    max_body_bytes: int = 4 * 1024 * 1024
    max_sessions: int = 1000
    max_sessions_per_client: int = 32
    idle_timeout: float = 30 * 60
    uninitialized_timeout: float = 30.0

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_sessions", "max_sessions_per_client"):
            value = getattr(self, name)
            if not is_int(value, 1):
                raise config_error(f"{name} must be a positive integer, got {value!r}.", option=name)
        for name in ("idle_timeout", "uninitialized_timeout"):
            value = getattr(self, name)
            if not (is_number(value) and value > 0):
                raise config_error(f"{name} must be a positive number of seconds.", option=name)
        if self.max_sessions_per_client > self.max_sessions:
            raise config_error(
                "max_sessions_per_client cannot exceed max_sessions.", option="max_sessions_per_client"
            )


def bracket(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 address in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(bind: str, extra: list[str] | tuple[str, ...] = ()) -> TransportSecuritySettings:
    """Host/Origin checking for any bind address: loopback names, the bind host, and ``extra``.

    An entry with a port (``kb.example.com:443``) allows that port only; without one, any port.
    """
    names = ["127.0.0.1", "localhost", "[::1]"]
    if bind not in ("0.0.0.0", "::", ""):
        names.append(bracket(bind))
    hosts: list[str] = []
    for raw in [*names, *extra]:
        entry = raw.strip()
        if not entry or "/" in entry or "*" in entry or any(c.isspace() for c in entry):
            raise config_error(
                f"--allow-host {raw!r} is not a host name.",
                option="allow_hosts",
                hint="Give a name or address as clients write it, e.g. kb.example.com or 10.0.0.5:8765.",
            )
        entry = entry.lower()
        has_port = (
            entry.rsplit("]", 1)[-1].count(":") == 1 if entry.startswith("[") else entry.count(":") == 1
        )
        if not has_port:
            entry = bracket(entry)
        hosts += [entry] if has_port else [entry, f"{entry}:*"]
    hosts = list(dict.fromkeys(hosts))
    origins = [f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


def describe_hosts(settings: TransportSecuritySettings) -> str:
    """The allow-list as people read it: ``127.0.0.1, localhost, [::1] (any port); kb.example.com:443``."""
    hosts = settings.allowed_hosts
    any_port = [h[: -len(":*")] for h in hosts if h.endswith(":*")]
    pinned = [h for h in hosts if not h.endswith(":*") and h not in any_port]
    return ", ".join(any_port) + " (any port)" + ("; " + ", ".join(pinned) if pinned else "")


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on ``host:port`` (port 0: a free one), bound here so the address printed is real.

    Raises:
        MCPUsageError: ``E_INVALID_MCP_SERVER_CONFIG``: The address cannot be bound (in use, not ours).
    """
    bare = host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in bare else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bare, port))
        sock.listen(2048)  # uvicorn's backlog; a client that connects as soon as the address is printed waits
    except OSError as exc:
        sock.close()
        raise config_error(
            f"Cannot listen on {bracket(bare)}:{port}: {exc.strerror or exc}.",
            option="port",
            hint="Pick another --port (--port 0 picks a free one), or stop the program using it; "
            "--host must be an address of this machine.",
        ) from None
    return sock


@dataclass(slots=True)
class _Session:
    key: str
    template: dict[str, Any]
    last: float
    requests: int = 1
    in_flight: int = 0


class SessionLimits:
    """An ASGI layer in front of the SDK's session manager that keeps floods from locking others out.

    It watches which requests open sessions (the ``Mcp-Session-Id`` a response
    carries) and which use them. Room for a new session is made by ending
    idle ones with the protocol's own ``DELETE``, so the SDK forgets them too.
    """

    def __init__(self, app: ASGIApp, limits: HttpLimits) -> None:
        self.app = app
        self.limits = limits
        self._sessions: dict[str, _Session] = {}
        self._pending: Counter[str] = Counter()  # sessions each client is opening now

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sid = dict(scope["headers"]).get(_SESSION_HEADER)
        if sid is not None:
            await self._existing(sid.decode("latin-1"), scope, receive, send)
        elif scope["method"] == "POST":
            await self._opening(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _existing(self, sid: str, scope: Scope, receive: Receive, send: Send) -> None:
        session = self._sessions.get(sid)
        if session is None or session.key != _client_key(scope):
            await self.app(scope, receive, send)  # the SDK answers 404 (another principal's id too)
            return
        session.requests += 1
        session.in_flight += 1
        start: Message = {}
        try:
            await self.app(scope, receive, _watching(send, start))
        finally:
            session.in_flight -= 1
            session.last = time.monotonic()
            status = start.get("status", 0)
            if status == 404 or (scope["method"] == "DELETE" and 200 <= status < 300):
                self._sessions.pop(sid, None)

    async def _opening(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = _client_key(scope)
        victims, refusal = self._admit(key)
        for sid, victim in victims:
            await self._end(sid, victim)
        if refusal is not None:
            await _refuse(refusal, send)
            return
        template = dict(scope)
        start: Message = {}
        self._pending[key] += 1
        try:
            await self.app(scope, receive, _watching(send, start))
        finally:
            self._pending[key] -= 1
            opened = [
                v.decode("latin-1") for k, v in start.get("headers", []) if k.lower() == _SESSION_HEADER
            ]
            if opened and start.get("status", 0) < 400:
                self._sessions[opened[0]] = _Session(key, template, time.monotonic())

    def _admit(self, key: str) -> tuple[list[tuple[str, _Session]], int | None]:
        """Sessions to end (already forgotten here) and, if no room can be made, the status to refuse with."""
        now, lim, table = time.monotonic(), self.limits, self._sessions
        victims = [
            (sid, s)
            for sid, s in table.items()
            if not s.in_flight
            and now - s.last > (lim.uninitialized_timeout if s.requests == 1 else lim.idle_timeout)
        ]

        def evict(candidates: list[tuple[str, _Session]]) -> bool:
            idle = [c for c in candidates if not c[1].in_flight]
            if not idle:
                return False
            # Never-used sessions go first, then the least recently used.
            sid, s = min(idle, key=lambda c: (c[1].requests > 1, c[1].last))
            victims.append((sid, s))
            del table[sid]
            return True

        for sid, _ in victims:
            del table[sid]
        mine = [(sid, s) for sid, s in table.items() if s.key == key]
        if len(mine) + self._pending[key] >= lim.max_sessions_per_client and not evict(mine):
            return victims, 429
        if len(table) + sum(self._pending.values()) >= lim.max_sessions and not evict(list(table.items())):
            return victims, 503
        return victims, None

    async def _end(self, sid: str, session: _Session) -> None:
        """End a session the way a client would (DELETE), as the principal that opened it."""
        headers = [(k, v) for k, v in session.template["headers"] if k.lower() == b"host"]
        scope = {
            **session.template,
            "method": "DELETE",
            "headers": [*headers, (_SESSION_HEADER, sid.encode())],
        }
        sent = False

        async def receive() -> Message:
            nonlocal sent
            if sent:
                return {"type": "http.disconnect"}
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}

        async def discard(message: Message) -> None:
            return None

        log.info("Ending session %s (%s) to make room", sid[:8], session.key)
        try:
            await self.app(scope, receive, discard)
        except Exception:  # pragma: no cover - the session is forgotten either way
            log.exception("Ending session %s failed", sid[:8])


def _watching(send: Send, start: Message) -> Send:
    """``send``, keeping a copy of the response's start message (status, headers) in ``start``."""

    async def watch(message: Message) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        await send(message)

    return watch


def _client_key(scope: Scope) -> str:
    """Whose session this is: the principal, or without authentication the client's address."""
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return f"principal:{user.access_token.client_id}"
    client = scope.get("client")
    return f"address:{client[0] if client else '?'}"


async def _refuse(status: int, send: Send) -> None:
    message = b"Too many open sessions for this client" if status == 429 else b"Too many open sessions"
    body = b'{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"' + message + b'"}}'
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"retry-after", b"5"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def build_http_app(
    server: MCPServer[Any],
    *,
    path: str,
    bind: str,
    verifier: TokenVerifier | None,
    extra_hosts: list[str] | tuple[str, ...] = (),
    limits: HttpLimits | None = None,
) -> ASGIApp:
    """The ASGI app for ``serve(transport="http")``."""
    lim = limits or HttpLimits()
    inner = server.streamable_http_app(
        streamable_http_path=path,
        max_request_body_size=lim.max_body_bytes,
        session_idle_timeout=lim.idle_timeout,
        # A backstop only: SessionLimits keeps the count at max_sessions by eviction.
        max_sessions=lim.max_sessions * 2,
        transport_security=allowed_hosts(bind, extra_hosts),
        host=bind,
    )
    sessions = SessionLimits(inner, lim)
    if verifier is None:
        return sessions
    guarded = RequireAuthMiddleware(AuthContextMiddleware(sessions), [])

    async def required(scope: Scope, receive: Receive, send: Send) -> None:
        # HTTP requests need a token; the lifespan does not.
        await (guarded if scope["type"] == "http" else sessions)(scope, receive, send)

    return AuthenticationMiddleware(required, backend=BearerAuthBackend(verifier))


def check_bind(host: str, *, authenticated: bool, insecure_no_auth: bool) -> None:
    """Refuse a non-loopback bind without authentication, unless told it is handled in front.

    Raises:
        MCPUsageError: ``E_MCP_INSECURE_BIND``: ``host`` is not loopback and there is no token.
    """
    if authenticated or is_loopback(host):
        return
    if not insecure_no_auth:
        raise MCPUsageError(
            f"Refusing to serve {host!r} without authentication: "
            "anyone who can reach it could read the store.",
            code="E_MCP_INSECURE_BIND",
        )
    log.warning(
        "Serving %s over HTTP with no authentication (--insecure-no-auth): anyone who can reach it can "
        "use every tool.",
        host,
    )
