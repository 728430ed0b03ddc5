"""Automatic fields: metadata keys the store keeps as typed, indexed columns without being told.

At optimize, holding the collection's write locks (across processes on a
local disk, as `declare_fields` does), the store reads every row's metadata
and collects the types each top-level key holds. A key whose values all have
one type (``int``; ``float`` for floats, or floats and integers; ``str``;
``bool``; a list of strings) becomes a declared field marked automatic:
filled from the JSON and indexed exactly as `declare_fields` does it, so a
filter on it reads the column with the same results. A key holding two types
stays in the JSON. ``create_vector_store(auto_fields=False)`` turns it off;
it runs only where every writer takes that lock (a local disk, memory).

A later write (upsert, update_metadata, fragments) whose value does not fit
an automatic field is never refused: in the same locks, before its own
commit, it drops that column (a metadata-only commit), so the key is read
from the JSON again. A deployer's declared fields keep refusing such values.

A handle strips its automatic fields from the set its filters compile to
before it moves to a newer version (`before_move`), and reads them again
from that version's schema: a filter never names a column that the version
it reads has dropped.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from turnkit.batteries.vector.filters._declared import FieldType, fits
from turnkit.batteries.vector.store._bulk_matches import json_texts
from turnkit.batteries.vector.store._fields import (
    ensure_field_indexes,
    field_marks,
    fill_declared,
    is_field_name,
    kind_of,
    value_kind,
)
from turnkit.batteries.vector.store._integrity import remove_duplicates
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._locks import collection_lock

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = [
    "MAX_AUTO_FIELDS",
    "add_fields",
    "before_move",
    "conflicts",
    "declare_auto",
    "deployer_fields",
    "found_kinds",
    "retire_conflicts",
    "to_latest",
]

MAX_AUTO_FIELDS: Final = 32
"""Automatic fields a collection holds at most (keys held by the most rows first): columns are not free."""
_BATCH: Final = 50_000


def deployer_fields(coll: _Collection) -> dict[str, FieldType]:
    """The fields a deployer declared (writes refuse other types for these)."""
    return {key: kind for key, kind in coll.fields.items() if key not in coll.auto}


def before_move(coll: _Collection) -> None:
    """Compile filters on automatic fields to the JSON until the schema is read again.

    Call it before moving ``coll``'s table to a newer version: that version
    may have dropped an automatic field's column, and a search compiled
    meanwhile would name it.
    """
    if coll.auto:
        coll.fields = deployer_fields(coll)


async def to_latest(coll: _Collection, operation: str) -> None:
    """Move ``coll``'s table to its latest version (`before_move` first)."""
    before_move(coll)
    with translate_errors(operation, coll.name):
        await coll.table.checkout_latest()


def conflicts(coll: _Collection, metadata: Sequence[Mapping[str, Any] | None]) -> list[str]:
    """The automatic fields some record of a batch holds another type in, sorted."""
    autos = {key: kind for key, kind in coll.fields.items() if key in coll.auto}
    found: set[str] = set()
    for meta in metadata:
        if not meta or not autos:
            continue
        for key, kind in autos.items():
            value = meta.get(key)
            if value is not None and not fits(kind, value):
                found.add(key)
        for key in found:
            autos.pop(key, None)
    return sorted(found)


async def retire_conflicts(
    store: VectorStore, coll: _Collection, metadata: Sequence[Mapping[str, Any] | None], operation: str
) -> dict[str, FieldType]:
    """Drop the automatic fields a batch does not fit; the fields as of the version the write lands on.

    The caller holds the collection's write locks and has read the fields on
    the latest version.
    """
    stale = conflicts(coll, metadata)
    if stale:
        coll.fields = {k: v for k, v in coll.fields.items() if k not in stale}  # before the commit lands
        with translate_errors(operation, coll.name):
            await coll.table.drop_columns(stale)
        coll.wrote()
        return await store._refresh_fields(coll)
    return coll.fields


async def found_kinds(table: Any, name: str) -> tuple[dict[str, FieldType], Counter[str]]:
    """Each top-level key's one type across every row (keys of conflicting types left out), and its rows."""
    tags: dict[str, set[str]] = {}
    held: Counter[str] = Counter()
    mixed: set[str] = set()
    with translate_errors("optimize", name):
        reader = await table.query().select(["metadata"]).to_batches(max_batch_length=_BATCH)
        async for batch in reader:
            for text in json_texts(batch.column("metadata")):
                meta = None if text is None else orjson.loads(text)
                if not isinstance(meta, dict):
                    continue
                for key, value in meta.items():
                    tag = value_kind(value)
                    if tag is None or key in mixed:
                        continue
                    seen = tags.setdefault(key, set())
                    if tag not in seen:
                        seen.add(tag)
                        if kind_of(seen) is None:
                            mixed.add(key)
                    held[key] += 1
    kinds: dict[str, FieldType] = {}
    for key, seen in tags.items():
        kind = kind_of(seen)
        if kind is not None and key not in mixed and is_field_name(key):
            kinds[key] = kind
    return kinds, held


async def add_fields(
    table: Any,
    name: str,
    current: Mapping[str, FieldType],
    fields: Mapping[str, FieldType],
    *,
    auto: bool,
    promote: frozenset[str] = frozenset(),
) -> int:
    """Declare ``fields`` not in ``current`` (the caller holds the write locks); rows filled.

    ``promote``: automatic fields the deployer now declares (same type), which
    become the deployer's.
    """
    with translate_errors("declare fields", name):
        present = {f.name for f in await table.schema()}
    # An unmarked column is what a declaration cut short left (filters never read it):
    # it goes, and the declaration fills the key afresh.
    stale = [k for k in fields if k not in current and k in present]
    if stale:
        with translate_errors("declare fields", name):
            await table.drop_columns(sorted(stale))
    new = {key: kind for key, kind in fields.items() if key not in current}
    if new:
        # integrity: the fill sets list columns by record key, so every copy of a key held twice
        # (older versions, object storage) would take one copy's values; the older copies go.
        await remove_duplicates(table, name)
    rows = await fill_declared(table, name, new, auto=auto) if new else 0
    mine = {key: kind for key, kind in fields.items() if key in promote and key in current}
    if mine:
        with translate_errors("declare fields", name):
            await table.update_field_metadata(*field_marks(mine, auto=False))
    await ensure_field_indexes(table, name, fields)
    return rows


async def declare_auto(store: VectorStore, coll: _Collection) -> dict[str, FieldType]:
    """Declare, as automatic fields, the keys whose stored values all have one type; the new ones.

    The caller holds ``coll.lock``; this takes the collection's lock across
    processes, so no write lands between the read of every row and the mark.
    """
    async with collection_lock(store.uri, coll.name):
        await to_latest(coll, "optimize")
        current = await store._refresh_fields(coll)
        kinds, held = await found_kinds(coll.table, coll.name)
        room = MAX_AUTO_FIELDS - len(coll.auto)
        candidates = [key for key in kinds if key not in current]
        chosen = sorted(candidates, key=lambda k: (-held[k], k))[: max(room, 0)]
        new = {key: kinds[key] for key in chosen}
        if new:
            await add_fields(coll.table, coll.name, current, new, auto=True)
            coll.wrote()
            await store._refresh_fields(coll)
        return new
