"""Filters in agent tools: the model's filter (untrusted) and the host's guard (trusted).

A model's filter is a Mongo-style dict over metadata keys only: it is parsed
with the ``metadata.`` prefix, so no name it writes can reach a column, and
the result is a filter tree compiled by the store's escaping compiler, never
SQL text. The guard is ANDed around it, so no filter the model writes can
select a row the guard excludes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from ..batteries.vector import (
    And,
    Condition,
    FilterKeyNotFoundError,
    FilterNode,
    InvalidFilterError,
    Not,
    Or,
    Raw,
    UnknownFieldError,
    VectorStore,
    close_keys,
    parse_mongo,
    required_keys,
    validate_field,
)
from ._errors import config_error, input_error

__all__ = [
    "FIELDS_SAMPLE",
    "check_filter_fields",
    "check_keys_held",
    "compile_guard",
    "compile_model_filter",
    "describe_metadata_fields",
    "metadata_keys",
    "normalize_filter_fields",
]

_PREFIX: Final = "metadata."


def _fields(node: FilterNode) -> Iterator[str]:
    if isinstance(node, Condition):
        yield node.field
    elif isinstance(node, And | Or):
        for child in node.children:
            yield from _fields(child)
    elif isinstance(node, Not):
        yield from _fields(node.child)


def metadata_keys(node: FilterNode) -> list[str]:
    """The metadata keys ``node`` names (without the ``metadata.`` prefix)."""
    return [f.removeprefix(_PREFIX) for f in _fields(node) if f.startswith(_PREFIX)]


def _within(key: str, path: str) -> bool:
    return key == path or key.startswith(path + ".")


def _related(key: str, path: str) -> bool:
    return _within(key, path) or _within(path, key)


def compile_model_filter(
    value: Any,
    *,
    allowed_fields: Mapping[str, str] | None,
    max_depth: int,
    max_nodes: int,
) -> FilterNode | None:
    """Validate and compile the filter a model sent; ``None`` or ``{}`` means no filter.

    Raises:
        ToolUsageError: ``E_TOOL_INVALID_INPUT``: Not an object (a JSON *string* included).
        InvalidFilterError: Malformed, too deep or too large.
        InvalidFilterError: ``E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR``: An unknown ``$operator``.
        UnknownFieldError: A key that is not a valid metadata key, or not declared.
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        quoted = isinstance(value, str)  # a model that sent the object as JSON text
        raise input_error(
            f"`filter` must be a JSON object, not {'a string' if quoted else type(value).__name__}.",
            hint='Send the object itself, e.g. "filter": {"year": {"$gte": 2020}}, not a quoted string.'
            if quoted
            else 'Example: {"kind": "faq", "year": {"$gte": 2020}}.',
            field="filter",
        )
    if not value:
        return None
    node = parse_mongo(value, field_prefix=_PREFIX, max_depth=max_depth, max_nodes=max_nodes)
    if allowed_fields is not None:
        check_filter_fields(node, allowed_fields)
    return node


def check_filter_fields(node: FilterNode, allowed_fields: Mapping[str, str]) -> None:
    """Refuse a model filter that names a metadata key outside ``allowed_fields``.

    Raises:
        UnknownFieldError: The first such key; the hint lists the allowed keys.
    """
    for key in metadata_keys(node):  # a model's filter names metadata keys only
        # Declaring "page_span" also allows "page_span.first_page".
        if not any(_within(key, allowed) for allowed in allowed_fields):
            close = close_keys(key, allowed_fields)
            guess = f"Did you mean {' or '.join(map(repr, close))}? " if close else ""
            raise UnknownFieldError(
                f"The filter uses the metadata key {key!r}, which this tool does not offer.",
                hint=f"{guess}Filter on these keys only: {', '.join(sorted(allowed_fields)) or '(none)'}.",
                field=key,
                suggestions=close,
            )


def check_keys_held(node: FilterNode, held: Mapping[str, str], guard: FilterNode) -> None:
    """After an empty answer inside a guard: refuse a key that no record inside the guard holds.

    The store's own check looks at every record, so its answer could tell a
    model about records outside the guard; this one is worked out from
    ``held`` (`describe_metadata_fields` inside the guard) only, so a key held
    by other tenants' records gets the same answer as a key no record holds.
    The guard's own keys count as held and are never named.

    Raises:
        FilterKeyNotFoundError: The first key ``node`` needs that no record inside the guard holds.
    """
    for key in sorted(required_keys(node)):
        if any(_related(key, path) for path in [*held, *metadata_keys(guard)]):
            continue
        close = close_keys(key, held)
        listed = ", ".join(sorted(held)[:12]) + (", …" if len(held) > 12 else "")
        hint = (
            f"Did you mean {' or '.join(map(repr, close))}?" if close else f"Keys its records hold: {listed}."
        )
        raise FilterKeyNotFoundError(
            f"No record this search can reach has the metadata key {key!r}, so the filter can match nothing.",
            hint=hint + " A key is written with or without 'metadata.' (kind, metadata.kind).",
            field=_PREFIX + key,
            key=key,
            suggestions=close,
        )


def _is_empty(node: FilterNode) -> bool:
    return isinstance(node, And) and all(_is_empty(child) for child in node.children)


def compile_guard(value: Any, *, option: str) -> FilterNode | None:
    """Compile a host's guard filter (a filter node, or a Mongo dict over metadata keys).

    Raises:
        ToolUsageError: ``E_INVALID_TOOL_CONFIG``: The guard is not a filter or does not compile.
    """
    if value is None:
        return None
    if isinstance(value, Condition | And | Or | Not | Raw):
        node: FilterNode = value
    elif not isinstance(value, Mapping):
        raise config_error(
            f"{option} must be a dict or a filter node, not {type(value).__name__}.",
            option=option,
        )
    else:
        try:
            node = parse_mongo(value, field_prefix=_PREFIX)
        except (InvalidFilterError, UnknownFieldError) as exc:
            # An unknown operator's own message does not list the known ones; its hint does.
            detail = str(exc) if exc.code == "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR" else exc.message
            raise config_error(f"{option} is invalid: {detail}", option=option) from exc
        except Exception as exc:  # anything else the parser raises
            raise config_error(f"{option} is invalid: {exc}", option=option) from exc
    # An empty guard (dict or node) would silently allow everything: almost always a host bug.
    if _is_empty(node):
        raise config_error(
            f"{option} is empty; it would allow every record.",
            hint="Leave the guard out for no guard, or pass a condition such as {'tenant': 'acme'}.",
            option=option,
        )
    return node


def normalize_filter_fields(value: Sequence[str] | Mapping[str, str] | None) -> dict[str, str] | None:
    """Turn declared filter fields into ``{key: description}`` after checking each key."""
    if value is None:
        return None
    if isinstance(value, str):
        raise config_error(
            "filter_fields must be a list of keys or a dict of key -> description, not a string.",
            option="filter_fields",
        )
    items: dict[str, str] = {}
    for key, description in value.items() if isinstance(value, Mapping) else ((k, "") for k in value):
        if not isinstance(key, str) or not isinstance(description, str):
            raise config_error(
                "filter_fields keys and descriptions must be strings.",
                option="filter_fields",
            )
        key = key.removeprefix(_PREFIX)
        try:
            validate_field(_PREFIX + key)
        except UnknownFieldError as exc:
            raise config_error(
                f"filter_fields: {exc.message}",
                option="filter_fields",
                hint=exc.hint,
            ) from exc
        items[key] = description
    return items


# bool before int: a bool is an int too.
_KINDS: Final = (
    (bool, "boolean"),
    (int | float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)


_DECLARED_KINDS: Final = {
    "str": "string",
    "int": "number",
    "float": "number",
    "bool": "boolean",
    "list[str]": "array",
}
FIELDS_SAMPLE: Final = 10_000
"""Records read to list a collection's keys: every surface's listing and check use this sample."""


async def describe_metadata_fields(
    store: VectorStore,
    collection: str,
    *,
    guard: FilterNode | None = None,
    sample: int = FIELDS_SAMPLE,
    max_examples: int = 5,
) -> dict[str, str]:
    """Read metadata keys, their types and a few example values from a collection.

    The collection's declared fields are always listed; the other keys are
    those of up to ``sample`` records. Nested objects are described by their
    dotted paths (``page_span.first_page``). The result fits ``filter_fields``.
    With a ``guard``, only records inside it are read and the keys the guard
    uses are left out, so the description reveals nothing about the guard or
    about records outside it. Every surface lists keys with this function (the
    tools, MCP, the framework adapters), so they all list the same keys.

    Args:
        store: The store to read.
        collection: The collection to read.
        guard: A host guard filter (see `create_vector_query_tool`).
        sample: Records to look at.
        max_examples: Distinct string values listed per key (none when a key has more).

    Returns:
        ``{key: "string; values seen: 'faq', 'howto'"}``, sorted by key.
    """
    query = store(collection).select("metadata").limit(sample)
    if guard is not None:
        query = query.where(guard)
    try:
        matches = await query.search()
    except FilterKeyNotFoundError:
        matches = []  # no record holds a key the guard needs: nothing inside it to describe
    hidden = metadata_keys(guard) if guard else []
    kinds: dict[str, set[str]] = {}
    values: dict[str, set[str]] = {}

    def walk(obj: Mapping[str, Any], prefix: str, depth: int) -> None:
        for key, value in obj.items():
            path = prefix + str(key)
            if isinstance(value, dict) and value and depth < 3:
                walk(value, path + ".", depth + 1)
                continue
            kinds.setdefault(path, set()).add(next((k for t, k in _KINDS if isinstance(value, t)), "null"))
            if isinstance(value, str) and len(value) <= 60:
                values.setdefault(path, set()).add(value)

    for match in matches:
        walk(match.metadata or {}, "", 1)
    declared = (await store.collection_info(collection)).fields
    for key, kind in declared.items():
        kinds.setdefault(key, {_DECLARED_KINDS.get(kind, "null")})
    out: dict[str, str] = {}
    for path in sorted(kinds):
        if any(_related(path, h) for h in hidden):
            continue
        try:
            validate_field(_PREFIX + path)
        except UnknownFieldError:
            continue  # keys a filter cannot name are not offered
        text = " or ".join(sorted(kinds[path] - {"null"}) or ["null"])
        seen = values.get(path, set())
        if seen and len(seen) <= max_examples:
            text += "; values seen: " + ", ".join(repr(v) for v in sorted(seen))
        out[path] = text
    return out
