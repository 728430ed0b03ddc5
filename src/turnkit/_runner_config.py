"""`TurnRunnerConfig`: everything a runner needs, validated when it is built."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ._checks import is_int
from ._context import (
    DeleteRetrievableCallback,
    FetchMessagesCallback,
    FetchRetrievablesCallback,
    MutateRetrievableCallback,
    StoreMessageCallback,
    StoreRetrievableCallback,
)
from ._errors import TurnkitError, UsageError
from ._models import ChatModel
from ._pipeline import Middleware, fetch_retrievables_stage
from ._prompt import SAFETY_DIRECTIVE, UntrustedPlacement
from ._retrievable import TrustTier, validate_trust_tier
from ._tokens import DEFAULT_ENCODING, EncodingName
from ._turn import TurnEvent

__all__ = ["DEFAULT_SYSTEM_PROMPT", "TurnRunnerConfig"]

_config_error = partial(UsageError, code="E_INVALID_TURN_RUNNER_CONFIG")

DEFAULT_SYSTEM_PROMPT = (
    "You are a helpful assistant. Answer using the retrieved records when they are relevant."
)
"""The system prompt used when a config does not set one."""


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
        raise _config_error(
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
            fails with `UsageError` (``E_TOKEN_BUDGET_EXCEEDED``).
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
        turn_write_tier: The most trusted tier of a record written during a
            turn (``ctx.store_retrievable`` / ``ctx.mutate_retrievable`` in
            middleware): such a record comes from the conversation, what the
            user or the model wrote, so a more trusted one is stored and
            rendered at this tier. ``"third-party"`` by default; declare
            ``"first-party"`` only for writes you vet. Writes through
            `TurnRunner.new_context` keep their own tier.

    Raises:
        UsageError: ``E_INVALID_TURN_RUNNER_CONFIG``: a field has the wrong type or shape; the
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
    turn_write_tier: TrustTier = "third-party"

    def __post_init__(self) -> None:
        complete = getattr(self.model, "complete", None)
        if not callable(complete) or not _accepts(complete, 1):
            raise _config_error(
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
            raise _config_error(
                f"TurnRunnerConfig.fetch_messages and store_message go together; {missing} is missing.",
                hint="Set both (your own history store) or neither (in-memory history).",
                field=missing,
            )
        for name in ("input_pipeline", "output_pipeline"):
            stages = getattr(self, name)
            if isinstance(stages, str | bytes) or not isinstance(stages, Sequence):
                raise _config_error(
                    f"TurnRunnerConfig.{name} must be a list of middleware, got {stages!r}.", field=name
                )
            for i, stage in enumerate(stages):
                _check_callable(f"{name}[{i}]", stage, 2, "a middleware (ctx, next_)")
            # Freeze the pipeline: a later append to the caller's list must not change the runner.
            object.__setattr__(self, name, tuple(stages))
        budget, limit = self.token_budget, self.max_history_messages
        for name, ok, what in (
            ("token_budget", budget is None or is_int(budget, 1), "a positive int or None"),
            ("encoding", self.encoding in ("cl100k_base", "o200k_base"), "'o200k_base' or 'cl100k_base'"),
            ("max_history_messages", limit is None or is_int(limit, 0), "an int >= 0 or None"),
            ("system_prompt", isinstance(self.system_prompt, str), "a string"),
            ("safety_directive", isinstance(self.safety_directive, str), "a string"),
            ("untrusted_placement", self.untrusted_placement in ("user", "system"), "'user' or 'system'"),
        ):
            if not ok:
                raise _config_error(
                    f"TurnRunnerConfig.{name} must be {what}, got {getattr(self, name)!r}.", field=name
                )
        _check_callable("on_event", self.on_event, 1, "a callable (event)")
        try:
            validate_trust_tier(self.turn_write_tier)
        except TurnkitError as exc:
            raise _config_error(
                f"TurnRunnerConfig.turn_write_tier: {exc.message}",
                hint="Declare the tier of what turns write: 'third-party' (default) or 'first-party'.",
                field="turn_write_tier",
            ) from None
