"""The ``E_TOOL_*`` errors of the agent tools.

```
TurnkitError
├── UsageError
│   └── ToolUsageError      E_TOOL_USAGE, E_INVALID_TOOL_CONFIG, E_TOOL_OPTION_MISSING,
│                           E_TOOL_INVALID_INPUT, E_TOOL_COLLECTION_NOT_ALLOWED, E_TOOL_UNKNOWN_MODEL
└── RuntimeFailure
    └── ToolRuntimeError    E_TOOL_RUNTIME, E_TOOL_STORE_RESOLVER_FAILED, E_TOOL_FAILED
```

Creation-time mistakes raise. At execution time a vector query tool never
raises: every error becomes a `ToolErrorInfo` in the result, with the same
``code`` and ``hint`` as the exception would carry.
"""

from __future__ import annotations

from functools import partial

from .._errors import RuntimeFailure, UsageError

__all__ = ["ToolRuntimeError", "ToolUsageError", "config_error", "input_error"]

_CHANGE_THE_CALL = "Change the call; the message says what was wrong."


class ToolUsageError(UsageError):
    """A tool was configured or called with values it cannot use."""

    hints = {
        "E_TOOL_USAGE": _CHANGE_THE_CALL,
        "E_INVALID_TOOL_CONFIG": _CHANGE_THE_CALL,
        "E_TOOL_OPTION_MISSING": _CHANGE_THE_CALL,
        "E_TOOL_INVALID_INPUT": "Send arguments that match the tool's input schema.",
        "E_TOOL_COLLECTION_NOT_ALLOWED": _CHANGE_THE_CALL,
        "E_TOOL_UNKNOWN_MODEL": "Use one of the model names the host configured (models=...).",
    }


class ToolRuntimeError(RuntimeFailure):
    """A tool failed while running."""

    hints = {
        "E_TOOL_RUNTIME": "Something failed while running; the cause is chained to this error.",
        "E_TOOL_STORE_RESOLVER_FAILED": (
            "Check the request context the host passes (a tenant id, for example)."
        ),
        "E_TOOL_FAILED": "Retry once; if it fails again, answer without the knowledge base.",
    }


config_error = partial(ToolUsageError, code="E_INVALID_TOOL_CONFIG")
input_error = partial(ToolUsageError, code="E_TOOL_INVALID_INPUT")
