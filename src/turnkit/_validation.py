"""One place that turns pydantic's `ValidationError` into a turnkit message.

Public values validated by pydantic (`Retrievable`, `RetrievalSettings`, the
tools' inputs) raise turnkit's own errors with stable codes; each catches the
`ValidationError` at its boundary and words it here, so every surface names
the failing field the same way.
"""

from __future__ import annotations

from pydantic import ValidationError

__all__ = ["describe_validation", "short_repr"]


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
