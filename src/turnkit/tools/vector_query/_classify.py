"""Which errors a vector query tool call shows the model, and as which kind: one table."""

from __future__ import annotations

import logging
from typing import Final

from ..._errors import TurnkitError
from .._errors import ToolRuntimeError
from .._results import ErrorKind, ToolErrorInfo

__all__ = ["classify"]

log = logging.getLogger("turnkit.tools")

# The codes whose message and hint reach the model as they are, and their kind. Any other code reaches
# it as the stable code only, with the details in the host's log (backend and encoder messages can quote
# SQL with guard values, URIs or keys), as a failure or a configuration error by the error's class.
_SHOWN: Final[dict[str, ErrorKind]] = {
    "E_TOOL_INVALID_INPUT": "invalid_input",
    "E_VECTOR_STORE_INVALID_FILTER": "invalid_input",
    "E_VECTOR_STORE_UNKNOWN_FIELD": "invalid_input",
    "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND": "invalid_input",
    "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR": "invalid_input",
    "E_INVALID_TOOL_CONFIG": "configuration",
    "E_TOOL_OPTION_MISSING": "configuration",
    "E_TOOL_STORE_RESOLVER_FAILED": "configuration",
    "E_TOOL_UNKNOWN_MODEL": "configuration",
    "E_VECTOR_STORE_COLLECTION_NOT_FOUND": "configuration",
    "E_VECTOR_STORE_ENCODER_MISMATCH": "configuration",
    "E_VECTOR_RANKING_INVALID_CONFIG": "configuration",
}


def classify(exc: TurnkitError, tool_id: str) -> ToolErrorInfo:
    """The structured error the model gets for ``exc`` (see the table above)."""
    info = ToolErrorInfo.from_error(exc, _SHOWN.get(exc.code))  # None: by the error's class
    if exc.code in _SHOWN:
        return info
    # Keep the stable code, log the details (E_VECTOR_RERANK_FAILED, a failed rerank, among them).
    log.warning("vector query tool %r: %s: %s", tool_id, exc.code, exc.message, exc_info=exc)
    if info.kind == "failed":
        message = "The knowledge-base search failed; the details are in the host's log."
        hint = ToolRuntimeError.hints["E_TOOL_FAILED"]
    else:
        message = (
            "The knowledge-base tool is not set up correctly for this request; "
            "the details are in the host's log."
        )
        hint = "Answer without the knowledge base; the host must fix the tool's configuration."
    return info.model_copy(update={"message": message, "hint": hint})
