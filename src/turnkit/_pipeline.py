"""Middleware chains: the ``next_`` protocol, the default input stage, and running a chain."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from typing import Any

from ._context import TurnContext, invoke
from ._errors import PipelineError, TurnkitError, UsageError

__all__ = [
    "GROUNDING_STASH_KEY",
    "NO_GROUNDED_ANSWER",
    "Middleware",
    "Next",
    "fetch_retrievables_stage",
    "run_pipeline",
]

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


class _Done:
    """An already-finished awaitable: what ``next_()`` returns to sync middleware."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


class _Next:
    """``next_`` for one middleware: awaitable on the loop, blocking from a thread."""

    __slots__ = ("_call", "_loop")

    def __init__(
        self, call: Callable[[], Coroutine[Any, Any, None]], loop: asyncio.AbstractEventLoop
    ) -> None:
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
        asyncio.run_coroutine_threadsafe(self._call(), self._loop).result()
        return _Done()


async def run_pipeline(stages: Sequence[Middleware], ctx: TurnContext, which: str) -> str | None:
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
        name = str(
            getattr(stage, "__qualname__", None) or getattr(stage, "__name__", None) or type(stage).__name__
        )
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
