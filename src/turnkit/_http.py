"""One JSON POST over urllib for the OpenAI-compatible clients (chat model, embeddings).

Stdlib only, so the core needs no HTTP dependency. A failure is raised as the
caller's own error (`ModelError`, or `VectorStoreRuntimeError` with code
E_VECTOR_STORE_ENCODER_FAILED), worded here.
"""

from __future__ import annotations

import functools
import json
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._checks import is_number
from ._errors import HttpStatusError, HttpUnreachableError, TurnkitError

__all__ = ["JsonEndpoint", "error_detail", "status_hint"]

_REDIRECT_HINT = "The endpoint redirects; set base_url to where it points (redirects are not followed)."
_STATUS_HINTS = {
    400: "The endpoint rejected the request; check the model name and the request format.",
    401: "Check the API key (OPENAI_API_KEY).",
    403: "The key is not allowed to use this model or endpoint.",
    404: "Check base_url (it usually ends in /v1) and the model name.",
    **dict.fromkeys((301, 302, 307, 308), _REDIRECT_HINT),
    429: "Rate limited or out of quota; retry later or send fewer requests.",
}


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


@dataclass(frozen=True, slots=True)
class JsonEndpoint:
    """An OpenAI-compatible API: its base URL, key, extra headers and timeout (checked once)."""

    base_url: str
    api_key: str | None = field(repr=False)  # never printed
    headers: Mapping[str, str]
    timeout: float

    @classmethod
    def checked(
        cls,
        base_url: Any,
        *,
        model: Any,
        api_key: str | None,
        headers: Mapping[str, str] | None,
        timeout: Any,
        error: Callable[..., TurnkitError],
    ) -> JsonEndpoint:
        """The endpoint, or ``error`` naming the bad ``model``, ``base_url`` or ``timeout``."""
        if not isinstance(model, str) or not model.strip():
            raise error(f"model must be a non-empty model name, got {model!r}.", field="model")
        parsed = urllib.parse.urlsplit(base_url) if isinstance(base_url, str) else None
        # urllib also opens file:// and ftp:// URLs; an API endpoint is only ever http(s).
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise error(f"base_url must be an http(s) URL, got {base_url!r}.", field="base_url")
        if not is_number(timeout, finite=False) or not timeout > 0:
            raise error(f"timeout must be a positive number, got {timeout!r}.", field="timeout")
        return cls(base_url.rstrip("/"), api_key, dict(headers or {}), float(timeout))

    def post(
        self, path: str, data: bytes, *, endpoint: str, error: Callable[..., TurnkitError], **context: Any
    ) -> bytes:
        """POST ``data`` (JSON) to ``base_url + path`` and return the response body.

        ``timeout`` bounds the whole exchange (connecting, each read, and the body as
        a whole); redirects are refused.

        Raises:
            TurnkitError: ``error``, naming the ``endpoint`` (``"model endpoint"``),
                with ``status`` (``None`` when nothing answered) and ``context``.
        """
        url = self.base_url + path
        try:
            return _post(url, data, headers=self.headers, api_key=self.api_key, timeout=self.timeout)
        except HttpStatusError as exc:
            raise error(
                f"The {endpoint} answered HTTP {exc.status}: {exc.detail}",
                hint=status_hint(exc.status),
                status=exc.status,
                **context,
            ) from exc
        except HttpUnreachableError as exc:
            raise error(
                f"Could not reach the {endpoint} {url}: {exc.reason}",
                hint="Check base_url and that the server is running.",
                status=None,
                **context,
            ) from exc


def _post(url: str, data: bytes, *, headers: Mapping[str, str], api_key: str | None, timeout: float) -> bytes:
    # Imported here: urllib.request costs ~30 ms and `import turnkit` stays light.
    import http.client
    import urllib.error
    import urllib.request

    all_headers = {"Content-Type": "application/json", "Accept": "application/json", **headers}
    if api_key:
        all_headers["Authorization"] = f"Bearer {api_key}"
    request = urllib.request.Request(url, data=data, headers=all_headers, method="POST")
    try:
        # No redirects: urllib would replay the bearer key to another host and
        # turn the POST into a GET whose answer would pass for the reply.
        deadline = time.monotonic() + timeout
        with urllib.request.build_opener(_no_redirect_handler()).open(request, timeout=timeout) as response:
            # urllib's timeout bounds each socket read, not the response: a server
            # dripping bytes would never time out. Read in pieces against a deadline.
            parts: list[bytes] = []
            while chunk := response.read1(65536):
                parts.append(chunk)
                if time.monotonic() > deadline:
                    raise HttpUnreachableError(f"no complete response within {timeout:g} s", url)
            if getattr(response, "length", None):  # bytes the Content-Length promised but never came
                raise HttpUnreachableError("the response ended before its Content-Length", url)
            return b"".join(parts)
    except urllib.error.HTTPError as exc:
        try:
            detail = error_detail(exc.read())
        finally:
            exc.close()  # the error carries the open response; do not leak its socket
        raise HttpStatusError(exc.code, detail, url) from exc
    except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as exc:
        # HTTPException: a truncated or malformed response (IncompleteRead, BadStatusLine…).
        raise HttpUnreachableError(getattr(exc, "reason", None) or repr(exc), url) from exc


@functools.cache  # one class per process; urllib is imported on first use only
def _no_redirect_handler() -> type:
    import urllib.request

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
            return None  # urllib then raises HTTPError with the 3xx status

    return NoRedirect
