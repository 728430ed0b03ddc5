"""`TurnContext`: what middleware and callbacks see of one turn.

A context is built fresh for every `TurnRunner.run`. It carries the runner's
callbacks bound to it (``await ctx.fetch_retrievables()``), the turn's own
messages and retrievables, a scratch ``stash``, and an abort switch.

Sync user code (callbacks, middleware) runs in a worker thread, the way FastAPI
and pydantic-ai run sync handlers, so it never blocks the event loop and may
call the ``*_sync`` forms here and turnkit's other sync forms.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import threading
import uuid
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

from ._aio import named_sync_form, run_sync, to_thread
from ._errors import UsageError
from ._messages import Message
from ._retrievable import Retrievable, RetrievableSet, TrustTier, as_retrievable, trust_rank

__all__ = [
    "DeleteRetrievableCallback",
    "FetchMessagesCallback",
    "FetchRetrievablesCallback",
    "MutateRetrievableCallback",
    "StoreMessageCallback",
    "StoreRetrievableCallback",
    "TurnContext",
]

T = TypeVar("T")
P = ParamSpec("P")


def _turn_sync(
    fn: Callable[Concatenate[TurnContext, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[TurnContext, P], T]:
    # Not sync_form: these run on the turn's own loop, so async callbacks see the loop they were written for.
    def sync(self: TurnContext, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return self._sync(fn(self, *args, **kwargs))

    return named_sync_form(sync, fn, "for sync callbacks and middleware")


FetchRetrievablesCallback = Callable[
    ["TurnContext"], "Iterable[Retrievable] | Awaitable[Iterable[Retrievable]]"
]
"""``fetch_retrievables(ctx) -> Iterable[Retrievable]`` (sync or async)."""
StoreRetrievableCallback = Callable[["TurnContext", Retrievable], object]
"""``store_retrievable(ctx, r) -> None`` (sync or async; the result is ignored)."""
MutateRetrievableCallback = Callable[["TurnContext", Retrievable], object]
"""``mutate_retrievable(ctx, r) -> None`` (sync or async; the result is ignored)."""
DeleteRetrievableCallback = Callable[["TurnContext", str], object]
"""``delete_retrievable(ctx, id) -> None`` (sync or async; the result is ignored)."""
FetchMessagesCallback = Callable[["TurnContext"], "Iterable[Message] | Awaitable[Iterable[Message]]"]
"""``fetch_messages(ctx) -> Iterable[Message]``: the conversation so far, oldest first."""
StoreMessageCallback = Callable[["TurnContext", Message], object]
"""``store_message(ctx, message) -> None``: persist one message."""


async def invoke(fn: Callable[..., Any], *args: Any, own_thread: bool = False) -> Any:
    """Call user code: await async callables; run sync ones in a worker thread.

    A sync callable that nevertheless returns an awaitable (a lambda wrapping a
    coroutine function) has that awaitable awaited here, on the loop.

    ``own_thread`` gives the call a new thread instead of one from the shared
    pool. Sync middleware needs it: each one blocks its thread while the rest
    of the chain runs, so nesting them in a bounded pool could deadlock.
    """
    # Coroutine functions, bound async methods and partials, and objects with an async __call__.
    call = getattr(fn, "__call__", None)  # noqa: B004 - we want the method, not callable()
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call):
        return await fn(*args)
    if own_thread:
        result = await _in_new_thread(fn, *args)
    else:
        result = await to_thread(fn, *args)
    if inspect.isawaitable(result):
        return await result
    return result


async def _in_new_thread(fn: Callable[..., Any], *args: Any) -> Any:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():  # the awaiting task was cancelled meanwhile
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def target() -> None:
        try:
            outcome = (True, context.run(fn, *args))
        except BaseException as exc:  # re-raised in the awaiting task
            outcome = (False, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed while we ran
            loop.call_soon_threadsafe(settle, *outcome)

    threading.Thread(target=target, name="turnkit-middleware", daemon=True).start()
    return await future


@dataclass(frozen=True, slots=True)
class Callbacks:
    """The storage callbacks a context is bound to (``None`` = not configured)."""

    fetch_messages: FetchMessagesCallback
    store_message: StoreMessageCallback
    fetch_retrievables: FetchRetrievablesCallback | None = None
    store_retrievable: StoreRetrievableCallback | None = None
    mutate_retrievable: MutateRetrievableCallback | None = None
    delete_retrievable: DeleteRetrievableCallback | None = None


class TurnContext:
    """One turn's state, passed to every callback and middleware.

    Built by `TurnRunner` for each run (or by `TurnRunner.new_context` for use
    outside a turn); not meant to be constructed directly.

    Attributes:
        turn_id: A fresh random id for this turn.
        conversation_id: The conversation the turn belongs to (keys history).
        system_prompt: The system prompt for this turn; middleware may change it.
        turn_retrievables: The records this turn will render, ordered and
            de-duplicated by id. The default input stage fills it from
            `fetch_retrievables`; middleware may add, replace or remove records.
        stash: Free-form per-turn scratch space for middleware.
        reply: The model's reply once there is one. Input middleware that stops
            the turn may set it to answer without calling the model; output
            middleware may rewrite it (this changes the returned reply, not the
            stored message).
        started_at: When the turn started (UTC).
    """

    def __init__(
        self,
        *,
        callbacks: Callbacks,
        conversation_id: str = "default",
        system_prompt: str = "",
        loop: asyncio.AbstractEventLoop | None = None,
        write_tier: TrustTier | None = None,
    ) -> None:
        self._callbacks = callbacks
        self._loop = loop
        self._write_tier = write_tier
        self._turn_messages: list[Message] = []
        self._aborted = False
        self._abort_reason: str | None = None
        self.turn_id: str = uuid.uuid4().hex
        self.conversation_id = conversation_id
        self.system_prompt = system_prompt
        self.turn_retrievables = RetrievableSet()
        self.stash: dict[str, Any] = {}
        self.reply: str | None = None
        self.started_at = datetime.now(UTC)

    def __repr__(self) -> str:
        return (
            f"TurnContext(turn_id={self.turn_id!r}, conversation_id={self.conversation_id!r}, "
            f"turn_messages={len(self._turn_messages)}, turn_retrievables={self.turn_retrievables.ids!r})"
        )

    # -- turn state ---------------------------------------------------------------

    @property
    def write_tier(self) -> TrustTier | None:
        """The most trusted tier a record written through this context keeps.

        A turn's context has the config's ``turn_write_tier``: what a turn
        writes comes from the conversation (the user's or the model's text),
        so `store_retrievable` and `mutate_retrievable` store a more trusted
        record at this tier, and the turn renders it so. ``None`` (a context
        from `TurnRunner.new_context`, an operator's own writes): records keep
        their tier.
        """
        return self._write_tier

    def capped(self, retrievable: Retrievable) -> Retrievable:
        """``retrievable`` at no more than `write_tier` (the record itself when it is within it)."""
        cap = self._write_tier
        if cap is None or trust_rank(retrievable.trust_tier) >= trust_rank(cap):
            return retrievable
        return retrievable.replace(trust_tier=cap)

    @property
    def turn_messages(self) -> tuple[Message, ...]:
        """The messages this turn stored so far (the user's, then the reply)."""
        return tuple(self._turn_messages)

    @property
    def user_message(self) -> Message | None:
        """The user message that started this turn (``None`` outside a turn)."""
        return next((m for m in self._turn_messages if m.role == "user"), None)

    @property
    def aborted(self) -> bool:
        """Whether `abort` was called; the remaining middleware is then skipped."""
        return self._aborted

    @property
    def abort_reason(self) -> str | None:
        """The reason given to `abort`, if any."""
        return self._abort_reason

    def abort(self, reason: str = "aborted") -> None:
        """Stop the turn: skip the remaining middleware (and the model, in the input stage).

        Not an error: the run returns a result with ``stopped=True`` and this
        reason. To fail the turn instead, raise.
        """
        if not self._aborted:
            self._aborted = True
            self._abort_reason = reason

    # -- messages -----------------------------------------------------------------

    async def fetch_messages(self) -> list[Message]:
        """The conversation so far, oldest first, including this turn's messages.

        Calls the ``fetch_messages`` callback. Messages this turn stored that
        the callback did not return (a store that lags its writes) are
        appended, so the current user message is always there.

        Raises:
            UsageError: ``E_INVALID_MESSAGE``: the callback returned something that is not a
                list of `Message`.
        """
        result = await invoke(self._callbacks.fetch_messages, self)
        messages = _checked_list(result, Message, "fetch_messages", "E_INVALID_MESSAGE")
        seen = {m.id for m in messages}
        messages.extend(m for m in self._turn_messages if m.id not in seen)
        return messages

    async def last_user_message(self) -> Message | None:
        """The most recent ``role="user"`` message of the conversation, or ``None``.

        This is the default query of retrieval glue: the question being asked.
        """
        return next((m for m in reversed(await self.fetch_messages()) if m.role == "user"), None)

    async def _store_message(self, message: Message) -> None:
        await invoke(self._callbacks.store_message, self, message)
        self._turn_messages.append(message)

    # -- retrievables ---------------------------------------------------------------

    async def fetch_retrievables(self) -> list[Retrievable]:
        """Call the ``fetch_retrievables`` callback and return its records.

        Does not change `turn_retrievables`; the default input stage adds the
        result there. With no callback configured, returns ``[]``.

        Raises:
            TrustTierRequiredError: the callback returned a `RawRetrievable`.
            UsageError: ``E_INVALID_RETRIEVABLE``: it returned something else that is not a
                `Retrievable`, or not a list.
        """
        fetch = self._callbacks.fetch_retrievables
        if fetch is None:
            return []
        result = await invoke(fetch, self)
        items = _checked_list(result, object, "fetch_retrievables", "E_INVALID_RETRIEVABLE")
        return [as_retrievable(r, where=f"fetch_retrievables() item {i}") for i, r in enumerate(items)]

    async def store_retrievable(self, retrievable: Retrievable) -> None:
        """Persist a record through the ``store_retrievable`` callback, and add it to this turn.

        Inside a turn the record is stored and rendered at no more than
        `write_tier` (``TurnRunnerConfig.turn_write_tier``).

        Raises:
            UsageError: ``E_CALLBACK_NOT_CONFIGURED``: the runner has no ``store_retrievable``.
            TrustTierRequiredError: ``retrievable`` has no trust tier.
        """
        self.turn_retrievables.add(await self._write("store_retrievable", retrievable))

    async def mutate_retrievable(self, retrievable: Retrievable) -> None:
        """Update a record through ``mutate_retrievable``; replace it in this turn, in place.

        Inside a turn the record is stored at no more than `write_tier`, as in `store_retrievable`.

        A record this turn does not hold is updated in storage only.

        Raises:
            UsageError: ``E_CALLBACK_NOT_CONFIGURED``: the runner has no ``mutate_retrievable``.
            TrustTierRequiredError: ``retrievable`` has no trust tier.
        """
        self.turn_retrievables.replace(await self._write("mutate_retrievable", retrievable))

    async def delete_retrievable(self, id: str) -> None:
        """Delete a record through ``delete_retrievable``, and drop it from this turn.

        Raises:
            UsageError: ``E_CALLBACK_NOT_CONFIGURED``: the runner has no ``delete_retrievable``.
            UsageError: ``E_INVALID_RETRIEVABLE``: ``id`` is not a non-empty string.
        """
        if not isinstance(id, str) or not id:
            raise UsageError(
                f"delete_retrievable needs a non-empty string id, got {id!r}.",
                code="E_INVALID_RETRIEVABLE",
                field="id",
            )
        await invoke(self._require("delete_retrievable"), self, id)
        self.turn_retrievables.discard(id)

    async def _write(self, name: str, retrievable: Retrievable) -> Retrievable:
        verb = name.removesuffix("_retrievable")
        r = self.capped(as_retrievable(retrievable, where=f"The record to {verb}"))
        await invoke(self._require(name), self, r)
        return r

    def _require(self, name: str) -> Callable[..., Any]:
        fn: Callable[..., Any] | None = getattr(self._callbacks, name)
        if fn is None:
            raise UsageError(
                f"This runner has no `{name}` callback.", code="E_CALLBACK_NOT_CONFIGURED", callback=name
            )
        return fn

    # -- sync forms -----------------------------------------------------------------

    fetch_messages_sync = _turn_sync(fetch_messages)
    last_user_message_sync = _turn_sync(last_user_message)
    fetch_retrievables_sync = _turn_sync(fetch_retrievables)
    store_retrievable_sync = _turn_sync(store_retrievable)
    mutate_retrievable_sync = _turn_sync(mutate_retrievable)
    delete_retrievable_sync = _turn_sync(delete_retrievable)

    def _sync(self, coro: Coroutine[Any, Any, T]) -> T:
        # Run on the turn's own loop, so async callbacks see the loop they were
        # written for; sync user code runs in a worker thread while that loop waits.
        loop = self._loop
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is not None and running is loop:
            coro.close()
            raise UsageError(
                "A TurnContext *_sync method was called from the turn's own event loop; it would deadlock.",
                code="E_SYNC_IN_LOOP_THREAD",
                hint="In async code use the async form: `await ctx.fetch_messages()`.",
            )
        if loop is not None and loop.is_running():
            return asyncio.run_coroutine_threadsafe(coro, loop).result()
        return run_sync(coro)


def _checked_list(result: object, item_type: type, callback: str, code: str) -> list[Any]:
    if result is None or isinstance(result, str | bytes) or not isinstance(result, Iterable):
        raise UsageError(
            f"The `{callback}` callback returned {type(result).__name__}; it must return a list.",
            code=code,
            callback=callback,
        )
    items = list(result)
    for i, item in enumerate(items):
        if not isinstance(item, item_type):
            raise UsageError(
                f"The `{callback}` callback returned a {type(item).__name__} at index {i}, "
                f"not a {item_type.__name__}.",
                code=code,
                callback=callback,
            )
    return items
