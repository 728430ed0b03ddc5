"""One place that turns pydantic's `ValidationError` into a turnkit error.

Public values validated by pydantic (`Retrievable`, `Message`,
`RetrievalSettings`, `ToolLimits`, the tools' inputs) raise turnkit's own
errors with stable codes: each is a `CheckedModel`, or catches the
`ValidationError` at its boundary and words it with `describe_validation`, so
every surface names the failing field the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ModelWrapValidatorHandler, ValidationError, model_validator

from ._checks import short_repr
from ._errors import TurnkitError

__all__ = ["CheckedModel", "describe_validation"]


class CheckedModel(BaseModel):
    """A pydantic model whose bad input raises ``invalid_error`` (a turnkit error naming the field).

    Subclasses set ``invalid_error`` and, where a caller passes the value as
    an option, ``option`` (its name in `of`'s message); `invalid` shapes the
    error where a class needs more than ``field=``.
    """

    invalid_error: ClassVar[Callable[..., TurnkitError]]
    option: ClassVar[str] = "value"

    @model_validator(mode="wrap")
    @classmethod
    def _turnkit_errors(cls, data: Any, handler: ModelWrapValidatorHandler[Self]) -> Self:
        cls._check_input(data)
        try:
            return handler(data)
        except ValidationError as exc:
            message, field = describe_validation(exc, cls.__name__)
            raise cls.invalid(message, field, exc) from exc

    @classmethod
    def _check_input(cls, data: Any) -> None:
        """Hook for class-specific checks that need their own error class."""

    @classmethod
    def invalid(cls, message: str, field: str, exc: ValidationError | None = None) -> TurnkitError:
        """The error for a bad value: ``message`` names the failing ``field``."""
        return cls.invalid_error(message, field=field)

    @classmethod
    def of(cls, value: Self | Mapping[str, Any] | None) -> Self:
        """``value`` as it is, a dict of fields over the defaults, or ``None`` (the defaults)."""
        if isinstance(value, cls):
            return value
        if value is None:
            return cls()
        if not isinstance(value, Mapping):
            raise cls.invalid(
                f"{cls.option} must be {cls.__name__} or a dict of its fields, got {type(value).__name__}.",
                cls.option,
            )
        return cls(**value)


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
            msg = detail or err["msg"].removeprefix("Value error, ")
            if not detail and ", got " not in msg:
                msg += f" (got {short_repr(err.get('input'))})"
            parts.append(msg if loc == "<root>" else f"{loc!r}: {msg}")
    return f"Invalid {model}: " + "; ".join(parts) + ".", fields[0] if fields else ""
