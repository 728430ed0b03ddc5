"""Filters evaluated over a collection held in memory: the filter tree to a boolean mask.

The semantics are those of :func:`turnkit.batteries.vector.filters._evaluate.evaluate`
(type-strict JSON comparisons, two-valued logic, ``ne``/``nin`` as negations);
the tests hold the mask to ``evaluate`` on hypothesis-generated trees. Anything
this module does not handle (``like``, ``contains``, raw SQL) makes
:func:`filter_mask` return ``None`` and the search goes to LanceDB instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, assert_never

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from turnkit.batteries.vector._errors import Unsupported
from turnkit.batteries.vector.filters._ast import COLUMN_FIELDS, And, Condition, FilterNode, Not, Op, Or
from turnkit.batteries.vector.filters._fields import MISSING
from turnkit.batteries.vector.filters._sql import _recheck

__all__ = ["PathColumn", "filter_mask", "path_column"]

Mask = npt.NDArray[np.bool_]

# Kinds of the value found at a metadata path.
_MISSING, _NULL, _BOOL, _NUM, _STR, _OTHER = range(6)
_ARROW_OPS = {"eq": pc.equal, "gt": pc.greater, "gte": pc.greater_equal, "lt": pc.less, "lte": pc.less_equal}
_NUMPY_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "eq": np.equal,
    "gt": np.greater,
    "gte": np.greater_equal,
    "lt": np.less,
    "lte": np.less_equal,
}


class PathColumn:
    """The values at one metadata path, split by JSON type, for vectorized comparisons."""

    __slots__ = ("bools", "kinds", "nbytes", "numbers", "strings")

    def __init__(self, values: Sequence[Any]) -> None:
        n = len(values)
        self.kinds = np.full(n, _MISSING, dtype=np.int8)
        self.numbers = np.full(n, np.nan)
        self.bools = np.zeros(n, dtype=np.bool_)
        strings: list[str | None] = [None] * n
        for i, value in enumerate(values):
            if value is MISSING:
                continue
            kind = type(value)
            if value is None:
                self.kinds[i] = _NULL
            elif kind is bool:
                self.kinds[i] = _BOOL
                self.bools[i] = value
            elif kind is int or kind is float:
                try:
                    self.numbers[i] = float(value)
                    self.kinds[i] = _NUM
                except OverflowError:  # `evaluate` treats such a number as comparable to nothing
                    self.kinds[i] = _OTHER
            elif kind is str:
                self.kinds[i] = _STR
                strings[i] = value
            else:
                self.kinds[i] = _OTHER
        self.strings = pa.array(strings, pa.string())
        self.nbytes = int(self.kinds.nbytes + self.numbers.nbytes + self.bools.nbytes + self.strings.nbytes)


def _load(text: Any) -> Any:
    if text is None:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:  # integers beyond 64 bits: the stdlib reads them
        return json.loads(text)


def path_column(metadata_json: Sequence[Any], path: Sequence[str]) -> PathColumn:
    """Extract the value at ``path`` from each record's metadata JSON text."""
    values: list[Any] = []
    append = values.append
    for text in metadata_json:
        current = _load(text)
        for seg in path:
            if type(current) is not dict or seg not in current:
                current = MISSING
                break
            current = current[seg]
        append(current)
    return PathColumn(values)


def filter_mask(
    node: FilterNode,
    columns: dict[str, pa.Array],
    path: Callable[[tuple[str, ...]], PathColumn],
) -> Mask | None:
    """The rows ``node`` accepts, or ``None`` when the filter needs LanceDB.

    Args:
        node: The filter tree.
        columns: ``id``, ``document``, ``created_at`` and ``updated_at`` as Arrow arrays.
        path: Returns the (cached) `PathColumn` for a metadata path.
    """
    try:
        return _mask(node, columns, path)
    except (Unsupported, pa.ArrowException, RecursionError):
        return None


def _mask(
    node: FilterNode, columns: dict[str, pa.Array], path: Callable[[tuple[str, ...]], PathColumn]
) -> Mask:
    n = len(columns["id"])
    if isinstance(node, And | Or):
        every = isinstance(node, And)  # starts True and ands, or starts False and ors
        combine = np.logical_and if every else np.logical_or
        out = np.full(n, every, dtype=np.bool_)
        for child in node.children:
            combine(out, _mask(child, columns, path), out=out)
        return out
    if isinstance(node, Not):
        return ~_mask(node.child, columns, path)
    if not isinstance(node, Condition):
        raise Unsupported
    node = _recheck(node)  # the same validation and normalization as the SQL compiler
    values = columns[node.field] if node.field in COLUMN_FIELDS else path(tuple(node.field.split(".")[1:]))
    return _condition(values, node.op, node.value)


def _bools(array: Any) -> Mask:
    return np.asarray(pc.fill_null(array, False).to_numpy(zero_copy_only=False), dtype=np.bool_)


def _condition(values: pa.Array | PathColumn, op: Op, value: Any) -> Mask:
    # A column and a metadata path differ only in what is absent and how a value compares,
    # as in `evaluate`'s `_eval_condition`.
    if isinstance(values, PathColumn):
        absent: Mask = (values.kinds == _MISSING) | (values.kinds == _NULL)
    else:
        absent = np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=np.bool_)
    match op:
        case "exists":
            # A JSON null is present; a column's null is not.
            present = values.kinds != _MISSING if isinstance(values, PathColumn) else ~absent
            return present if value else ~present
        case "null":
            return absent if value else ~absent
        case "ne":
            return ~absent if value is None else ~_condition(values, "eq", value)
        case "in" | "nin":
            out = np.zeros(len(absent), dtype=np.bool_)
            listed = [v for v in value if v is not None]
            if isinstance(values, PathColumn):
                for item in listed:
                    out |= _compare_metadata(values, "eq", item)
            elif listed:  # one vectorized lookup
                out |= _bools(pc.is_in(values, value_set=pa.array(listed, values.type)))
            if len(listed) != len(value):
                out |= absent
            return ~out if op == "nin" else out
        case "eq" | "gt" | "gte" | "lt" | "lte":
            if isinstance(values, PathColumn):
                return _compare_metadata(values, op, value)
            return _bools(_ARROW_OPS[op](values, pa.scalar(value, values.type)))
        case "like" | "contains":  # LanceDB's own semantics: the search falls back to it
            raise Unsupported
        case _:
            assert_never(op)


def _compare_metadata(col: PathColumn, op: str, value: Any) -> Mask:
    kinds = col.kinds
    if isinstance(value, bool):
        if op != "eq":
            raise Unsupported
        return np.asarray((kinds == _BOOL) & (col.bools == value), dtype=np.bool_)
    if isinstance(value, str):
        strings = _bools(_ARROW_OPS[op](col.strings, pa.scalar(value, pa.string())))
        return np.asarray((kinds == _STR) & strings, dtype=np.bool_)
    if isinstance(value, int | float):
        try:
            literal = float(value)
        except OverflowError:
            raise Unsupported from None
        with np.errstate(invalid="ignore"):
            return np.asarray((kinds == _NUM) & _NUMPY_OPS[op](col.numbers, literal), dtype=np.bool_)
    raise Unsupported
