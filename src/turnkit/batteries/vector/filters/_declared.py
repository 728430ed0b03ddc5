"""Declared fields: metadata keys a collection also keeps as typed, indexed columns.

A declared field is an *accelerator*, not a second truth: the key stays in the
record's JSON metadata (what reads return), and the column holds the same
value, or NULL where the key is missing or JSON ``null``. Writes refuse a
value of another type, so the column can answer every comparison exactly as
the JSON read would (see ``_sql._declared_sql``).
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias, get_args

from turnkit._checks import is_int, is_number

__all__ = ["FIELD_TYPES", "MAX_EXACT_INT", "FieldType", "fits"]

FieldType: TypeAlias = Literal["str", "int", "float", "bool", "list[str]"]
"""The types a declared field can have."""

FIELD_TYPES: Final[tuple[FieldType, ...]] = get_args(FieldType)

MAX_EXACT_INT: Final = 2**53
"""Largest magnitude an ``int`` field stores: filters compare numbers as float64, exact up to here."""


def fits(kind: FieldType, value: Any) -> bool:
    """Whether ``value`` (not None) is a value of a field of type ``kind``."""
    match kind:
        case "str":
            return isinstance(value, str)
        case "bool":
            return isinstance(value, bool)
        case "int":
            return is_int(value, -MAX_EXACT_INT, MAX_EXACT_INT)
        case "float":
            return is_number(value, finite=False)
        case "list[str]":
            return isinstance(value, list | tuple) and all(isinstance(item, str) for item in value)
    return False
