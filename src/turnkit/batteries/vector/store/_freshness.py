"""Seeing other processes' writes: a bounded look at the table's latest version, turnkit's own.

A LanceDB handle pins a version. With ``read_consistency_interval`` set, the
store looks for newer commits at most once per interval per collection, on
the first read after it elapses: it opens the table afresh (one manifest
read) and compares it with the cached handle.

- The same table, a newer version: the process-wide tracker is bumped, so
  every handle in the process moves to the latest version before its next
  read, and in-memory copies (keyed by the tracker) are read again.
- Another table under the name (dropped and recreated elsewhere, or the whole
  database folder rebuilt): the tracker's generation is bumped, so the handle
  is reopened, with the new table's dimension, fields and indexes.
- No table: the same, and the reopen answers "collection not found".

Between looks, reads use the cached handle and the in-memory copy with no
I/O, so the check costs nothing per query but the look itself. LanceDB's
own ``read_consistency_interval`` is not used: it moves the handle under
the store at any read, so every search had to ask LanceDB for the version
before memory could answer, and a handle never moves back to a recreated
table with a lower version number.
"""

from __future__ import annotations

import json
import math
import time
from typing import TYPE_CHECKING, Any

from turnkit.batteries.vector._errors import CollectionNotFoundError
from turnkit.batteries.vector.store._incarnation import manifest_stamp
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._locks import local_root

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["born", "check_due", "look", "look_now", "mark_opened"]


def born(schema: Any) -> str | None:
    """When turnkit created the table (its metadata's ``created_at``): which table a handle belongs to."""
    raw = (schema.metadata or {}).get(b"turnkit")
    if not raw:
        return None
    value = json.loads(raw).get("created_at")
    return value if isinstance(value, str) else None


def check_due(store: VectorStore, coll: _Collection) -> bool:
    """Whether the next read of ``coll`` must first look for other processes' commits."""
    interval = store.read_consistency_interval
    return interval is not None and time.monotonic() - coll.checked_at >= interval.total_seconds()


async def mark_opened(store: VectorStore, coll: _Collection, table: Any, opened_at: float) -> None:
    """Record what a freshly opened handle saw, as the first look."""
    if store.read_consistency_interval is None:
        return
    with translate_errors("open", coll.name):
        version = await table.version()
    coll.known_version = version
    coll.stamp = manifest_stamp(local_root(store.uri), coll.name, version)
    coll.checked_at = opened_at


async def look(store: VectorStore, coll: _Collection, *, force: bool = False) -> bool:
    """Look for other processes' commits to ``coll`` if one is due; whether the handle changed.

    Changed: it moves to newer commits on its next read, or it is dead (the
    table was dropped or replaced) and the next read reopens the collection.
    ``force`` looks whatever ``read_consistency_interval`` says: a read that
    must see every commit so far (a conversation's history) asks for it.
    """
    async with coll.checking:
        if not force and not check_due(store, coll):  # another read looked while this one waited
            return False
        started = time.monotonic()
        conn = await store._connection()
        try:
            with translate_errors("open", coll.name):
                probe = await conn.open_table(coll.name)
                version = await probe.version()
                schema = await probe.schema()
        except CollectionNotFoundError:
            coll.tracker.generation += 1  # dropped elsewhere
            return True
        stamp = manifest_stamp(local_root(store.uri), coll.name, version)
        if (
            born(schema) != coll.born
            or version < coll.known_version
            or (version == coll.known_version and stamp != coll.stamp)
        ):
            # Another table under this name: its version numbers start again from 1.
            coll.tracker.generation += 1
            return True
        changed = False
        if version != coll.known_version:
            with translate_errors("open", coll.name):
                mine = await coll.table.version()
            if mine != version:  # not this handle's own commit
                coll.tracker.version += 1
                changed = True
            coll.known_version, coll.stamp = version, stamp
        coll.checked_at = started
        return changed


async def look_now(store: VectorStore, coll: _Collection) -> bool:
    """`look` at once (a read of ``coll`` failed): whether the table changed under the handle."""
    if store.read_consistency_interval is None:
        return False
    coll.checked_at = -math.inf
    return await look(store, coll)
