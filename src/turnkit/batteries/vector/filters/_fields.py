"""Filter fields and operators: names, paths, the MISSING sentinel and operator spellings."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from typing import Final, TypeAlias, get_args

from turnkit.batteries.vector._errors import InvalidFilterError, UnknownFieldError
from turnkit.batteries.vector.filters._ast import COLUMN_FIELDS, Op


class _Missing(enum.Enum):
    """Sentinel type: "no value given" for `condition`, "key absent" for `evaluate`."""

    MISSING = "MISSING"

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing.MISSING
"""Marks an absent value: a metadata key that is not there, or an omitted argument."""

MAX_IN_VALUES: Final = 10_000
"""Most values one ``in``/``nin`` list may hold (the SQL grows with it)."""

MAX_LITERAL_LENGTH: Final = 65_536
"""Longest string literal a filter accepts, in characters."""

_SUPPORTED_OPS_TEXT = (
    "= == != <> > >= < <= in, not in, like, contains, exists, null (eq ne gt gte lt lte nin)"
)

OPERATOR_ALIASES: Final[Mapping[str, Op]] = {
    **{op: op for op in get_args(Op)},
    "=": "eq",
    "==": "eq",
    "!=": "ne",
    "<>": "ne",
    ">": "gt",
    ">=": "gte",
    "<": "lt",
    "<=": "lte",
    "not in": "nin",
    "is null": "null",
}
"""Accepted spellings (case-insensitive, spaces collapsed) of each canonical operator, its name included.

``"is not null"`` is accepted too and means ``ne None``.
"""

# Conservative on purpose: these characters never need quoting in a JSONPath
# (`$["seg"]`) or an SQL literal. `-` is safe only in the bracket form; LanceDB
# rejects `$.a-b` (measured), which is why paths are always bracketed.
_SEGMENT_RE: Final = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
MAX_PATH_SEGMENTS: Final = 16
MAX_SEGMENT_LENGTH: Final = 128
_METADATA_PREFIX: Final = "metadata."

_Number: TypeAlias = int | float


def validate_field(field: str) -> str:
    """Check a filter field name and return its full spelling.

    Fields are the columns ``id``, ``document``, ``created_at`` and
    ``updated_at``, or a path into the metadata JSON: ``metadata.<key>`` or
    ``metadata.<key>.<key>…`` (up to 16 keys). A key is ASCII letters, digits,
    ``_`` and ``-``, not starting with ``-``. A metadata path may leave out
    the ``metadata.`` prefix: ``kind`` is ``metadata.kind``, so both spellings
    build the same filter. The names that mean something else (``vector``,
    ``score``, ``distance``, a column name in other letter case) are refused
    rather than read as metadata keys.

    Args:
        field: The name to check.

    Returns:
        The full name: a column, or ``metadata.<key>[.<key>…]``.

    Raises:
        UnknownFieldError: The name is not a column or a valid metadata path;
            the hint suggests the likely intended name.
    """
    if not isinstance(field, str):
        raise UnknownFieldError(
            f"A filter field must be a string, not {type(field).__name__}.", field=repr(field)[:80]
        )
    if field in COLUMN_FIELDS:
        return field
    if field.startswith(_METADATA_PREFIX):
        if (bad := _bad_segment(_path(field))) is None:
            return field
        raise UnknownFieldError(
            f"Filter field {field!r} is not a valid metadata path: {bad}.",
            hint="Metadata keys are ASCII letters, digits, '_' and '-' (not first), joined with '.', "
            f"at most {MAX_PATH_SEGMENTS} deep: metadata.year, metadata.source.kind.",
            field=field,
        )
    if not _ambiguous(field) and _bad_segment(field.split(".")) is None:
        return _METADATA_PREFIX + field
    raise UnknownFieldError(f"Unknown filter field {field!r}.", hint=_field_hint(field), field=field)


def with_prefix(key: str, prefix: str) -> str:
    """The field a key names when written under ``prefix`` (``""`` or ``"metadata."``).

    A key that already starts with the prefix keeps it: ``metadata.kind`` and
    ``kind`` name the same field under ``"metadata."``, so a model or a person
    may write either. (A metadata key itself named ``metadata`` is then
    written in full: ``metadata.metadata.kind``.)
    """
    return key if not prefix or key.startswith(prefix) else prefix + key


_RESERVED_NAMES: Final = frozenset({"vector", "_distance", "_rowid", "score", "distance"})


def _ambiguous(field: str) -> bool:
    """Whether a bare name means something other than a metadata key (reserved, a column, an operator)."""
    return (
        field in _RESERVED_NAMES
        or field.lower() in COLUMN_FIELDS
        or field.split(".", 1)[0].lower() == "metadata"
        or field.startswith("$")
    )


def _bad_segment(segments: Sequence[str]) -> str | None:
    """Why a metadata key path is invalid, or None when it is valid."""
    if len(segments) > MAX_PATH_SEGMENTS:
        return f"more than {MAX_PATH_SEGMENTS} keys"
    for seg in segments:
        if not seg:
            return "empty key (check for a doubled, leading or trailing '.')"
        if len(seg) > MAX_SEGMENT_LENGTH:
            return f"key longer than {MAX_SEGMENT_LENGTH} characters"
        if _SEGMENT_RE.fullmatch(seg) is None:
            return f"key {seg[:40]!r} has characters other than ASCII letters, digits, '_' and '-'"
    return None


def _field_hint(field: str) -> str:
    lowered = field.lower()
    if lowered in COLUMN_FIELDS:
        return f"Field names are case-sensitive: did you mean {lowered!r}?"
    if field in ("metadata", "metadata."):
        return "Name a key inside the metadata: metadata.<key>, e.g. metadata.year."
    head, _, rest = field.partition(".")
    if head.lower() == "metadata" and rest:
        return f"Field names are case-sensitive: did you mean 'metadata.{rest}'?"
    if field in _RESERVED_NAMES:
        return (
            f"{field!r} cannot be filtered on; use near_vector()/min_score() for similarity "
            f"(a metadata key of that name is 'metadata.{field}')."
        )
    if field.startswith("$"):
        return "Operators ($eq, $gt, ...) go inside a field's value: {'year': {'$gt': 2020}}."
    return "Fields are id, document, created_at, updated_at, or a metadata key: kind, metadata.source.kind."


def _path(field: str) -> tuple[str, ...]:
    """The metadata key path of a validated ``metadata.…`` field."""
    return tuple(field[len(_METADATA_PREFIX) :].split("."))


def _normalize_op(op: str, field: str) -> tuple[Op, bool]:
    """Canonical operator, plus True for the spelling ``is not null``."""
    if not isinstance(op, str):
        raise InvalidFilterError(
            f"A filter operator must be a string, not {type(op).__name__}.",
            code="E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
            field=field,
        )
    key = " ".join(op.strip().lower().split())
    if key == "is not null":
        return "ne", True
    canonical = OPERATOR_ALIASES.get(key)
    if canonical is None:
        raise InvalidFilterError(
            f"Unsupported filter operator {op[:40]!r} on {field!r}; supported: {_SUPPORTED_OPS_TEXT}.",
            code="E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
            field=field,
            op=op[:40],
        )
    return canonical, False


def _too_deep() -> InvalidFilterError:
    return InvalidFilterError(
        "The filter is nested too deeply to process.",
        hint="Flatten it: combine many conditions with one and_()/or_() (or $in) instead of nesting.",
    )
