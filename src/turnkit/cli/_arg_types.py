"""Argument types of the command line: what argparse turns a flag's text into, with a clear error."""

from __future__ import annotations

import argparse

from ._config import AUTO_ALPHA

__all__ = ["alpha", "file_size", "positive_int", "read_consistency", "unit_float"]


def alpha(text: str) -> float | str:
    if text == AUTO_ALPHA:
        return AUTO_ALPHA
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a number from 0 to 1, got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


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
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def unit_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value


def read_consistency(text: str) -> float | None:
    """Seconds (``0`` or more) or ``off`` (``None``: never look for other processes' writes)."""
    if text.strip().lower() == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds (0 or more) or off, got {text!r}") from None
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected seconds (0 or more) or off, got {text!r}")
    return value
