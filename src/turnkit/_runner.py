"""`TurnRunner`: one turn of a retrieval-augmented conversation.

``await runner.run("question")`` stores the user message, runs the input
pipeline (by default: fetch retrievables), renders the prompt within the token
budget, calls the model, stores the reply, runs the output pipeline, and
returns a `TurnResult`. ``runner.run_sync(...)`` does the same from sync code,
inside a running event loop too.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from functools import partial

from ._aio import run_sync
from ._checks import expect, expect_text
from ._context import Callbacks, TurnContext, invoke
from ._errors import ModelError, PipelineError, TurnkitError, UsageError
from ._fit import fit_prompt
from ._messages import InMemoryMessageStore, Message
from ._pipeline import (
    GROUNDING_STASH_KEY,
    NO_GROUNDED_ANSWER,
    Middleware,
    Next,
    fetch_retrievables_stage,
    run_pipeline,
)
from ._prompt import RenderedPrompt
from ._runner_config import DEFAULT_SYSTEM_PROMPT, TurnRunnerConfig
from ._tokens import count_tokens
from ._turn import TurnEvent, TurnResult, _Turn

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

_context_error = partial(UsageError, code="E_INVALID_TURN_CONTEXT")
_config_error = partial(UsageError, code="E_INVALID_TURN_RUNNER_CONFIG")


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
        UsageError: ``E_INVALID_TURN_RUNNER_CONFIG``: ``config`` is not a `TurnRunnerConfig`.
    """

    def __init__(self, config: TurnRunnerConfig) -> None:
        hint = "Write TurnRunner(TurnRunnerConfig(model=..., ...))."
        expect(config, TurnRunnerConfig, "config", _config_error, hint, field="config")
        self._config = config
        self._store: InMemoryMessageStore | None = None
        fetch_messages, store_message = config.fetch_messages, config.store_message
        if fetch_messages is None or store_message is None:
            self._store = InMemoryMessageStore()
            fetch_messages, store_message = self._store.fetch_messages, self._store.store_message
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
            UsageError: ``E_INVALID_TURN_CONTEXT``: the message or conversation id is invalid.
            TurnkitError: a middleware or callback raised a turnkit error
                (``EncoderRequiredError``, ``UnknownTrustTierError``…): it
                arrives unchanged, with ``pipeline`` (``"input"`` or
                ``"output"``), ``pipeline_stage`` and ``pipeline_index`` added
                to its context and a note naming the stage.
            PipelineError: a middleware raised any other exception (``code``
                tells input from output; the original error is the
                ``__cause__``; ``stage`` and ``index`` say where).
            ModelError: the model failed or returned something other than text.
            UsageError: ``E_TOKEN_BUDGET_EXCEEDED``: the prompt cannot fit the budget even
                without retrievables and history.
        """
        message = _user_message(user_message)
        expect_text(conversation_id, "conversation_id", _context_error, field="conversation_id")
        cfg = self._config
        ctx = TurnContext(
            callbacks=self._callbacks,
            conversation_id=conversation_id,
            system_prompt=cfg.system_prompt,
            loop=asyncio.get_running_loop(),
            write_tier=cfg.turn_write_tier,
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
            reason = await run_pipeline(cfg.input_pipeline, ctx, "input")
            data.update(stopped=reason is not None, retrievables=len(ctx.turn_retrievables))
        if reason is not None:
            reply_message = None if ctx.reply is None else await self._store_reply(ctx, turn)
            return await turn.finish(
                reply=ctx.reply,
                stopped=True,
                stop_reason=reason,
                stopped_in="input",
                user_message=message,
                reply_message=reply_message,
            )

        async with turn.timed("prompt_rendered") as data:
            rendered, tokens, dropped, dropped_messages = await fit_prompt(ctx, cfg)
            data.update(
                prompt_tokens=tokens.prompt, retrievables=len(rendered.retrievables), dropped=len(dropped)
            )

        async with turn.timed("model"):
            reply = await self._complete(rendered)
        ctx.reply = reply
        reply_message = await self._store_reply(ctx, turn)
        tokens = replace(tokens, reply=count_tokens(reply, cfg.encoding))

        async with turn.timed("output_pipeline") as data:
            out_reason = await run_pipeline(cfg.output_pipeline, ctx, "output")
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


def _user_message(value: str | Message) -> Message:
    if isinstance(value, Message):
        if value.role != "user":
            raise _context_error(
                f"A turn starts with a user message, got role {value.role!r}.", field="user_message"
            )
        message = value
    elif isinstance(value, str):
        message = Message(role="user", content=value)
    else:
        raise _context_error(
            f"run() takes the user's text or a Message, got {type(value).__name__}.", field="user_message"
        )
    if not message.content.strip():
        raise _context_error("The user message is empty.", field="user_message")
    return message
