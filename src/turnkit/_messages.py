"""Conversation messages, the chat messages a model receives, and the default store."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Annotated, Any, Literal, Self

from pydantic import AfterValidator, AwareDatetime, ConfigDict, Field, JsonValue, StrictStr, model_validator

from ._errors import UsageError
from ._validation import CheckedModel

if TYPE_CHECKING:
    from ._context import TurnContext

__all__ = ["ChatMessage", "InMemoryMessageStore", "Message", "MessageRole", "UtcDatetime"]

MessageRole = Literal["system", "user", "assistant"]
"""Who wrote a message."""

UtcDatetime = Annotated[AwareDatetime, AfterValidator(lambda value: value.astimezone(UTC))]
"""An aware datetime kept in UTC (one zone keeps dumps, comparisons and rendered attributes stable)."""


class Message(CheckedModel):
    """One message of a conversation, as stored by the message callbacks.

    Example:
        ```python
        m = Message(role="user", content="How long do refunds take?")
        ```

    Raises:
        UsageError: ``E_INVALID_MESSAGE``: a field is missing or invalid (the message names it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    invalid_error = partial(UsageError, code="E_INVALID_MESSAGE")

    role: MessageRole
    """``"system"``, ``"user"`` or ``"assistant"``."""
    content: StrictStr
    """The text of the message."""
    id: StrictStr = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1)
    """A unique id (a random hex uuid unless given)."""
    created_at: UtcDatetime = Field(default_factory=lambda: datetime.now(UTC))
    """When the message was written (aware; ISO strings and epoch seconds accepted)."""
    updated_at: UtcDatetime | None = None
    """When it last changed; defaults to ``created_at``."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """JSON-compatible extra data (treat it as read-only)."""

    if TYPE_CHECKING:
        # Accepted inputs, wider than the stored types (see `Retrievable`).
        def __init__(
            self,
            *,
            role: MessageRole,
            content: str,
            id: str = ...,
            created_at: datetime | str | int | float = ...,
            updated_at: datetime | str | int | float | None = None,
            metadata: Mapping[str, Any] = ...,
        ) -> None: ...

    @model_validator(mode="after")
    def _default_updated_at(self) -> Self:
        if self.updated_at is None:
            object.__setattr__(self, "updated_at", self.created_at)
        return self

    def __hash__(self) -> int:
        return hash((self.id, self.role, self.content))


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of a rendered prompt, as a chat model receives it.

    Attributes:
        role: ``"system"``, ``"user"`` or ``"assistant"``.
        content: The text.
    """

    role: MessageRole
    content: str

    def to_dict(self) -> dict[str, str]:
        """The OpenAI chat-completions shape: ``{"role": ..., "content": ...}``."""
        return {"role": self.role, "content": self.content}


class InMemoryMessageStore:
    """The default message store: conversation history kept in process memory.

    A `TurnRunner` without message callbacks makes one of these, so history
    lasts as long as the runner and is keyed by the turn's
    ``conversation_id``. Pass an instance's methods to several runners to share
    history, or your own callbacks to persist it.

    Example:
        ```python
        store = InMemoryMessageStore()
        config = TurnRunnerConfig(
            model=ScriptedModel(["hi"]),
            fetch_messages=store.fetch_messages,
            store_message=store.store_message,
        )
        ```
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conversations: dict[str, list[Message]] = {}

    async def fetch_messages(self, ctx: TurnContext) -> list[Message]:
        """Return the history of ``ctx.conversation_id``, oldest first."""
        return self.messages(ctx.conversation_id)

    async def store_message(self, ctx: TurnContext, message: Message) -> None:
        """Append ``message`` to ``ctx.conversation_id`` (replacing a same-id message in place)."""
        with self._lock:
            history = self._conversations.setdefault(ctx.conversation_id, [])
            for i, existing in enumerate(history):
                if existing.id == message.id:
                    history[i] = message
                    return
            history.append(message)

    def messages(self, conversation_id: str = "default") -> list[Message]:
        """A copy of one conversation's history, oldest first."""
        with self._lock:
            return list(self._conversations.get(conversation_id, ()))

    def clear(self, conversation_id: str | None = None) -> None:
        """Forget one conversation, or every conversation when ``None``."""
        with self._lock:
            if conversation_id is None:
                self._conversations.clear()
            else:
                self._conversations.pop(conversation_id, None)
