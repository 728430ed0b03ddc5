"""Says so when a search finds nothing because its filter needs a metadata key no record holds.

Runs only after a filtered search answered nothing, so a search that finds
something pays nothing. The keys a collection holds are its declared fields
plus the key paths of up to `SAMPLE` records, read once per table version;
when the collection has more records than that, a key the sample lacks is
looked up on its own (a filter scan that stops at the first record holding
it) before anything is said. See docs/filters.md, "Keys no record holds".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

import orjson

from turnkit.batteries.vector._errors import FilterKeyNotFoundError
from turnkit.batteries.vector.filters._core import condition, to_sql
from turnkit.batteries.vector.filters._keys import close_keys, key_paths, required_keys
from turnkit.batteries.vector.store._bulk_matches import json_texts
from turnkit.batteries.vector.store._lancedb import translate_errors

if TYPE_CHECKING:
    from turnkit.batteries.vector.query._spec import QuerySpec
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["SAMPLE", "KeySet", "check_filter_keys", "held_keys"]

SAMPLE: Final = 10_000
"""Records read to learn a collection's keys."""
_LISTED: Final = 12


@dataclass
class KeySet:
    """The metadata key paths a collection's records hold, at one table version."""

    handle: object
    """The collection handle it was read through (a dropped and recreated collection has a new one)."""
    version: int
    paths: frozenset[str]
    records: int
    """Records read (all of them when ``complete``)."""
    complete: bool
    """Whether every record was read (then a key not in ``paths`` is held by no record)."""
    looked_up: dict[str, bool] = field(default_factory=dict)


async def held_keys(store: VectorStore, coll: _Collection) -> KeySet:
    """The key paths ``coll`` holds, read at most once per table version."""
    with translate_errors("search", coll.name):
        version = await coll.table.version()
    cached = store._key_sets.get(coll.name)
    if cached is not None and cached.handle is coll and cached.version == version:
        return cached
    with translate_errors("search", coll.name):
        rows = await coll.table.query().select(["metadata"]).limit(SAMPLE).to_arrow()
    paths: set[str] = set()
    for text in json_texts(rows.column("metadata")):
        if text is not None:
            metadata = orjson.loads(text)
            if isinstance(metadata, dict):
                paths.update(key_paths(metadata))
    found = KeySet(coll, version, frozenset(paths), rows.num_rows, complete=rows.num_rows < SAMPLE)
    store._key_sets[coll.name] = found
    return found


async def _held(keys: KeySet, coll: _Collection, key: str) -> bool:
    if key in keys.paths:
        return True
    if keys.complete:
        return False
    if key not in keys.looked_up:
        where = to_sql(condition("metadata." + key, "exists"), coll.fields)
        with translate_errors("search", coll.name):
            rows = await coll.table.query().where(where).select(["id"]).limit(1).to_arrow()
        keys.looked_up[key] = rows.num_rows > 0
    return keys.looked_up[key]


async def check_filter_keys(store: VectorStore, spec: QuerySpec) -> None:
    """Raise when ``spec`` found nothing because its filter needs a key no record holds.

    Call it only for a search that answered nothing. Declared fields count as
    held, and so does every key of an empty collection's filter (nothing is
    held, and nothing is wrong with the filter).

    Raises:
        FilterKeyNotFoundError: The first such key, with "did you mean" when a
            held key is close to it.
    """
    required = required_keys(spec.filter)
    if not required:
        return
    coll = await store._collection(spec.collection)
    unknown = sorted(k for k in required if k.split(".", 1)[0] not in coll.fields)
    if not unknown:
        return
    keys = await held_keys(store, coll)
    if not keys.records:
        return  # an empty collection: nothing is wrong with the filter
    for key in unknown:
        if not await _held(keys, coll, key):
            raise _missing(coll, key, keys)


def _missing(coll: _Collection, key: str, keys: KeySet) -> FilterKeyNotFoundError:
    known = keys.paths | set(coll.fields)
    suggestions = close_keys(key, known)
    if suggestions:
        hint = "Did you mean " + " or ".join(repr(s) for s in suggestions) + "?"
    else:
        top = sorted(k for k in known if "." not in k)
        listed = ", ".join(top[:_LISTED]) + (", …" if len(top) > _LISTED else "")
        hint = f"Keys its records hold: {listed}."
    return FilterKeyNotFoundError(
        f"No record in collection {coll.name!r} has the metadata key {key!r}, "
        "so the filter can match nothing.",
        hint=hint + " A key is written with or without 'metadata.' (kind, metadata.kind).",
        collection=coll.name,
        field="metadata." + key,
        key=key,
        suggestions=suggestions,
    )
