"""Plain checks of values at the public boundary: no pydantic, so importing them costs nothing.

The vector store and most surfaces import these on start-up; the pydantic
side (`CheckedModel`, `describe_validation`) is in ``_validation.py`` and is
loaded only by the modules that build a model.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeGuard, TypeVar

from ._errors import TurnkitError

__all__ = ["STORE_HINT", "expect", "expect_text", "is_int", "is_number", "short_repr"]

T = TypeVar("T")

STORE_HINT = "Create it with turnkit.batteries.vector.create_vector_store(...)."


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


def expect(
    value: object, cls: type[T], name: str, error: Callable[..., TurnkitError], hint: str, **context: Any
) -> T:
    """``value`` when it is a ``cls``; else ``error`` saying what ``name`` must be, with ``hint``."""
    if not isinstance(value, cls):
        raise error(
            f"{name} must be a turnkit {cls.__name__}, not {type(value).__name__}.", hint=hint, **context
        )
    return value


def expect_text(value: object, name: str, error: Callable[..., TurnkitError], **context: Any) -> str:
    """``value`` when it is a non-empty string; else ``error`` saying what ``name`` must be."""
    if not isinstance(value, str) or not value:
        raise error(f"{name} must be a non-empty string, got {short_repr(value)}.", **context)
    return value
