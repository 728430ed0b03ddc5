"""Printing: one-line errors, JSON for scripts, short labels for records."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from .._errors import TurnkitError

__all__ = ["emit_json", "error_payload", "one_line", "print_error", "source_label"]


def one_line(text: str, limit: int | None = None) -> str:
    """Collapse whitespace so ``text`` fits one line; cut it at ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    if limit is not None and len(flat) > limit:
        return flat[: max(limit - 1, 0)].rstrip() + "…"
    return flat


# Hints written for Python callers name arguments a command-line user cannot pass; say what they can do.
_OBJECT_STORE_HINT = (
    "Check --uri. Pass --storage-option KEY=VALUE (endpoint, region, allow_http, credentials) "
    "or set the AWS_*/GOOGLE_*/AZURE_* variables (docs/cli.md)."
)
_CLOUD_HINT = "Check --uri, and pass --api-key or set LANCEDB_API_KEY (and --region or LANCEDB_REGION)."
_LOCAL_HINT = (
    "Check --uri (or TURNKIT_URI): a local database is a folder that turnkit can create and write, "
    "so its parent folder must exist and be writable."
)


def error_payload(exc: BaseException) -> dict[str, Any]:
    """The JSON form of an error: ``code``, ``message``, ``hint`` (and context for turnkit errors)."""
    if isinstance(exc, TurnkitError):
        payload = exc.to_dict()
        if payload["code"] == "E_VECTOR_STORE_CONNECTION_FAILED":
            # Storage options and AWS_* matter only for object stores; a local path gets its own advice.
            uri = str(payload.get("uri") or "")
            if uri.startswith("db://"):
                payload["hint"] = _CLOUD_HINT
            elif "://" in uri and not uri.startswith(("file://", "memory://")):
                payload["hint"] = _OBJECT_STORE_HINT
            else:
                payload["hint"] = _LOCAL_HINT
        return payload
    return {
        "code": "E_UNEXPECTED",
        "message": f"{type(exc).__name__}: {exc}",
        "hint": "Re-run with --debug for the traceback; it is a bug if the message does not explain it.",
    }


def print_error(exc: BaseException) -> None:
    """Print an error as the single line ``turnkit: error: [CODE] message Hint: hint`` on stderr."""
    payload = error_payload(exc)
    text = f"[{payload['code']}] {one_line(str(payload['message']))}"
    if payload.get("hint"):
        text += f" Hint: {one_line(str(payload['hint']))}"
    print(f"turnkit: error: {text}", file=sys.stderr)


def emit_json(value: Any) -> None:
    """Write ``value`` to stdout as indented JSON (dates and paths become strings)."""
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def source_label(metadata: Mapping[str, Any] | None, record_id: str) -> str:
    """Where a record came from, as the retrieval glue names it (file, section, PDF pages), or its id."""
    from ..batteries.vector import source_of  # imported here: `turnkit --help` loads no battery

    return source_of(metadata or {}) or record_id
