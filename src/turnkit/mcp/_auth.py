"""Bearer tokens for the HTTP server: who may connect, and the guard each principal runs with."""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AccessToken

from ._errors import MCPUsageError, config_error

__all__ = ["Principal", "TokenVerifier", "is_loopback", "load_principals"]

MIN_TOKEN_CHARS = 16
_SHA256 = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[A-Za-z0-9_.@-]{1,64}")
_TOKEN_HINT = "Make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"


@dataclass(frozen=True, slots=True)
class Principal:
    """One client identity: the SHA-256 of its token and its guard (``None``: the server's guard only)."""

    name: str
    digest: bytes
    guard: Mapping[str, Any] | str | None = None


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine (127.0.0.0/8, ::1, ``localhost``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # another name could resolve anywhere


def _digest(token: str, where: str) -> bytes:
    if not isinstance(token, str) or len(token) < MIN_TOKEN_CHARS or token != token.strip():
        raise config_error(
            f"{where}: a token must be a string of at least {MIN_TOKEN_CHARS} characters without "
            "surrounding spaces.",
            option="token",
            hint=_TOKEN_HINT,
        )
    return hashlib.sha256(token.encode()).digest()


def load_principals(
    token: str | None = None, tokens_file: str | Path | None = None, *, token_source: str = "--token"
) -> list[Principal]:
    """The principals of ``token`` (named ``default``) and of a tokens file (docs/mcp.md shows its format).

    A tokens file (JSON, or TOML when it ends in ``.toml``) maps principal names to ``token`` or
    ``token_sha256`` and an optional ``guard``. ``token_source`` names where ``token`` came from in
    the error a bad token raises.

    Raises:
        MCPUsageError: ``E_INVALID_MCP_SERVER_CONFIG``: A token is too short, the file cannot be
            read or parsed, or an entry is malformed or repeats a token.
    """
    out: list[Principal] = []
    if token is not None:
        out.append(Principal("default", _digest(token, token_source)))
    if tokens_file is not None:
        out += _read_file(Path(tokens_file))
    digests = [p.digest for p in out]
    if len(set(digests)) != len(digests):
        raise config_error(
            "Two principals share a token.", option="tokens_file", hint="Give every principal its own token."
        )
    return out


def _read_file(path: Path) -> list[Principal]:
    def bad(message: str) -> MCPUsageError:
        return config_error(
            f"Tokens file {str(path)!r}: {message}",
            option="tokens_file",
            hint='Expected {"principals": {"NAME": {"token_sha256": "<64 hex digits>", "guard": {...}}}} '
            "(JSON, or the same as TOML in a .toml file).",
        )

    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except OSError as exc:
        raise bad(f"cannot be read ({exc.strerror or exc}).") from None
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise bad(f"does not parse ({exc}).") from None
    entries = data.get("principals") if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not entries or set(data) != {"principals"}:
        raise bad("needs one top-level key, principals, naming at least one principal.")
    out: list[Principal] = []
    for name, entry in entries.items():
        if not _NAME.fullmatch(name):
            raise bad(f"principal name {name!r} must be 1 to 64 letters, digits or _.@-.")
        if not isinstance(entry, dict) or not set(entry) <= {"token", "token_sha256", "guard"}:
            raise bad(f"principal {name!r} takes token or token_sha256, and guard.")
        if ("token" in entry) == ("token_sha256" in entry):
            raise bad(f"principal {name!r} needs exactly one of token and token_sha256.")
        if "token" in entry:
            digest = _digest(entry["token"], f"principal {name!r}")
        else:
            hexed = entry["token_sha256"]
            if not isinstance(hexed, str) or not _SHA256.fullmatch(hexed.lower()):
                raise bad(f"principal {name!r}: token_sha256 must be 64 hex digits.")
            digest = bytes.fromhex(hexed)
        guard = entry.get("guard")
        if guard is not None and not isinstance(guard, dict | str):
            raise bad(f"principal {name!r}: guard must be an object or a filter expression.")
        out.append(Principal(name, digest, guard))
    return out


class TokenVerifier:
    """The SDK's ``TokenVerifier`` over fixed principals; every comparison is constant-time."""

    def __init__(self, principals: list[Principal]) -> None:
        self._entries = [(p.digest, p.name) for p in principals]

    async def verify_token(self, token: str) -> AccessToken | None:
        """The principal whose token this is (as ``client_id``), or ``None``."""
        digest = hashlib.sha256(token.encode("utf-8", "surrogateescape")).digest()
        found: str | None = None
        for expected, name in self._entries:  # no early exit: the time does not depend on which matched
            if hmac.compare_digest(expected, digest):
                found = name
        if found is None:
            return None
        return AccessToken(token=f"sha256:{digest.hex()}", client_id=found, scopes=[])
