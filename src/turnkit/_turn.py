"""What a turn reports: its events and its result, and the bookkeeping that records them."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from ._aio import call_maybe_async
from ._context import TurnContext
from ._messages import ChatMessage, Message
from ._prompt import RenderedPrompt, TokenCounts
from ._retrievable import Retrievable

__all__ = ["StageName", "TurnEvent", "TurnResult"]

_log = logging.getLogger("turnkit.runner")

StageName = Literal[
    "turn_start",
    "user_message_stored",
    "input_pipeline",
    "prompt_rendered",
    "model",
    "reply_stored",
    "output_pipeline",
    "turn_end",
    "turn_error",
]


@dataclass(frozen=True, kw_only=True)
class TurnEvent:
    """One observable step of a turn.

    Attributes:
        name: The step: ``turn_start``, ``user_message_stored``,
            ``input_pipeline``, ``prompt_rendered``, ``model``,
            ``reply_stored``, ``output_pipeline``, ``turn_end`` or
            ``turn_error``.
        turn_id: The turn's id.
        duration: Seconds the step took (``None`` for ``turn_start``).
        data: Step details (token counts, stop reasons, error codes…).
    """

    name: StageName
    turn_id: str
    duration: float | None = None
    data: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True, kw_only=True)
class TurnResult:
    """What a turn produced.

    Attributes:
        reply: The reply text (after the output pipeline), or ``None`` when the
            input pipeline stopped the turn without setting ``ctx.reply``.
        retrievables: The records rendered into the prompt, in prompt order.
        dropped: Records left out to fit the token budget, lowest-ranked first.
        dropped_messages: Earlier messages left out to fit the budget, oldest first.
        prompt: The chat messages sent to the model (empty if it was not called).
        rendered: The full render (nonces, sections), or ``None``.
        tokens: Token counts of the prompt and reply, or ``None``.
        stopped: Whether a pipeline stopped early (not an error).
        stop_reason: Why, when ``stopped``.
        stopped_in: ``"input"`` or ``"output"``, when ``stopped``.
        events: Every `TurnEvent` of the turn, in order.
        turn_id: The turn's id.
        conversation_id: The conversation the turn belongs to.
        user_message: The stored user message.
        reply_message: The stored assistant message, if any.
    """

    reply: str | None
    retrievables: tuple[Retrievable, ...] = ()
    dropped: tuple[Retrievable, ...] = ()
    dropped_messages: tuple[Message, ...] = ()
    prompt: tuple[ChatMessage, ...] = ()
    rendered: RenderedPrompt | None = None
    tokens: TokenCounts | None = None
    stopped: bool = False
    stop_reason: str | None = None
    stopped_in: Literal["input", "output"] | None = None
    events: tuple[TurnEvent, ...] = ()
    turn_id: str = ""
    conversation_id: str = "default"
    user_message: Message | None = None
    reply_message: Message | None = None


class _Turn:
    """Event bookkeeping for one run."""

    def __init__(self, ctx: TurnContext, on_event: Callable[[TurnEvent], object] | None) -> None:
        self.ctx = ctx
        self.on_event = on_event
        self.events: list[TurnEvent] = []
        self.started = time.perf_counter()

    async def emit(self, name: StageName, duration: float | None = None, **data: Any) -> None:
        event = TurnEvent(name=name, turn_id=self.ctx.turn_id, duration=duration, data=MappingProxyType(data))
        self.events.append(event)
        if self.on_event is not None:
            # An observer watches; it must not fail a turn whose model call is
            # already paid for, nor replace the turn's real error.
            try:
                await call_maybe_async(self.on_event, event)
            except Exception:
                _log.exception("turnkit: on_event observer raised on %r; the turn goes on", name)

    @asynccontextmanager
    async def timed(self, name: StageName) -> AsyncIterator[dict[str, Any]]:
        """``async with turn.timed("stage") as data:`` emits the stage's event on success."""
        start = time.perf_counter()
        data: dict[str, Any] = {}
        yield data
        await self.emit(name, time.perf_counter() - start, **data)

    async def finish(self, **fields: Any) -> TurnResult:
        await self.emit("turn_end", time.perf_counter() - self.started, stopped=fields.get("stopped", False))
        return TurnResult(
            events=tuple(self.events),
            turn_id=self.ctx.turn_id,
            conversation_id=self.ctx.conversation_id,
            **fields,
        )
