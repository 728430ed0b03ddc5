"""`TurnRunner`: one turn of a retrieval-augmented conversation.

``await runner.run("question")`` stores the user message, runs the input
pipeline (by default: fetch retrievables), renders the prompt within the token
budget, calls the model, stores the reply, runs the output pipeline, and
returns a `TurnResult`. ``runner.run_sync(...)`` does the same from sync code,
inside a running event loop too.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from ._aio import call_maybe_async, run_sync
from ._context import (
    Callbacks,
    DeleteRetrievableCallback,
    FetchMessagesCallback,
    FetchRetrievablesCallback,
    MutateRetrievableCallback,
    StoreMessageCallback,
    StoreRetrievableCallback,
    TurnContext,
    invoke,
)
from ._errors import (
    InvalidTurnContextError,
    InvalidTurnRunnerConfigError,
    ModelError,
    PipelineError,
    TokenBudgetExceededError,
    TurnkitError,
    UsageError,
)
from ._messages import ChatMessage, InMemoryMessageStore, Message
from ._models import ChatModel
from ._prompt import (
    SAFETY_DIRECTIVE,
    RenderedPrompt,
    TokenCounts,
    UntrustedPlacement,
    count_prompt_tokens,
    render_prompt,
)
from ._retrievable import Retrievable, rank_order
from ._tokens import DEFAULT_ENCODING, EncodingName

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "GROUNDING_STASH_KEY",
    "NO_GROUNDED_ANSWER",
    "Middleware",
    "Next",
    "TurnEvent",
    "TurnResult",
    "TurnRunner",
    "TurnRunnerConfig",
    "fetch_retrievables_stage",
]

_log = logging.getLogger("turnkit.runner")

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer using the retrieved records when they are relevant."
)
"""The system prompt used when a config does not set one."""

NO_GROUNDED_ANSWER = "no grounded answer"
"""The ``stop_reason`` of a turn that abstained: nothing retrieved was relevant enough."""
GROUNDING_STASH_KEY = "turnkit.grounding"
"""``ctx.stash`` key of a retrieval's grounding verdict.

A ``fetch_retrievables`` callback with a relevance threshold (the vector
glue's ``min_score``) stores ``{"grounded": bool, "min_score", "best_score",
"fetched", "kept", "reply"}`` there; the default input stage stops the turn
with `NO_GROUNDED_ANSWER` when ``grounded`` is ``False``.
"""

Next = Callable[[], Awaitable[None]]
"""What a middleware calls to continue the chain: ``await next_()`` in async
middleware, plain ``next_()`` in sync middleware (it blocks until the rest of
the chain has run)."""

Middleware = Callable[[TurnContext, Next], object]
"""``async def mw(ctx, next_)`` (or a sync ``def``): read or change ``ctx``,
then call ``next_`` to continue. Not calling it stops the chain."""

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


async def fetch_retrievables_stage(ctx: TurnContext, next_: Next) -> None:
    """The default input stage: add ``await ctx.fetch_retrievables()`` to the turn.

    Put it in your own ``input_pipeline`` where retrieval should happen, e.g.
    before a reranking stage. When the callback reports that nothing it found
    was relevant enough (``ctx.stash[GROUNDING_STASH_KEY]["grounded"] is
    False``), the turn stops before the model call with
    ``stop_reason == NO_GROUNDED_ANSWER`` and the verdict's ``reply``, if any.
    """
    ctx.stash.pop(GROUNDING_STASH_KEY, None)  # only this fetch's verdict counts
    ctx.turn_retrievables.extend(await ctx.fetch_retrievables())
    verdict = ctx.stash.get(GROUNDING_STASH_KEY)
    if isinstance(verdict, Mapping) and verdict.get("grounded") is False:
        reply = verdict.get("reply")
        if isinstance(reply, str):
            ctx.reply = reply
        ctx.abort(NO_GROUNDED_ANSWER)
        return
    await next_()


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


def _accepts(fn: Callable[..., Any], count: int) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # some builtins have no signature: trust them
        return True
    try:
        signature.bind(*([None] * count))
    except TypeError:
        return False
    return True


def _check_callable(name: str, fn: object, count: int, what: str) -> None:
    if fn is None:
        return
    if not callable(fn) or not _accepts(fn, count):
        raise InvalidTurnRunnerConfigError(
            f"TurnRunnerConfig.{name} must be {what}, got {fn!r}.",
            hint=f"Pass a function (sync or async) taking {count} positional argument(s).",
            field=name,
        )


@dataclass(frozen=True, kw_only=True)
class TurnRunnerConfig:
    """Everything a `TurnRunner` needs, validated when it is built.

    Callbacks and middleware may be sync or async. Sync ones run in a worker
    thread; they may call ``ctx.*_sync`` methods and turnkit's sync forms.

    Attributes:
        model: The `ChatModel` that writes the reply.
        system_prompt: The deployer's instructions.
        fetch_retrievables: ``(ctx) -> list[Retrievable]``; without it the
            turn retrieves nothing.
        store_retrievable: ``(ctx, r) -> None``, called by ``ctx.store_retrievable``.
        mutate_retrievable: ``(ctx, r) -> None``, called by ``ctx.mutate_retrievable``.
        delete_retrievable: ``(ctx, id) -> None``, called by ``ctx.delete_retrievable``.
        fetch_messages: ``(ctx) -> list[Message]``; set it together with
            ``store_message``, or leave both unset for an in-memory history.
        store_message: ``(ctx, message) -> None``.
        input_pipeline: Middleware run before the model. Defaults to
            ``(fetch_retrievables_stage,)``; a pipeline you pass replaces it.
        output_pipeline: Middleware run after the reply is stored.
        token_budget: Maximum prompt tokens, or ``None`` for no limit. When the
            prompt is over, the lowest-ranked retrievables are dropped first,
            then the oldest history; if even that is not enough the turn
            fails with `TokenBudgetExceededError`.
        encoding: The tiktoken encoding used to count (``"o200k_base"`` or
            ``"cl100k_base"``).
        max_history_messages: Keep at most this many earlier messages in the
            prompt (``None``: all of them).
        safety_directive: The text placed before retrieved records (in the
            system message).
        untrusted_placement: Where records of every tier but first-party go.
            ``"user"`` (default): a user-role context message just before the
            user's turn, so third-party text never gets the system role's
            authority; the directive and the nonce rule stay in the system
            message. ``"system"``: after the first-party corpus in the system
            message. The token budget counts both messages either way.
        on_event: Called with each `TurnEvent` (sync inline, or awaited);
            keep it quick.

    Raises:
        InvalidTurnRunnerConfigError: a field has the wrong type or shape; the
            error's ``field`` names it.
    """

    model: ChatModel
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    fetch_retrievables: FetchRetrievablesCallback | None = None
    store_retrievable: StoreRetrievableCallback | None = None
    mutate_retrievable: MutateRetrievableCallback | None = None
    delete_retrievable: DeleteRetrievableCallback | None = None
    fetch_messages: FetchMessagesCallback | None = None
    store_message: StoreMessageCallback | None = None
    input_pipeline: Sequence[Middleware] = (fetch_retrievables_stage,)
    output_pipeline: Sequence[Middleware] = ()
    token_budget: int | None = None
    encoding: EncodingName = DEFAULT_ENCODING
    max_history_messages: int | None = None
    safety_directive: str = SAFETY_DIRECTIVE
    untrusted_placement: UntrustedPlacement = "user"
    on_event: Callable[[TurnEvent], object] | None = None

    def __post_init__(self) -> None:
        complete = getattr(self.model, "complete", None)
        if not callable(complete) or not _accepts(complete, 1):
            raise InvalidTurnRunnerConfigError(
                f"TurnRunnerConfig.model must have a `complete(messages)` method, got {self.model!r}.",
                hint="Use ScriptedModel in tests, OpenAIChatModel for an API, or any object with complete().",
                field="model",
            )
        for name, count in (
            ("fetch_retrievables", 1),
            ("store_retrievable", 2),
            ("mutate_retrievable", 2),
            ("delete_retrievable", 2),
            ("fetch_messages", 1),
            ("store_message", 2),
        ):
            args = "(ctx)" if count == 1 else "(ctx, value)"
            _check_callable(name, getattr(self, name), count, f"a callable {args}")
        if (self.fetch_messages is None) != (self.store_message is None):
            missing = "store_message" if self.store_message is None else "fetch_messages"
            raise InvalidTurnRunnerConfigError(
                f"TurnRunnerConfig.fetch_messages and store_message go together; {missing} is missing.",
                hint="Set both (your own history store) or neither (in-memory history).",
                field=missing,
            )
        for name in ("input_pipeline", "output_pipeline"):
            stages = getattr(self, name)
            if isinstance(stages, str | bytes) or not isinstance(stages, Sequence):
                raise InvalidTurnRunnerConfigError(
                    f"TurnRunnerConfig.{name} must be a list of middleware, got {stages!r}.", field=name
                )
            for i, stage in enumerate(stages):
                _check_callable(f"{name}[{i}]", stage, 2, "a middleware (ctx, next_)")
            # Freeze the pipeline: a later append to the caller's list must not change the runner.
            object.__setattr__(self, name, tuple(stages))
        budget = self.token_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0):
            raise InvalidTurnRunnerConfigError(
                f"TurnRunnerConfig.token_budget must be a positive int or None, got {budget!r}.",
                field="token_budget",
            )
        if self.encoding not in ("cl100k_base", "o200k_base"):
            raise InvalidTurnRunnerConfigError(
                f"TurnRunnerConfig.encoding must be 'o200k_base' or 'cl100k_base', got {self.encoding!r}.",
                field="encoding",
            )
        limit = self.max_history_messages
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidTurnRunnerConfigError(
                f"TurnRunnerConfig.max_history_messages must be an int >= 0 or None, got {limit!r}.",
                field="max_history_messages",
            )
        for name in ("system_prompt", "safety_directive"):
            if not isinstance(getattr(self, name), str):
                raise InvalidTurnRunnerConfigError(
                    f"TurnRunnerConfig.{name} must be a string, got {getattr(self, name)!r}.", field=name
                )
        if self.untrusted_placement not in ("user", "system"):
            raise InvalidTurnRunnerConfigError(
                f"TurnRunnerConfig.untrusted_placement must be 'user' or 'system', "
                f"got {self.untrusted_placement!r}.",
                field="untrusted_placement",
            )
        _check_callable("on_event", self.on_event, 1, "a callable (event)")


class _Done:
    """An already-finished awaitable: what ``next_()`` returns to sync middleware."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


class _Next:
    """``next_`` for one middleware: awaitable on the loop, blocking from a thread."""

    __slots__ = ("_call", "_loop")

    def __init__(self, call: Callable[[], Awaitable[None]], loop: asyncio.AbstractEventLoop) -> None:
        self._call = call
        self._loop = loop

    def __call__(self) -> Awaitable[None]:
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            return self._call()
        # Sync middleware runs in its own thread: run the rest of the chain on the
        # turn's loop and block that thread until it is done.
        asyncio.run_coroutine_threadsafe(_as_coroutine(self._call()), self._loop).result()
        return _Done()


async def _as_coroutine(awaitable: Awaitable[None]) -> None:
    await awaitable


def _stage_name(stage: object) -> str:
    name = getattr(stage, "__qualname__", None) or getattr(stage, "__name__", None)
    return str(name) if name else type(stage).__name__


class TurnRunner:
    """Runs turns: retrieval, prompt rendering within a budget, the model, storage.

    Args:
        config: A validated `TurnRunnerConfig`.

    Example:
        ```python
        runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["Hello!"])))
        result = runner.run_sync("Hi")
        assert result.reply == "Hello!"
        ```

    Raises:
        InvalidTurnRunnerConfigError: ``config`` is not a `TurnRunnerConfig`.
    """

    def __init__(self, config: TurnRunnerConfig) -> None:
        if not isinstance(config, TurnRunnerConfig):
            raise InvalidTurnRunnerConfigError(
                f"TurnRunner takes a TurnRunnerConfig, got {type(config).__name__}.",
                hint="Write TurnRunner(TurnRunnerConfig(model=..., ...)).",
                field="config",
            )
        self._config = config
        self._store: InMemoryMessageStore | None = None
        if config.fetch_messages is None or config.store_message is None:
            self._store = InMemoryMessageStore()
            fetch_messages: FetchMessagesCallback = self._store.fetch_messages
            store_message: StoreMessageCallback = self._store.store_message
        else:
            fetch_messages, store_message = config.fetch_messages, config.store_message
        self._callbacks = Callbacks(
            fetch_messages=fetch_messages,
            store_message=store_message,
            fetch_retrievables=config.fetch_retrievables,
            store_retrievable=config.store_retrievable,
            mutate_retrievable=config.mutate_retrievable,
            delete_retrievable=config.delete_retrievable,
        )

    @property
    def config(self) -> TurnRunnerConfig:
        """The runner's configuration."""
        return self._config

    @property
    def message_store(self) -> InMemoryMessageStore | None:
        """The in-memory history, when the config set no message callbacks."""
        return self._store

    def new_context(self, *, conversation_id: str = "default") -> TurnContext:
        """A context bound to this runner's callbacks, for use outside a turn.

        Handy for tests of retrieval callbacks and for admin tasks that store or
        delete records through the same callbacks a turn uses.
        """
        return TurnContext(
            callbacks=self._callbacks,
            conversation_id=conversation_id,
            system_prompt=self._config.system_prompt,
        )

    def run_sync(self, user_message: str | Message, *, conversation_id: str = "default") -> TurnResult:
        """Sync form of `run`; works inside a running event loop too."""
        return run_sync(self.run(user_message, conversation_id=conversation_id))

    async def run(self, user_message: str | Message, *, conversation_id: str = "default") -> TurnResult:
        """Run one turn.

        Args:
            user_message: The user's text, or a ``role="user"`` `Message`.
            conversation_id: Keys the history (the in-memory store keeps one
                history per id).

        Returns:
            The reply and what went into it.

        Raises:
            InvalidTurnContextError: the message or conversation id is invalid.
            TurnkitError: a middleware or callback raised a turnkit error
                (``EncoderRequiredError``, ``UnknownTrustTierError``…): it
                arrives unchanged, with ``pipeline`` (``"input"`` or
                ``"output"``), ``pipeline_stage`` and ``pipeline_index`` added
                to its context and a note naming the stage.
            PipelineError: a middleware raised any other exception (``code``
                tells input from output; the original error is the
                ``__cause__``; ``stage`` and ``index`` say where).
            ModelError: the model failed or returned something other than text.
            TokenBudgetExceededError: the prompt cannot fit the budget even
                without retrievables and history.
        """
        message = _user_message(user_message)
        if not isinstance(conversation_id, str) or not conversation_id:
            raise InvalidTurnContextError(
                f"conversation_id must be a non-empty string, got {conversation_id!r}.",
                field="conversation_id",
            )
        cfg = self._config
        ctx = TurnContext(
            callbacks=self._callbacks,
            conversation_id=conversation_id,
            system_prompt=cfg.system_prompt,
            loop=asyncio.get_running_loop(),
        )
        turn = _Turn(ctx, cfg.on_event)
        try:
            return await self._run(ctx, turn, message)
        except BaseException as exc:
            if isinstance(exc, Exception):
                await turn.emit(
                    "turn_error",
                    error=type(exc).__name__,
                    code=getattr(exc, "code", None),
                    stage=exc.context.get("pipeline_stage") if isinstance(exc, TurnkitError) else None,
                )
            raise
        finally:
            # A context that outlives its turn must not schedule work on a loop
            # that may be gone; its sync forms fall back to turnkit's loop.
            ctx._loop = None

    async def _run(self, ctx: TurnContext, turn: _Turn, message: Message) -> TurnResult:
        cfg = self._config
        await turn.emit("turn_start")
        async with turn.timed("user_message_stored") as data:
            await ctx._store_message(message)
            data["message_id"] = message.id

        async with turn.timed("input_pipeline") as data:
            reason = await self._run_pipeline(cfg.input_pipeline, ctx, "input")
            data.update(stopped=reason is not None, retrievables=len(ctx.turn_retrievables))
        if reason is not None:
            reply_message = None
            if ctx.reply is not None:
                reply_message = await self._store_reply(ctx, turn)
            return await turn.finish(
                reply=ctx.reply,
                stopped=True,
                stop_reason=reason,
                stopped_in="input",
                user_message=message,
                reply_message=reply_message,
            )

        async with turn.timed("prompt_rendered") as data:
            rendered, tokens, dropped, dropped_messages = await self._fit(ctx)
            data.update(
                prompt_tokens=tokens.prompt, retrievables=len(rendered.retrievables), dropped=len(dropped)
            )

        async with turn.timed("model"):
            reply = await self._complete(rendered)
        ctx.reply = reply
        reply_message = await self._store_reply(ctx, turn)
        tokens = replace(tokens, reply=_count(reply, cfg.encoding))

        async with turn.timed("output_pipeline") as data:
            out_reason = await self._run_pipeline(cfg.output_pipeline, ctx, "output")
            data["stopped"] = out_reason is not None
        if ctx.reply is not None and not isinstance(ctx.reply, str):
            raise PipelineError(
                f"Output middleware set ctx.reply to {type(ctx.reply).__name__}; it must be a string.",
                code="E_OUTPUT_PIPELINE_ERROR",
            )
        return await turn.finish(
            reply=ctx.reply,
            retrievables=rendered.retrievables,
            dropped=dropped,
            dropped_messages=dropped_messages,
            prompt=rendered.messages,
            rendered=rendered,
            tokens=tokens,
            stopped=out_reason is not None,
            stop_reason=out_reason,
            stopped_in=None if out_reason is None else "output",
            user_message=message,
            reply_message=reply_message,
        )

    async def _store_reply(self, ctx: TurnContext, turn: _Turn) -> Message:
        if not isinstance(ctx.reply, str):
            raise PipelineError(
                f"Input middleware set ctx.reply to {type(ctx.reply).__name__}; it must be a string.",
                code="E_INPUT_PIPELINE_ERROR",
            )
        async with turn.timed("reply_stored") as data:
            reply_message = Message(role="assistant", content=ctx.reply)
            await ctx._store_message(reply_message)
            data["message_id"] = reply_message.id
        return reply_message

    async def _complete(self, rendered: RenderedPrompt) -> str:
        try:
            reply = await invoke(self._config.model.complete, rendered.messages)
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(
                f"The model raised {type(exc).__name__}: {exc}", hint="See the chained exception."
            ) from exc
        if not isinstance(reply, str):
            raise ModelError(f"The model returned {type(reply).__name__}, not str.")
        return reply

    async def _run_pipeline(self, stages: Sequence[Middleware], ctx: TurnContext, which: str) -> str | None:
        """Run a middleware chain; return why it stopped early, or None if it ran to the end."""
        code = "E_INPUT_PIPELINE_ERROR" if which == "input" else "E_OUTPUT_PIPELINE_ERROR"
        loop = asyncio.get_running_loop()
        reached_end = False
        stopped_by: str | None = None
        failed: str | None = None

        async def dispatch(index: int) -> None:
            nonlocal reached_end, stopped_by, failed
            if ctx.aborted:
                return
            if index == len(stages):
                reached_end = True
                return
            stage = stages[index]
            name = _stage_name(stage)
            called = False

            async def call_next() -> None:
                nonlocal called
                if called:
                    raise UsageError(f"Middleware {name!r} called next_() more than once.")
                called = True
                await dispatch(index + 1)

            try:
                await invoke(stage, ctx, _Next(call_next, loop), own_thread=True)
            except PipelineError:
                raise  # already wrapped by the stage that failed
            except TurnkitError as exc:
                # turnkit's own errors travel as themselves, so `except
                # EncoderRequiredError` around run() works; the innermost stage
                # that let one through is recorded on it.
                if "pipeline_stage" not in exc.context:
                    failed = f"{name!r} raised {type(exc).__name__}"
                    exc.add_context(pipeline=which, pipeline_stage=name, pipeline_index=index)
                    exc.add_note(f"Raised in the {which} pipeline, middleware {name!r} (stage {index}).")
                raise
            except Exception as exc:
                # Remembered in case an outer stage catches the error and carries on.
                failed = f"{name!r} raised {type(exc).__name__}"
                raise PipelineError(
                    f"{which.capitalize()} middleware {name!r} (stage {index}) raised "
                    f"{type(exc).__name__}: {exc}",
                    code=code,
                    hint="See the chained exception (__cause__).",
                    stage=name,
                    index=index,
                    cause_code=getattr(exc, "code", None),
                    pipeline=which,
                    pipeline_stage=name,
                    pipeline_index=index,
                ) from exc
            if not called and stopped_by is None:
                stopped_by = name

        await dispatch(0)
        if reached_end and not ctx.aborted:
            return None
        if ctx.aborted:
            return ctx.abort_reason or "aborted"
        if stopped_by is not None:
            return f"{which} stage {stopped_by!r} did not call next_()"
        return f"{which} stage {failed} and an outer stage handled it"

    async def _fit(
        self, ctx: TurnContext
    ) -> tuple[RenderedPrompt, TokenCounts, tuple[Retrievable, ...], tuple[Message, ...]]:
        cfg = self._config
        turn_ids = {m.id for m in ctx.turn_messages}
        history = [m for m in await ctx.fetch_messages() if m.id not in turn_ids]
        if cfg.max_history_messages is not None:
            history = history[len(history) - cfg.max_history_messages :] if cfg.max_history_messages else []
        ranked = rank_order(ctx.turn_retrievables)
        turn_messages = list(ctx.turn_messages)

        def attempt(keep: int, keep_history: int) -> tuple[RenderedPrompt, TokenCounts]:
            rendered = render_prompt(
                system_prompt=ctx.system_prompt,
                retrievables=ranked[:keep],
                history=history[len(history) - keep_history :] if keep_history else [],
                turn_messages=turn_messages,
                safety_directive=cfg.safety_directive,
                untrusted_placement=cfg.untrusted_placement,
            )
            tokens = count_prompt_tokens(rendered, encoding=cfg.encoding)
            return rendered, replace(tokens, budget=cfg.token_budget)

        budget = cfg.token_budget
        rendered, tokens = await asyncio.to_thread(attempt, len(ranked), len(history))
        if budget is None or tokens.prompt <= budget:
            return rendered, tokens, (), ()

        # Keep the largest number of top-ranked records that fits (binary search:
        # each probe is a full render and count, so the chosen prompt is the one
        # that was measured, nonces included).
        keep = await asyncio.to_thread(
            _largest_fitting, len(ranked) - 1, lambda k: attempt(k, len(history)), budget
        )
        if keep is not None:
            k, rendered, tokens = keep
            return rendered, tokens, tuple(reversed(ranked[k:])), ()
        keep_h = await asyncio.to_thread(_largest_fitting, len(history) - 1, lambda h: attempt(0, h), budget)
        if keep_h is not None:
            h, rendered, tokens = keep_h
            return rendered, tokens, tuple(reversed(ranked)), tuple(history[: len(history) - h])
        smallest = attempt(0, 0)[1]
        raise TokenBudgetExceededError(
            f"The prompt needs {smallest.prompt} tokens without any retrievables or history; "
            f"the budget is {budget}.",
            budget=budget,
            prompt_tokens=smallest.prompt,
        )


def _largest_fitting(
    upper: int, attempt: Callable[[int], tuple[RenderedPrompt, TokenCounts]], budget: int
) -> tuple[int, RenderedPrompt, TokenCounts] | None:
    """The largest n in [0, upper] whose attempt fits ``budget``, with its render."""
    best: tuple[int, RenderedPrompt, TokenCounts] | None = None
    low, high = 0, upper
    while low <= high:
        mid = (low + high) // 2
        rendered, tokens = attempt(mid)
        if tokens.prompt <= budget:
            best, low = (mid, rendered, tokens), mid + 1
        else:
            high = mid - 1
    return best


def _count(text: str, encoding: str) -> int:
    from ._tokens import count_tokens

    return count_tokens(text, encoding)


def _user_message(value: str | Message) -> Message:
    if isinstance(value, Message):
        if value.role != "user":
            raise InvalidTurnContextError(
                f"A turn starts with a user message, got role {value.role!r}.", field="user_message"
            )
        message = value
    elif isinstance(value, str):
        message = Message(role="user", content=value)
    else:
        raise InvalidTurnContextError(
            f"run() takes the user's text or a Message, got {type(value).__name__}.", field="user_message"
        )
    if not message.content.strip():
        raise InvalidTurnContextError("The user message is empty.", field="user_message")
    return message


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

    def timed(self, name: StageName) -> _Timed:
        return _Timed(self, name)

    async def finish(self, **fields: Any) -> TurnResult:
        await self.emit("turn_end", time.perf_counter() - self.started, stopped=fields.get("stopped", False))
        return TurnResult(
            events=tuple(self.events),
            turn_id=self.ctx.turn_id,
            conversation_id=self.ctx.conversation_id,
            **fields,
        )


class _Timed:
    """``async with turn.timed("stage") as data:`` emits the stage's event on success."""

    def __init__(self, turn: _Turn, name: StageName) -> None:
        self.turn = turn
        self.name = name
        self.data: dict[str, Any] = {}
        self.start = 0.0

    async def __aenter__(self) -> dict[str, Any]:
        self.start = time.perf_counter()
        return self.data

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            await self.turn.emit(self.name, time.perf_counter() - self.start, **self.data)
