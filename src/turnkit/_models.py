"""The chat-model protocol, a scripted model for tests, and an OpenAI-compatible adapter.

A model is anything with ``complete(messages) -> str`` (sync or async): messages
in, text out. Tool calls and streaming are deliberately outside this protocol;
the runner needs one reply per turn.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol, runtime_checkable

from ._aio import call_maybe_async, to_thread
from ._errors import ModelError, UsageError
from ._http import JsonEndpoint
from ._messages import ChatMessage

__all__ = ["ChatModel", "OpenAIChatModel", "ScriptedModel"]

_config_error = partial(UsageError, code="E_INVALID_MODEL_CONFIG")


@runtime_checkable
class ChatModel(Protocol):
    """What a `TurnRunner` needs from a model: rendered messages in, reply text out.

    ``complete`` may be a plain method or a coroutine. A sync ``complete`` runs
    in a worker thread, so a blocking HTTP client does not stall the event loop.

    Example:
        ```python
        class Echo:
            async def complete(self, messages):
                return messages[-1].content
        ```
    """

    def complete(self, messages: Sequence[ChatMessage], /) -> str | Awaitable[str]:
        """Return the assistant's reply to ``messages``."""
        ...


Reply = str | Callable[[Sequence[ChatMessage]], str | Awaitable[str]]


class ScriptedModel:
    """A deterministic model for tests and examples.

    Args:
        replies: Either a sequence whose items are used one per call (a string,
            or a function of the messages returning the reply), or a single
            function of the messages used for every call.

    Attributes:
        calls: The messages of every call so far, in order.

    Example:
        ```python
        model = ScriptedModel(["first reply", lambda msgs: f"you said {msgs[-1].content}"])
        ```
    """

    def __init__(self, replies: Sequence[Reply] | Callable[[Sequence[ChatMessage]], str | Awaitable[str]]):
        if isinstance(replies, str):
            # A bare string is a sequence of characters: almost certainly a mistake.
            raise _config_error(
                "ScriptedModel takes a list of replies, not a single string.",
                hint=f"Write ScriptedModel([{replies!r}]).",
            )
        self._fixed = replies if callable(replies) else None
        self._queue: list[Reply] = [] if callable(replies) else list(replies)
        self.calls: list[tuple[ChatMessage, ...]] = []

    async def complete(self, messages: Sequence[ChatMessage], /) -> str:
        """Return the next scripted reply.

        Raises:
            ModelError: the script ran out of replies, or a reply function did
                not return a string.
        """
        self.calls.append(tuple(messages))
        if self._fixed is not None:
            reply: Reply = self._fixed
        elif self._queue:
            reply = self._queue.pop(0)
        else:
            raise ModelError(
                f"ScriptedModel ran out of replies after {len(self.calls) - 1} call(s).",
                hint="Give ScriptedModel one reply per expected turn.",
            )
        text = await call_maybe_async(reply, tuple(messages)) if callable(reply) else reply
        if not isinstance(text, str):
            raise ModelError(f"A ScriptedModel reply function returned {type(text).__name__}, not str.")
        return text


class OpenAIChatModel:
    """An adapter for any OpenAI-compatible ``/chat/completions`` endpoint.

    Works with OpenAI, Azure-style gateways, vLLM, llama.cpp's server, Ollama's
    ``/v1`` API and similar. Uses only the standard library (``urllib``) in a
    worker thread; there are no retries, so wrap it if you want them.

    Args:
        model: The model name sent in the request.
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"``.
        api_key: Sent as ``Authorization: Bearer …`` when given.
        timeout: Seconds to wait for the whole response.
        temperature: Sent when given.
        extra_body: Extra JSON fields merged into every request body.
        headers: Extra HTTP headers.

    Raises:
        UsageError: ``E_INVALID_MODEL_CONFIG``: ``model`` is empty, ``base_url`` is not an
            ``http(s)`` URL, or ``timeout`` is not positive.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        timeout: float = 60.0,
        temperature: float | None = None,
        extra_body: Mapping[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._api = JsonEndpoint.checked(
            base_url, model=model, api_key=api_key, headers=headers, timeout=timeout, error=_config_error
        )
        self.model = model
        self.base_url = self._api.base_url
        self.timeout = self._api.timeout
        self.temperature = temperature
        self.extra_body = dict(extra_body or {})

    @classmethod
    def from_env(cls, **overrides: Any) -> OpenAIChatModel:
        """Build an adapter from environment variables.

        Reads ``TURNKIT_MODEL`` (required; falls back to ``OPENAI_MODEL``),
        ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``) and
        ``OPENAI_API_KEY`` (optional, for local servers). Keyword arguments
        override what the environment says.

        Raises:
            UsageError: ``E_INVALID_MODEL_CONFIG``: no model name is set.
        """
        env = os.environ
        model = overrides.pop("model", None) or env.get("TURNKIT_MODEL") or env.get("OPENAI_MODEL")
        if not model:
            raise _config_error("No model name: set TURNKIT_MODEL (or pass model=...).", field="model")
        overrides.setdefault("base_url", env.get("OPENAI_BASE_URL") or "https://api.openai.com/v1")
        overrides.setdefault("api_key", env.get("OPENAI_API_KEY") or None)
        return cls(model, **overrides)

    def __repr__(self) -> str:
        # Never print the key.
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    async def complete(self, messages: Sequence[ChatMessage], /) -> str:
        """Send ``messages`` and return the first choice's text.

        Raises:
            ModelError: the endpoint could not be reached, answered with an
                HTTP error (``status`` is set), or sent a body that is not a
                chat completion.
        """
        body: dict[str, Any] = {"model": self.model, "messages": [m.to_dict() for m in messages]}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        body.update(self.extra_body)
        raw = await to_thread(self._post, json.dumps(body).encode())
        return self._parse(raw)

    def _post(self, data: bytes) -> bytes:
        path = "/chat/completions"
        return self._api.post(
            path, data, endpoint="model endpoint", error=ModelError, url=self.base_url + path
        )

    def _parse(self, raw: bytes) -> str:
        try:
            payload = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ModelError(
                f"The model endpoint sent a body that is not JSON: {_excerpt(raw)}",
                hint="Check that base_url points at an OpenAI-compatible API (usually ending in /v1).",
            ) from exc
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError) as exc:
            raise ModelError(
                f"The model endpoint sent JSON without choices[0].message.content: {_excerpt(raw)}",
                hint="Check that the endpoint implements /chat/completions.",
            ) from exc
        if not isinstance(content, str):
            raise ModelError(
                "The model returned no text (content is not a string; a refusal or tool call?).",
                hint="turnkit's model protocol expects a text reply.",
            )
        return content


def _excerpt(raw: bytes, limit: int = 200) -> str:
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "…")
