"""Keeping one row per id: read-side dedupe, duplicate repair, safe create and open.

Writers on object storage (and writers that bypass turnkit) can leave two rows
with one id: LanceDB's ``merge_insert`` inserts a new key like an append, so
concurrent inserts of it never conflict. Reads hide such copies (the newest
``updated_at`` wins) and `remove_duplicates` deletes the older ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Coroutine, Hashable, Sequence
from typing import Any, TypeVar

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from turnkit.batteries.vector._errors import VectorStoreRuntimeError
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.filters._core import MAX_IN_VALUES, condition, to_sql
from turnkit.batteries.vector.filters._sql import _sql_string
from turnkit.batteries.vector.store._common import newest, record_key
from turnkit.batteries.vector.store._fields import declared_arrays, declared_fields
from turnkit.batteries.vector.store._guarded import KEY, add_key_column, unscoped_keys
from turnkit.batteries.vector.store._lancedb import translate_errors

__all__ = [
    "claim_maintenance",
    "create_or_open",
    "dedupe_matches",
    "heal_after_write",
    "remove_duplicates",
    "reopen_or_corrupt",
    "retry_conflicts",
    "superseded",
    "undo_late_create",
]

log = logging.getLogger("turnkit.vector")

T = TypeVar("T")

# Conditions per delete commit: a predicate LanceDB plans quickly.
_DELETE_CHUNK = 512
_CONFLICT = re.compile(r"conflict|retryable|concurrent|Commit", re.IGNORECASE)
# A commit refused because an overwrite or a restore landed after the version it read.
_SUPERSEDED = re.compile(r"incompatible with concurrent transaction (Overwrite|Restore)", re.IGNORECASE)


def dedupe_matches(matches: Sequence[VectorMatch]) -> list[VectorMatch]:
    """One match per id, in the order given, keeping the copy with the newest ``updated_at``.

    A copy without ``updated_at`` (not selected) loses to one with it; among
    equals the first (the closest, for a search) wins.
    """
    ids = [m.id for m in matches]
    if len(set(ids)) == len(ids):
        return list(matches)
    return [matches[i] for i in newest(ids, [m.updated_at for m in matches])]


def _older_copies(rows: pa.Table, key: str) -> tuple[list[str], list[int]]:
    """What to delete (SQL predicates, row ids) so each repeated key keeps its newest copy.

    Copies older than their key's newest ``updated_at`` go by value (the key
    and ``updated_at``), which stays right whatever else commits meanwhile;
    exact ties fall back to row ids (the highest is kept), which a concurrent
    compaction could move, so they are the rare exception.
    """
    counts = rows.group_by(key).aggregate([(key, "count")])
    repeated = counts.filter(pc.greater(counts[f"{key}_count"], 1))[key]
    if len(repeated) == 0:
        return [], []
    dup = rows.filter(pc.is_in(rows[key], value_set=repeated))
    dup = dup.sort_by([(key, "ascending"), ("updated_at", "descending"), ("_rowid", "descending")])
    older: list[str] = []
    ties: list[int] = []
    newest: Any = None
    previous = None
    for rid, stamp, rowid in zip(
        dup[key].to_pylist(), dup["updated_at"].to_pylist(), dup["_rowid"].to_pylist(), strict=True
    ):
        if rid != previous:
            previous, newest = rid, stamp
            if newest is not None:
                stale = to_sql(condition("updated_at", "lt", newest))
                older.append(f"({key} = {_sql_string(rid)} AND {stale})")
            continue
        if stamp == newest or newest is None:
            ties.append(int(rowid))
    return older, ties


async def remove_duplicates(table: Any, name: str, ids: Sequence[str] | None = None) -> int:
    """Delete the older copies of every record held more than once; returns how many rows went.

    A record is an id, or on a collection that guarded writes reached, a key
    (one id in two guards' scopes is two records). With ``ids``, only those
    ids are checked (the heal after a write on object storage); without,
    every row's key and ``updated_at`` are read (maintenance, not the query
    path).
    """
    with translate_errors("repair", name):
        key = record_key((await table.schema()).names)
    columns = list(dict.fromkeys(["id", key, "updated_at"]))
    if ids is None:
        with translate_errors("repair", name):
            rows = await table.query().with_row_id().select(columns).to_arrow()
    else:
        parts = []
        for start in range(0, len(ids), MAX_IN_VALUES):
            where = to_sql(condition("id", "in", list(ids[start : start + MAX_IN_VALUES])))
            with translate_errors("repair", name):
                parts.append(await table.query().where(where).with_row_id().select(columns).to_arrow())
        rows = pa.concat_tables(parts)
    if key != "id":  # a row from before the column (another writer's older version) is keyed by its id
        keys = pc.coalesce(rows[key], unscoped_keys(rows["id"]))
        rows = rows.set_column(rows.schema.get_field_index(key), key, keys)
    older, ties = _older_copies(rows, key)
    removed = 0
    for start in range(0, len(older), _DELETE_CHUNK):
        with translate_errors("repair", name):
            result = await table.delete(" OR ".join(older[start : start + _DELETE_CHUNK]))
        removed += int(getattr(result, "num_deleted_rows", 0) or 0)
    for start in range(0, len(ties), _DELETE_CHUNK):
        chunk = ties[start : start + _DELETE_CHUNK]
        with translate_errors("repair", name):
            result = await table.delete(f"_rowid IN ({', '.join(str(r) for r in chunk)})")
        removed += int(getattr(result, "num_deleted_rows", 0) or 0)
    if removed:
        log.info("turnkit: removed %d duplicate rows from collection %r", removed, name)
    return removed


async def reopen_or_corrupt(conn: Any, name: str, cause: BaseException) -> Any:
    """Open a table that is listed but did not open, or raise ``E_VECTOR_STORE_COLLECTION_CORRUPT``.

    A table another writer is creating is listed a moment before it can be
    opened, so a few tries over about two seconds come first.
    """
    for attempt in range(8):
        await asyncio.sleep(0.02 * 2 ** min(attempt, 5))
        try:
            with translate_errors("open", name):
                return await conn.open_table(name)
        except Exception as exc:
            cause = exc
    cause = getattr(cause, "__cause__", None) or cause
    raise VectorStoreRuntimeError(
        f"Collection {name!r} exists but LanceDB cannot open it"
        + (f": {str(cause).splitlines()[0][:300]}" if str(cause) else "."),
        code="E_VECTOR_STORE_COLLECTION_CORRUPT",
        collection=name,
    ) from cause


async def create_or_open(conn: Any, name: str, schema: pa.Schema, *, unlocked: bool = False) -> Any:
    """Open table ``name``, or create it; when another writer creates it first, open theirs.

    Call it holding the collection's write locks. ``mode="create"`` never
    replaces an existing table (``exist_ok=True`` compares schemas, and each
    creator's metadata differs). ``unlocked`` (object storage, where no lock
    is held) checks that the create did not land on a table another writer
    created meanwhile, and puts that table back if it did (`undo_late_create`).
    """
    with contextlib.suppress(Exception), translate_errors("open", name):
        return await conn.open_table(name)
    try:
        with translate_errors("create_collection", name):
            table = await conn.create_table(name, schema=schema, mode="create")
    except Exception as first:
        try:
            with translate_errors("open", name):
                return await conn.open_table(name)
        except Exception:
            raise first from None
    if unlocked:
        await undo_late_create(table, name)
    return table


async def undo_late_create(table: Any, name: str) -> bool:
    """Put back the table a create was committed over; returns whether the create came late.

    Lance checks that a table is missing when a create starts and again just
    before it commits; a table that appears between the two checks (another
    writer's create, maybe its first writes too) gets the create committed on
    top of it as an overwrite: an empty table at a version after 1. Such a
    create restores the version before its own, which is the other writer's
    table. Rows written on top of the empty table in the meantime (by a
    writer that opened it) are then written again, so nothing is lost.
    """
    with translate_errors("create_collection", name):
        version = await table.version()
        if version <= 1:
            return False
        log.info(
            "turnkit: collection %r was created by another writer while this one created it; "
            "keeping theirs (restoring version %d)",
            name,
            version - 1,
        )
        await table.restore(version - 1)
        restored = await table.version()
    if restored > version + 1:  # commits landed on the empty table before the restore
        await _write_again(table, name, restored - 1)
    return True


async def _write_again(table: Any, name: str, version: int) -> None:
    """Merge the rows of ``version`` into the latest version (by key; theirs are the newer)."""
    with translate_errors("create_collection", name):
        await table.checkout(version)
        rows = await table.query().to_arrow()
        await table.checkout_latest()
        target = await table.schema()
    if not rows.num_rows:
        return
    if KEY in rows.column_names and KEY not in target.names:
        # Guarded writes reached the empty table: its rows keep their scopes (one id, two tenants).
        await add_key_column(table, name)
        with translate_errors("create_collection", name):
            target = await table.schema()
    key = record_key(target.names)
    raw = rows["metadata"].to_pylist()
    text = [None if v is None else v.decode() if isinstance(v, bytes) else str(v) for v in raw]
    metas = [None if t is None else orjson.loads(t) for t in text]
    try:  # a field the other writer declared: filled from the metadata, as a write does
        filled = declared_arrays(rows["id"].to_pylist(), metas, declared_fields(target))
    except Exception:
        filled = {}
    columns: list[tuple[pa.Field, Any]] = []
    for fld in target:
        if fld.name == "metadata":  # read back as bytes; written as JSON, as every write does
            columns.append((pa.field("metadata", pa.json_()), pa.array(text, pa.string()).cast(pa.json_())))
        elif fld.name in rows.column_names:
            columns.append((fld, rows[fld.name].cast(fld.type)))
        elif fld.name == KEY:
            columns.append((fld, unscoped_keys(rows["id"])))
        else:
            columns.append((fld, filled.get(fld.name, pa.nulls(rows.num_rows, fld.type)).cast(fld.type)))
    data = pa.table([c for _, c in columns], schema=pa.schema([f for f, _ in columns]))
    # One row per key (a merge refuses a key twice): the newest.
    data = data.take(newest(data[key].to_pylist(), data["updated_at"].to_pylist()))

    async def merge() -> object:
        with translate_errors("create_collection", name):
            merge = table.merge_insert(key).when_matched_update_all().when_not_matched_insert_all()
            return await merge.execute(data)

    await retry_conflicts(merge, table.checkout_latest, what="restore")
    log.info("turnkit: wrote %d rows of collection %r again after restoring it", data.num_rows, name)


def superseded(exc: BaseException) -> bool:
    """Whether a write failed because an overwrite or restore committed after the version it read."""
    return bool(_SUPERSEDED.search(str(exc.__cause__ or exc)))


async def retry_conflicts(
    action: Callable[[], Awaitable[T]],
    refresh: Callable[[], Awaitable[object]],
    *,
    attempts: int = 4,
    what: str = "optimize",
) -> T:
    """Run ``action``; on a commit conflict, ``refresh`` the handle and try again (with backoff)."""
    for attempt in range(attempts):
        try:
            return await action()
        except Exception as exc:
            cause = exc.__cause__ or exc
            if attempt == attempts - 1 or not _CONFLICT.search(str(cause)):
                raise
            log.debug("turnkit: %s hit a commit conflict; retrying (%s)", what, cause)
            await asyncio.sleep(0.05 * 2**attempt)
            await refresh()
    raise AssertionError("unreachable")  # pragma: no cover


_MAINTENANCE: dict[Hashable, asyncio.Task[None]] = {}


def claim_maintenance(key: Hashable, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
    """Start ``work`` unless maintenance of ``key`` is already running in this process.

    Several stores on one database each see their own writes; without one
    owner per collection their compactions conflict and leave garbage.
    Returns the task that owns the collection's maintenance.
    """
    running = _MAINTENANCE.get(key)
    if running is not None and not running.done():
        work.close()
        return running
    task = asyncio.get_running_loop().create_task(work)
    _MAINTENANCE[key] = task

    def _release(done: asyncio.Task[None]) -> None:
        if _MAINTENANCE.get(key) is done:
            del _MAINTENANCE[key]

    task.add_done_callback(_release)
    return task


async def heal_after_write(table: Any, name: str, ids: Sequence[str]) -> None:
    """Remove copies of ``ids`` a racing writer inserted; never fails the write that already committed.

    Of two writers inserting one new id, the later commit sees both rows and
    deletes the older. If this cleanup fails, reads still show one row per
    id and `repair` finishes the job.
    """
    try:
        await retry_conflicts(lambda: remove_duplicates(table, name, ids), table.checkout_latest, what="heal")
    except Exception:
        log.warning("turnkit: could not remove duplicate ids from %r after a write; run repair()", name)
