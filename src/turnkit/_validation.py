"""One place that turns pydantic's `ValidationError` into a turnkit message.

Public values validated by pydantic (`Retrievable`, `RetrievalSettings`, the
tools' inputs) raise turnkit's own errors with stable codes; each catches the
`ValidationError` at its boundary and words it here, so every surface names
the failing field the same way.
"""

from __future__ import annotations

import math
from typing import TypeGuard

from pydantic import ValidationError

__all__ = ["describe_validation", "is_int", "is_number", "short_repr"]


def describe_validation(exc: ValidationError, model: str) -> tuple[str, str]:
    """One message naming every failing field of ``model``, and the first failing field's name."""
    parts: list[str] = []
    fields: list[str] = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "<root>"
        fields.append(loc)
        if err["type"] == "extra_forbidden":
            parts.append(f"{loc!r} is not a field of {model}")
        elif err["type"] == "missing":
            parts.append(f"{loc!r} is required")
        else:
            # A nested turnkit value words its own fields; a check of the whole model has no field.
            cause = (err.get("ctx") or {}).get("error")
            detail = getattr(cause, "context", {}).get("detail")
            msg = detail or f"{err['msg'].removeprefix('Value error, ')} (got {short_repr(err.get('input'))})"
            parts.append(msg if loc == "<root>" else f"{loc!r}: {msg}")
    return f"Invalid {model}: " + "; ".join(parts) + ".", fields[0] if fields else ""


def short_repr(value: object) -> str:
    """``repr(value)``, cut to 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def is_int(value: object, low: int | None = None, high: int | None = None) -> TypeGuard[int]:
    """Whether ``value`` is an int in ``[low, high]`` (bounds left out are open); a bool is no int here."""
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and (low is None or value >= low)
        and (high is None or value <= high)
    )


def is_number(
    value: object, low: float | None = None, high: float | None = None, *, finite: bool = True
) -> TypeGuard[float]:
    """Whether ``value`` is an int or float in ``[low, high]``, finite unless told; a bool is no number."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (math.isfinite(value) or not finite)
        and (low is None or value >= low)
        and (high is None or value <= high)
    )
