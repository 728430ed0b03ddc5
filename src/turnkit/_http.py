"""One JSON POST over urllib for the OpenAI-compatible clients (chat model, embeddings).

Stdlib only, so the core needs no HTTP dependency. Callers turn the two
failures into their own error class (`ModelError`, `EncoderFailedError`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["HttpStatusError", "HttpUnreachableError", "error_detail", "post_json", "status_hint"]

_STATUS_HINTS = {
    400: "The endpoint rejected the request; check the model name and the request format.",
    401: "Check the API key (OPENAI_API_KEY).",
    403: "The key is not allowed to use this model or endpoint.",
    404: "Check base_url (it usually ends in /v1) and the model name.",
    429: "Rate limited or out of quota; retry later or send fewer requests.",
}


class HttpStatusError(Exception):
    """The server answered with an error status."""

    def __init__(self, status: int, detail: str, url: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail, self.url = status, detail, url


class HttpUnreachableError(Exception):
    """No answer: connection refused, DNS failure, timeout."""

    def __init__(self, reason: object, url: str) -> None:
        super().__init__(str(reason))
        self.reason, self.url = reason, url


def status_hint(status: int) -> str:
    """What to check for an HTTP error status."""
    return _STATUS_HINTS.get(status, "The server failed; retry later." if status >= 500 else "")


def error_detail(raw: bytes, limit: int = 300) -> str:
    """The message of an OpenAI-style error body (``{"error": {"message": …}}``), else an excerpt."""
    try:
        message = json.loads(raw)["error"]["message"]
        if isinstance(message, str):
            return message
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        pass
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "…")


def post_json(
    url: str, data: bytes, *, headers: Mapping[str, str], api_key: str | None, timeout: float
) -> bytes:
    """POST ``data`` (JSON) and return the response body; raises the two errors above."""
    # Imported here: urllib.request costs ~30 ms and `import turnkit` stays light.
    import urllib.error
    import urllib.request

    all_headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
    if api_key:
        all_headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=data, headers=all_headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            payload: bytes = response.read()
            return payload
    except urllib.error.HTTPError as exc:
        try:
            detail = error_detail(exc.read())
        finally:
            exc.close()  # the error carries the open response; do not leak its socket
        raise HttpStatusError(exc.code, detail, url) from exc
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise HttpUnreachableError(getattr(exc, "reason", exc), url) from exc
