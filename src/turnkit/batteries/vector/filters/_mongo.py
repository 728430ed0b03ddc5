"""Mongo-style filter dicts (``{"year": {"$gte": 2020}}``) parsed into filter nodes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from turnkit.batteries.vector._errors import InvalidFilterError, UnknownFieldError
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._build import (
    _FIELD_OPS,
    _LOGICAL_OPS,
    _MONGO_OPS_TEXT,
    _describe,
    and_,
    condition,
    located,
    not_,
    or_,
)
from turnkit.batteries.vector.filters._fields import (
    _METADATA_PREFIX,
    _bad_segment,
    _path,
    _too_deep,
    validate_field,
    with_prefix,
)


class _MongoParser:
    def __init__(self, field_prefix: str, max_depth: int, max_nodes: int) -> None:
        self.field_prefix = field_prefix
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self.nodes = 0

    def count(self, where: str) -> None:
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise InvalidFilterError(
                f"Filter has more than {self.max_nodes} conditions and groups (at {_short(where)}).",
                hint="Simplify the filter, e.g. use $in instead of many $or branches.",
                location=where,
            )

    def error(self, where: str, detail: str, hint: str | None = None) -> InvalidFilterError:
        return InvalidFilterError(f"Invalid filter at {_short(where)}: {detail}", hint=hint, location=where)

    def unsupported(self, key: str, where: str) -> InvalidFilterError:
        return InvalidFilterError(
            f"Unsupported filter operator {key[:40]!r} at {where}; supported: {_MONGO_OPS_TEXT}.",
            code="E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR",
            op=key[:40],
            location=where,
            hint=f"Use one of {_MONGO_OPS_TEXT}.",
        )

    def document(self, obj: Any, where: str, depth: int) -> FilterNode:
        """A filter object: implicit AND of its keys."""
        if depth > self.max_depth:
            raise self.error(where, f"nested deeper than {self.max_depth} levels.", "Flatten the filter.")
        if not isinstance(obj, Mapping):
            raise self.error(where, f"expected an object of conditions, got {_describe(obj)}.")
        parts: list[FilterNode] = []
        for key, value in obj.items():
            if not isinstance(key, str):
                raise self.error(where, f"keys must be strings, got {_describe(key)}.")
            parse = self.logical if key.startswith("$") else self.field
            parts.append(parse(key, value, f"{where}.{key}", depth))
        if len(parts) != 1:
            self.count(where)
        return and_(*parts)

    def logical(self, key: str, value: Any, where: str, depth: int) -> FilterNode:
        if key == "$not":
            if not isinstance(value, Mapping) or not value:
                raise self.error(where, "$not needs a non-empty object of conditions.")
            self.count(where)
            return not_(self.document(value, where, depth + 1))
        if key in ("$and", "$or", "$nor"):
            if not isinstance(value, list | tuple):
                raise self.error(where, f"{key} needs a list of objects, not {_describe(value)}.")
            self.count(where)
            children = [self.document(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
            if key == "$and":
                return and_(*children)
            return not_(or_(*children)) if key == "$nor" else or_(*children)
        if key in _FIELD_OPS:
            raise self.error(
                where,
                f"{key} must be applied to a field.",
                f"Write {{'<field>': {{'{key}': ...}}}}; only $and $or $nor $not go at the top level.",
            )
        raise self.unsupported(key, where)

    def field_name(self, key: str, where: str) -> str:
        if self.field_prefix:
            if "$" in key:
                raise UnknownFieldError(
                    f"Invalid filter field {key[:60]!r} at {where}.",
                    hint="Field names cannot contain '$'; operators go inside the field's value.",
                    field=key[:60],
                )
            name = with_prefix(key, self.field_prefix)
            if name.startswith(_METADATA_PREFIX) and (bad := _bad_segment(_path(name))) is not None:
                raise UnknownFieldError(
                    f"Invalid metadata key {key[:60]!r} at {where}: {bad}.",
                    hint="Keys are ASCII letters, digits, '_' and '-', joined with '.' for nested keys.",
                    field=key[:60],
                )
            return validate_field(name)
        return validate_field(key)

    def field(self, key: str, value: Any, where: str, depth: int) -> FilterNode:
        field = self.field_name(key, where)
        if isinstance(value, Mapping):
            return self.field_ops(field, value, where, depth + 1)
        self.count(where)
        return _at(where, partial(condition, field, "in" if isinstance(value, list | tuple) else "eq", value))

    def field_ops(self, field: str, ops: Mapping[Any, Any], where: str, depth: int) -> FilterNode:
        if depth > self.max_depth:
            raise self.error(where, f"nested deeper than {self.max_depth} levels.", "Flatten the filter.")
        if not ops:
            raise self.error(
                where, "empty operator object.", "Write {'field': {'$eq': value}} or {'field': value}."
            )
        keys = [k for k in ops if isinstance(k, str) and k.startswith("$")]
        if len(keys) != len(ops):
            raise self.error(
                where,
                "a field's object value must contain only $operators.",
                "Address nested metadata with a dotted key ({'a.b': 1}); objects cannot be compared.",
            )
        parts: list[FilterNode] = []
        for key in keys:
            value = ops[key]
            here = f"{where}.{key}"
            if key == "$not":
                if not isinstance(value, Mapping) or not value:
                    raise self.error(
                        here, "$not needs a non-empty object of operators, e.g. {'$not': {'$gt': 5}}."
                    )
                self.count(here)
                parts.append(not_(self.field_ops(field, value, here, depth + 1)))
                continue
            op = _FIELD_OPS.get(key)
            if op is None:
                if key in _LOGICAL_OPS:
                    raise self.error(
                        here,
                        f"{key} cannot be used inside a field.",
                        "Put $and/$or/$nor at the top level: {'$or': [{'a': 1}, {'b': 2}]}.",
                    )
                raise self.unsupported(key, here)
            self.count(here)
            if op == "exists" and not isinstance(value, bool):
                raise self.error(here, f"$exists needs true or false, not {_describe(value)}.")
            if op in ("in", "nin") and not isinstance(value, list | tuple):
                raise self.error(here, f"{key} needs a list, not {_describe(value)}.")
            parts.append(_at(here, partial(condition, field, op, value)))
        if len(parts) > 1:
            self.count(where)
        return and_(*parts)


def _short(where: str) -> str:
    """A location for messages: deep paths keep their last 120 characters."""
    return where if len(where) <= 120 else "…" + where[-119:]


def _at(where: str, build: Callable[[], FilterNode]) -> FilterNode:
    """Run ``build`` and prefix any filter error with the location in the dict."""
    return located(build, f"At {_short(where)}", location=where)


def parse_mongo(
    obj: Mapping[str, Any], *, field_prefix: str = "", max_depth: int = 8, max_nodes: int = 200
) -> FilterNode:
    """Compile a Mongo/Mastra-style filter dict into a filter tree.

    The keys of one object are ANDed. A field's value is a literal (``$eq``),
    a list (``$in``) or an object of operators: ``$eq $ne $gt $gte $lt $lte
    $in $nin $like $contains $exists`` and ``$not`` (an object of operators).
    At the top level (and inside the lists of ``$and``/``$or``/``$nor``),
    ``$and``, ``$or``, ``$nor`` take lists of filter objects and ``$not``
    takes a filter object.

    Example:
        ``{"kind": "faq", "year": {"$gte": 2020}, "$or": [{"lang": "en"}, {"lang": {"$exists": False}}]}``
        with ``field_prefix="metadata."``.

    Args:
        obj: The filter object.
        field_prefix: Prepended to every field key that does not already
            start with it. Agent tools pass ``"metadata."`` so a model can
            reach metadata keys only (``"id"`` then means ``metadata.id``;
            ``"kind"`` and ``"metadata.kind"`` both mean ``metadata.kind``).
            Without a prefix, a key that is not a column is a metadata key
            too (``"kind"`` is ``metadata.kind``).
        max_depth: Deepest nesting of objects and logical operators allowed.
        max_nodes: Most conditions and groups allowed.

    Returns:
        The filter tree; ``{}`` is the always-true filter ``And(())``.

    Raises:
        InvalidFilterError: Malformed filter, bad value type, or a limit exceeded.
        InvalidFilterError: ``E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR``: An unknown ``$operator``.
        UnknownFieldError: A field that is not a column or a valid metadata path.
    """
    if field_prefix and not field_prefix.endswith("."):
        raise InvalidFilterError(
            f"field_prefix must end with '.', got {field_prefix!r}.", hint="Use '' or 'metadata.'."
        )
    if not isinstance(obj, Mapping):
        raise InvalidFilterError(
            f"A filter must be an object (dict), not {type(obj).__name__}.",
            hint='Example: {"kind": "faq", "year": {"$gte": 2020}}.',
        )
    parser = _MongoParser(field_prefix, max_depth, max_nodes)
    try:
        return parser.document(obj, "$", 1)
    except RecursionError:
        raise _too_deep() from None
