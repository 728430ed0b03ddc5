"""The ingest run's store side: finding a file's stored rows, batched writes, stale-row removal, pruning.

Every write here keeps the invariants stated in :mod:`turnkit.ingest._pipeline`.
"""

from __future__ import annotations

import os
import signal
import time
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlparse
from urllib.request import url2pathname

from ._errors import IngestUsageError
from ._report import RATE_MIN_CHUNKS, RATE_MIN_SECONDS
from ._walk import Found

if TYPE_CHECKING:
    from ..batteries.vector import QueryBuilder, VectorMatch, VectorStore
    from ._pipeline import Outcome

__all__ = ["INGEST_FIELDS", "LOOKUP_FILES", "Row", "Writer", "declare_ingest_fields", "lookup", "prune"]

_SCAN_LIMIT = 10_000  # the store's largest search limit
LOOKUP_FILES = 1024  # files whose stored rows one lookup query asks for (see `lookup`)
_DELETE_IDS = 500  # ids per delete statement
_HEX = "0123456789abcdefg"
# The whole metadata: selecting its keys reads and parses it all the same, then copies every match
# to keep only them (a third of a lookup's CPU).
_FIELDS = ("id", "metadata")


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    fingerprint: str | None
    count: int | None


INGEST_FIELDS: Final = {
    "source_uri": "str",
    "kind": "str",
    "file_hash": "str",
    "ingest_fingerprint": "str",
    "chunk_index": "int",
}
"""The metadata keys ingest filters on, declared as typed, indexed columns of its collections."""


async def declare_ingest_fields(store: VectorStore, collection: str, exists: bool) -> None:
    """Give the collection ingest's declared fields: at its creation, or once by migrating it."""
    if exists:
        declared = (await store.collection_info(collection)).fields
        missing = {key: kind for key, kind in INGEST_FIELDS.items() if key not in declared}
        if missing:
            await store.declare_fields(collection, missing)
    elif store.encoder is not None:  # without one the first upsert explains what is missing
        await store.create_collection(collection, fields=INGEST_FIELDS, exist_ok=True)


# Test hook (documented in docs/ingesting.md): SIGKILL this process right after the N-th
# store write (upsert, replace or delete) has committed, to prove a rerun completes a killed run.
# Armed only when the second variable holds this very process's id, so a value left in a shell
# or inherited by a child process can never kill anything.
def _crash_after() -> int:
    """The commit after which the test hook kills this process, or 0 (disarmed)."""
    after = os.environ.get("_TURNKIT_INGEST_CRASH_AFTER_WRITES", "")
    pid = os.environ.get("_TURNKIT_INGEST_CRASH_PID", "")
    return int(after) if after.isdigit() and pid.isdigit() and int(pid) == os.getpid() else 0


def _next_prefix(prefix: str) -> str:
    """The end of the id range of a hex prefix: ``"09"`` → ``"0a"``, ``"0f"`` → ``"0g"``."""
    i = _HEX.find(prefix[-1])
    return prefix[:-1] + (_HEX[i + 1] if 0 <= i < len(_HEX) - 1 else chr(ord(prefix[-1]) + 1))


async def _scan(
    q: QueryBuilder, fields: Sequence[str], lo: str | None = None, hi: str | None = None, depth: int = 0
) -> list[VectorMatch]:
    """Every row matching ``q`` (ids in ``[lo, hi)``), past the store's per-search limit.

    A range with too many rows for one search is split into id ranges by hex
    prefix, which suits ingest ids (sha256 hex).
    """
    ranged = q
    if lo is not None:
        ranged = ranged.where("id", ">=", lo)
    if hi is not None:
        ranged = ranged.where("id", "<", hi)
    rows = await ranged.select(*fields).limit(_SCAN_LIMIT)
    if len(rows) < _SCAN_LIMIT:
        return rows
    prefix = lo or ""
    if depth >= 8 or (lo is not None and hi != _next_prefix(lo)):
        raise IngestUsageError(
            f"Cannot page through the records of collection {q.collection!r} (too many share an id prefix).",
            hint="Keep records that were not written by turnkit.ingest out of an ingest collection.",
        )
    bounds: list[str | None] = [lo, *(prefix + c for c in _HEX), hi]
    out: list[VectorMatch] = []
    for a, b in zip(bounds, bounds[1:], strict=False):
        out.extend(await _scan(q, fields, a, b, depth + 1))
    return out


async def lookup(q: QueryBuilder, uris: list[str]) -> dict[str, list[Row]]:
    """The stored rows of each of ``uris``, asked for ``LOOKUP_FILES`` files per query.

    ``source_uri`` is an indexed declared field, so a query reads only the rows
    it names, plus the rows not yet indexed, which every query scans: fewer,
    larger queries scan them fewer times.
    """
    rows: dict[str, list[Row]] = {uri: [] for uri in uris}
    for start in range(0, len(uris), LOOKUP_FILES):
        query = q.where_in("metadata.source_uri", uris[start : start + LOOKUP_FILES])
        for match in await _scan(query, _FIELDS):
            meta = match.metadata or {}
            uri = meta.get("source_uri")
            if uri in rows:
                count = meta.get("chunk_count")
                rows[uri].append(
                    Row(match.id, meta.get("ingest_fingerprint"), count if isinstance(count, int) else None)
                )
    return rows


@dataclass(slots=True)
class _Pending:
    """A file with chunks in the writer's buffer."""

    remaining: int  # its chunks not yet committed
    stale_ids: list[str]  # deleted once all its chunks are in (files bigger than a batch)
    replace_uri: str | None  # its other rows go in the same commit as its chunks (files that fit)


class Writer:
    """Batches chunk records into upserts and removes each changed file's stale rows.

    A file whose chunks fit in one batch is never split across batches, so its
    stale rows go in the same commit as its new chunks (a ``replace`` filtered
    on the ``source_uri`` of such files in the batch). A bigger file's chunks
    span batches; its stale rows are deleted once the last of them has committed.
    """

    def __init__(
        self, q: QueryBuilder, batch_size: int, bar: Any, progress: Callable[[], None] | None = None
    ) -> None:
        self.q, self.batch_size, self.bar, self.progress = q, batch_size, bar, progress
        self.buffer: list[dict[str, Any]] = []
        self.files: deque[_Pending] = deque()
        self.stale: list[str] = []
        self.stale_files: list[tuple[str, str]] = []  # (source_uri, the fingerprint to keep)
        self.chunks_written = 0
        self.chunks_deleted = 0
        self.files_written = 0  # files whose new chunks have all committed
        self.writes = 0
        self.crash_after = _crash_after()
        self.started = time.perf_counter()
        self.created = False  # a new collection is made (with its fields) at the first write, not before

    def committed(self) -> None:
        self.writes += 1
        if self.crash_after and self.writes >= self.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)

    async def add(self, outcome: Outcome) -> None:
        """Queue a file's chunks (or its stale rows) and write every full batch."""
        count = len(outcome.chunks)
        if not count:
            if outcome.keep_fingerprint is None:
                self.stale.extend(outcome.stale_ids)  # nothing to write first: they go with the next delete
            elif outcome.stale_ids:
                self.stale_files.append((outcome.candidate.uri, outcome.keep_fingerprint))
            return
        whole = count <= self.batch_size
        if whole and len(self.buffer) + count > self.batch_size:
            await self._commit()  # keep the file in one commit, even if this batch is short
        self.buffer.extend(chunk.to_record() for chunk in outcome.chunks)
        replace_uri = outcome.candidate.uri if whole and outcome.stale_ids else None
        self.files.append(_Pending(count, [] if whole else outcome.stale_ids, replace_uri))
        while len(self.buffer) >= self.batch_size:
            await self._commit()

    async def finish(self) -> None:
        """Write what is left, then every pending stale row."""
        while self.buffer:
            await self._commit()
        await self.delete_stale()

    async def _commit(self) -> None:
        batch, self.buffer = self.buffer[: self.batch_size], self.buffer[self.batch_size :]
        made = False
        store, name = self.q.store, self.q.spec.collection
        if not self.created:
            self.created = True
            if not await store.has_collection(name):
                await declare_ingest_fields(store, name, exists=False)
                made = True
        try:
            await self._write(batch)
        except BaseException:
            if made:  # a first run that cannot write (a missing encoder extra…) leaves no empty collection
                with suppress(Exception):  # the write's own error is the one to report
                    if await store.has_collection(name) and await self.q.count() == 0:
                        await store.drop_collection(name, missing_ok=True)
            raise
        if self.progress is not None:
            self.progress()
        await self.delete_stale()
        if self.bar is not None:
            elapsed = time.perf_counter() - self.started
            shown: dict[str, object] = {"chunks": self.chunks_written}
            if self.chunks_written >= RATE_MIN_CHUNKS and elapsed >= RATE_MIN_SECONDS:
                shown["chunks_s"] = f"{self.chunks_written / elapsed:.0f}"
            self.bar.set_postfix(shown, refresh=False)

    async def _write(self, batch: list[dict[str, Any]]) -> None:
        # The files this batch completes; a file that fits a batch is always wholly inside one.
        done, complete = len(batch), 0
        uris: list[str] = []
        for pending in self.files:
            if pending.remaining > done:
                break
            done -= pending.remaining
            complete += 1
            if pending.replace_uri is not None:
                uris.append(pending.replace_uri)
        if uris:
            result = await self.q.where_in("metadata.source_uri", uris).replace(batch)
            self.chunks_deleted += result.deleted
        else:
            await self.q.upsert(batch)
        self.committed()
        self.chunks_written += len(batch)
        for _ in range(complete):
            self.stale.extend(self.files.popleft().stale_ids)  # every chunk of this file is in now
        self.files_written += complete
        if done:
            self.files[0].remaining -= done  # a big file's first batches

    async def delete_stale(self) -> None:
        while self.stale_files:
            uri, keep = self.stale_files.pop()
            old = self.q.where("metadata.source_uri", uri).where("metadata.ingest_fingerprint", "!=", keep)
            self.chunks_deleted += await old.delete()
            self.committed()
        while self.stale:
            ids, self.stale = self.stale[:_DELETE_IDS], self.stale[_DELETE_IDS:]
            self.chunks_deleted += await self.q.where_in("id", ids).delete()
            self.committed()


async def prune(q: QueryBuilder, found: Found, writer: Writer) -> tuple[int, int]:
    """Remove the chunks of files under the ingested folders (or named paths) that no longer exist.

    Files the run's patterns or ``.gitignore`` left out go too: the collection
    then holds what this run reads.
    """
    prefixes = tuple(found.prune_prefixes) + tuple(uri + "/" for uri in found.missing_uris)
    missing = set(found.missing_uris)
    left_out_prefixes = tuple(found.left_out_prefixes)
    read = {c.uri for c in found.candidates}
    gone: set[str] = set()
    # Every stored file has a chunk 0 (chunks are written in order and old rows go only after the
    # new ones are in), so one row per file is enough to list the files a collection holds.
    for match in await _scan(q.where("metadata.chunk_index", 0), ("id", "metadata.source_uri")):
        uri = (match.metadata or {}).get("source_uri")
        if not isinstance(uri, str) or not uri.startswith("file://") or uri in read:
            continue
        if uri in found.left_out or uri.startswith(left_out_prefixes):
            gone.add(uri)
        elif (uri in missing or uri.startswith(prefixes)) and not os.path.lexists(
            url2pathname(urlparse(uri).path)
        ):
            gone.add(uri)
    deleted = 0
    ordered = sorted(gone)
    for start in range(0, len(ordered), 100):
        deleted += await q.where_in("metadata.source_uri", ordered[start : start + 100]).delete()
        writer.committed()
    return len(gone), deleted
