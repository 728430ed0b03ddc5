"""Which errors a vector query tool call shows the model, and as which kind: one table."""

from __future__ import annotations

import logging
from typing import Final

from ..._errors import TurnkitError
from .._errors import ToolRuntimeError
from .._results import ErrorKind, ToolErrorInfo

__all__ = ["classify"]

log = logging.getLogger("turnkit.tools")

# By code. ``shown``: the message and hint reach the model as they are; otherwise only the stable
# code does, and the details go to the host's log (backend and encoder messages can quote SQL with
# guard values, URIs or keys). A code not listed is hidden, as a failure or a configuration error.
_TABLE: Final[dict[str, tuple[ErrorKind, bool]]] = {
    "E_TOOL_INVALID_INPUT": ("invalid_input", True),
    "E_VECTOR_STORE_INVALID_FILTER": ("invalid_input", True),
    "E_VECTOR_STORE_UNKNOWN_FIELD": ("invalid_input", True),
    "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND": ("invalid_input", True),
    "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR": ("invalid_input", True),
    "E_INVALID_TOOL_CONFIG": ("configuration", True),
    "E_TOOL_OPTION_MISSING": ("configuration", True),
    "E_TOOL_STORE_RESOLVER_FAILED": ("configuration", True),
    "E_TOOL_UNKNOWN_MODEL": ("configuration", True),
    "E_VECTOR_STORE_COLLECTION_NOT_FOUND": ("configuration", True),
    "E_VECTOR_STORE_ENCODER_MISMATCH": ("configuration", True),
    "E_VECTOR_RANKING_INVALID_CONFIG": ("configuration", True),
    "E_VECTOR_RERANK_FAILED": ("failed", False),
}


def classify(exc: TurnkitError, tool_id: str) -> ToolErrorInfo:
    """The structured error the model gets for ``exc`` (see the table above)."""
    kind, shown = _TABLE.get(exc.code, (None, False))  # None: by the error's class
    info = ToolErrorInfo.from_error(exc, kind)
    if shown:
        return info
    # Keep the stable code, log the details.
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
