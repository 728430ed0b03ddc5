"""The ``E_TOOL_*`` errors of the agent tools.

```
TurnkitError
├── UsageError
│   └── ToolUsageError                  E_TOOL_USAGE
│       ├── InvalidToolConfigError      E_INVALID_TOOL_CONFIG
│       ├── ToolOptionMissingError      E_TOOL_OPTION_MISSING
│       ├── InvalidToolInputError       E_TOOL_INVALID_INPUT
│       ├── CollectionNotAllowedError   E_TOOL_COLLECTION_NOT_ALLOWED
│       └── UnknownModelError           E_TOOL_UNKNOWN_MODEL
└── RuntimeFailure
    └── ToolRuntimeError                E_TOOL_RUNTIME
        ├── StoreResolverError          E_TOOL_STORE_RESOLVER_FAILED
        └── ToolFailedError             E_TOOL_FAILED
```

Creation-time mistakes raise. At execution time a vector query tool never
raises: every error becomes a `ToolErrorInfo` in the result, with the same
``code`` and ``hint`` as the exception would carry.
"""

from __future__ import annotations

from .._errors import RuntimeFailure, UsageError

__all__ = [
    "CollectionNotAllowedError",
    "InvalidToolConfigError",
    "InvalidToolInputError",
    "StoreResolverError",
    "ToolFailedError",
    "ToolOptionMissingError",
    "ToolRuntimeError",
    "ToolUsageError",
    "UnknownModelError",
]


class ToolUsageError(UsageError):
    """A tool was configured or called with values it cannot use."""

    code = "E_TOOL_USAGE"


class ToolRuntimeError(RuntimeFailure):
    """A tool failed while running."""

    code = "E_TOOL_RUNTIME"


class InvalidToolConfigError(ToolUsageError):
    """An option given when creating a tool (or in a request context) is invalid."""

    code = "E_INVALID_TOOL_CONFIG"
    option: str


class ToolOptionMissingError(ToolUsageError):
    """A required option is set neither at creation nor in the request context."""

    code = "E_TOOL_OPTION_MISSING"
    option: str


class InvalidToolInputError(ToolUsageError):
    """The arguments a model sent do not fit the tool's input schema."""

    code = "E_TOOL_INVALID_INPUT"
    default_hint = "Send arguments that match the tool's input schema."


class CollectionNotAllowedError(ToolUsageError):
    """A request named a collection the host did not expose."""

    code = "E_TOOL_COLLECTION_NOT_ALLOWED"


class StoreResolverError(ToolRuntimeError):
    """The host's store resolver raised or returned something that is not a store."""

    code = "E_TOOL_STORE_RESOLVER_FAILED"
    default_hint = "Check the request context the host passes (a tenant id, for example)."


class ToolFailedError(ToolRuntimeError):
    """An unexpected error inside a tool (the details are logged, not shown)."""

    code = "E_TOOL_FAILED"
    default_hint = "Retry once; if it fails again, answer without the knowledge base."


class UnknownModelError(ToolUsageError):
    """A ranking option named a model the host did not provide."""

    code = "E_TOOL_UNKNOWN_MODEL"
    default_hint = "Use one of the model names the host configured (models=...)."
