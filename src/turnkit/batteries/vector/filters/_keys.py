"""Which metadata keys a filter cannot do without, and which known key a missed one was meant to be.

A filter that needs a key no record holds can only match nothing; the store
uses `required_keys` to say so instead of answering an empty result (see
docs/filters.md, "Keys no record holds"), and every surface uses
`close_keys` for its "did you mean".
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Or
from turnkit.batteries.vector.filters._fields import _METADATA_PREFIX

__all__ = ["close_keys", "key_paths", "required_keys"]

_MAX_KEY_DEPTH: Final = 16


def _required(node: Condition) -> bool:
    """Whether the condition is false for every record that lacks its key."""
    match node.op:
        case "eq" | "gt" | "gte" | "lt" | "lte" | "like" | "contains":
            return True
        case "in":
            return None not in node.value
        case "exists":
            return node.value is True
        case "null":
            return node.value is False
        case "ne":
            return node.value is None  # "present and not null"
        case _:
            return False  # nin, ne <value>, exists False, null True: a missing key matches


def required_keys(node: FilterNode | None) -> frozenset[str]:
    """The metadata paths (``kind``, ``page_span.first_page``) every match of ``node`` must hold.

    Sound, not complete: a key listed here is needed by every record the
    filter matches; ``NOT`` and raw SQL are not looked into.
    """
    if isinstance(node, Condition) and node.field.startswith(_METADATA_PREFIX) and _required(node):
        return frozenset({node.field[len(_METADATA_PREFIX) :]})
    if isinstance(node, And):
        return frozenset().union(*map(required_keys, node.children))
    if isinstance(node, Or) and node.children:
        return frozenset.intersection(*map(required_keys, node.children))
    return frozenset()  # None, another condition, an empty Or, Not, Raw


def key_paths(metadata: Mapping[str, Any], prefix: str = "", depth: int = 1) -> Iterator[str]:
    """Every key path a record's metadata holds: ``page_span`` and ``page_span.first_page``."""
    for key, value in metadata.items():
        path = prefix + str(key)
        yield path
        if isinstance(value, Mapping) and depth < _MAX_KEY_DEPTH:
            yield from key_paths(value, path + ".", depth + 1)


def close_keys(key: str, known: Iterable[str], n: int = 3) -> list[str]:
    """Known keys close to ``key``, best first: ``knd`` -> ``kind``.

    ``metadata.kind`` written where the prefix is already implied (a key
    ``metadata.metadata.kind``) suggests ``kind``; so does ``Kind``.
    """
    pool = set(known)
    lowered = {k.lower(): k for k in sorted(pool)}
    found = [key.removeprefix(_METADATA_PREFIX), lowered.get(key.lower())]
    found += difflib.get_close_matches(key, pool, n=n, cutoff=0.6)
    return [k for k in dict.fromkeys(found) if k is not None and k in pool and k != key][:n]
