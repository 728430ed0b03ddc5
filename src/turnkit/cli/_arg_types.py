"""Argument types of the command line: what argparse turns a flag's text into, with a clear error."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from ._config import AUTO_ALPHA

__all__ = [
    "alpha",
    "file_size",
    "positive_int",
    "read_consistency",
    "text_out_of_optional_values",
    "unit_float",
]

_N = TypeVar("_N", int, float)


def _checked(text: str, convert: Callable[[str], _N], ok: Callable[[_N], bool], expected: str) -> _N:
    """``convert(text)`` if it converts and passes ``ok``; otherwise the error that says what was expected."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def alpha(text: str) -> float | str:
    if text == AUTO_ALPHA:
        return AUTO_ALPHA
    _checked(text, float, lambda _: True, "'auto' or a number from 0 to 1")
    return unit_float(text)


_SIZE_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def file_size(text: str) -> int | None:
    """``10MB``, ``512KiB``, ``2000`` (bytes) or ``none`` (no limit)."""
    clean = text.strip().upper().replace(" ", "")
    if clean == "NONE":
        return None
    digits = clean.rstrip("KMGIB")
    unit = clean[len(digits) :]
    try:
        value = float(digits) * _SIZE_UNITS[unit]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"expected a size such as 10MB, 512KiB or none, got {text!r}"
        ) from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive size, got {text!r}")
    return int(value)


def positive_int(text: str) -> int:
    return _checked(text, int, lambda value: value >= 1, "a positive integer")


def unit_float(text: str) -> float:
    return _checked(text, float, lambda value: 0.0 <= value <= 1.0, "a number from 0 to 1")


def read_consistency(text: str) -> float | None:
    """Seconds (``0`` or more) or ``off`` (``None``: never look for other processes' writes)."""
    if text.strip().lower() == "off":
        return None
    return _checked(text, float, lambda value: 0.0 <= value < math.inf, "seconds (0 or more) or off")


_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def _is_value(word: str, action: argparse.Action) -> bool:
    """Whether argparse should give ``word`` to ``action`` (a flag whose value is optional)."""
    if word == "--" or _NUMBER.fullmatch(word):
        return True  # a number is the flag's own, even a bad one: its type then says what is wrong
    if word.startswith("-"):
        return True  # another flag: argparse already leaves the value out
    if action.choices is not None and word not in action.choices:
        return False
    if callable(action.type):
        try:
            action.type(word)
        except (argparse.ArgumentTypeError, TypeError, ValueError):
            return False
    return True


def text_out_of_optional_values(
    args: Sequence[str], actions: Sequence[argparse.Action], *, allow_abbrev: bool = True
) -> list[str]:
    """``args`` with any word that is not a value moved in front of the flag of optional value before it.

    argparse gives a ``nargs="?"`` flag the next word whatever it is, so
    ``query --hybrid "read a file"`` made the question the flag's value. Here
    a word stays the flag's value only when it is a number or a word the
    flag's type accepts (``auto``); anything else is moved before the flag,
    which then stands bare. Only positional words move, never a flag, so
    which of two flags comes last is unchanged. Nothing after ``--`` moves.
    """
    flags = {s: a for a in actions for s in a.option_strings}

    def optional_value_flag(word: str) -> argparse.Action | None:
        action = flags.get(word)
        if action is None and allow_abbrev and word.startswith("--") and "=" not in word:
            # argparse takes an unambiguous prefix (--hyb) for the flag; so does this.
            found = {a for s, a in flags.items() if s.startswith(word)}
            action = found.pop() if len(found) == 1 else None
        return action if action is not None and action.nargs == "?" else None

    out = list(args)
    i = 0
    while i < len(out) - 1 and out[i] != "--":
        action = optional_value_flag(out[i])
        if action is not None and not _is_value(out[i + 1], action):
            out[i], out[i + 1] = out[i + 1], out[i]
            i = max(i - 1, 0)  # the word may now follow another such flag (--diversify --hybrid TEXT)
        else:
            i += 1
    return out
