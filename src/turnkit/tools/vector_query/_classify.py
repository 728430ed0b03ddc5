"""Which errors a vector query tool call shows the model, and as which kind: one table."""

from __future__ import annotations

import logging
from typing import Final

from ..._errors import RuntimeFailure, TurnkitError
from ...batteries.vector import (
    CollectionNotFoundError,
    EncoderMismatchError,
    InvalidFilterError,
    InvalidRankingConfigError,
    RerankFailedError,
    UnknownFieldError,
    UnsupportedFilterOperatorError,
)
from .._errors import (
    InvalidToolConfigError,
    InvalidToolInputError,
    StoreResolverError,
    ToolFailedError,
    ToolOptionMissingError,
    UnknownModelError,
)
from .._results import ErrorKind, ToolErrorInfo

__all__ = ["ToolCallFailure", "classify"]

log = logging.getLogger("turnkit.tools")

# First match wins. ``shown``: the message and hint reach the model as they are; otherwise only
# the stable code does, and the details go to the host's log (backend and encoder messages can
# quote SQL with guard values, URIs or keys).
_TABLE: Final[tuple[tuple[type[TurnkitError], ErrorKind, bool], ...]] = (
    (InvalidToolInputError, "invalid_input", True),
    (InvalidFilterError, "invalid_input", True),
    (UnknownFieldError, "invalid_input", True),
    (UnsupportedFilterOperatorError, "invalid_input", True),
    (InvalidToolConfigError, "configuration", True),
    (ToolOptionMissingError, "configuration", True),
    (StoreResolverError, "configuration", True),
    (UnknownModelError, "configuration", True),
    (CollectionNotFoundError, "configuration", True),
    (EncoderMismatchError, "configuration", True),
    (InvalidRankingConfigError, "configuration", True),
    (RerankFailedError, "failed", False),
)


class ToolCallFailure(Exception):
    """Carries a structured error out of a tool call."""

    def __init__(self, info: ToolErrorInfo) -> None:
        super().__init__(info.message)
        self.info = info


def classify(exc: TurnkitError, tool_id: str) -> ToolCallFailure:
    """The structured error the model gets for ``exc`` (see the table above)."""
    for kind_of, kind, shown in _TABLE:
        if isinstance(exc, kind_of):
            return (
                ToolCallFailure(ToolErrorInfo.from_error(exc, kind)) if shown else hidden(exc, tool_id, kind)
            )
    return hidden(exc, tool_id, "failed" if isinstance(exc, RuntimeFailure) else "configuration")


def hidden(exc: TurnkitError, tool_id: str, kind: ErrorKind) -> ToolCallFailure:
    """Keep the stable code, log the details."""
    log.warning("vector query tool %r: %s: %s", tool_id, exc.code, exc.message, exc_info=exc)
    if kind == "failed":
        message = "The knowledge-base search failed; the details are in the host's log."
        hint = ToolFailedError.default_hint
    else:
        message = (
            "The knowledge-base tool is not set up correctly for this request; "
            "the details are in the host's log."
        )
        hint = "Answer without the knowledge base; the host must fix the tool's configuration."
    return ToolCallFailure(ToolErrorInfo(code=exc.code, message=message, hint=hint, kind=kind))
