"""The ingestion run: walk, load, chunk, upsert in batches, remove stale chunks, prune.

Idempotency and crash safety rest on one stored fact per chunk:
``metadata.ingest_fingerprint``, a hash of the file's bytes *and* everything
that decides its chunks (kind, ``source_uri``, chunk size, overlap, encoding,
chunker version; not the display name, so the root it was reached from does
not matter). For one file, with fingerprint F and N chunks:

* the stored rows of the file are *current and complete* iff exactly N distinct
  ids carry F (chunk ids are a function of the file and F, so the rows
  carrying F are always a subset of the right set) and no other row of that
  ``source_uri`` exists. Then the file is unchanged and nothing is written;
* otherwise, if its N chunks fit in one batch, they go into a single upsert
  that also deletes the file's other rows (``replace`` under a
  ``source_uri`` filter): one commit, so old and new chunks never coexist;
* a bigger file's chunks are upserted first (in as many batches as needed),
  and only after the last of them has committed are its other rows deleted.

A crash (even ``kill -9``) can stop this at any point; every state it leaves
is one a rerun repairs: no new rows yet → the old fingerprint does not match,
the file is rewritten; some new rows → fewer than N rows carry F, the file is
rewritten (upserts are idempotent by id, so nothing duplicates); all new rows
but stale ones left → complete, the rerun only deletes the stale rows. Each
LanceDB commit (an upsert, a replace or a delete) is atomic, so there is no
state in between. Writes to a collection are serialized by the store, and a
run assumes it is the only writer of the files it ingests.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse
from urllib.request import url2pathname

from .._aio import run_sync
from ._chunking import (
    DEFAULT_CHUNK_ENCODING,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    Chunk,
    chunk_document,
    document_fingerprint,
    validate_chunking,
)
from ._errors import (
    DocumentLoadError,
    IngestDependencyMissingError,
    IngestUsageError,
    InvalidIngestOptionError,
    UnsupportedDocumentError,
)
from ._loaders import ExtensionMap, detect_kind, parse_document, read_file, resolve_extensions, source_uri_for
from ._model import DocumentKind, LoadedDocument
from ._report import FileIssue, IngestReport

if TYPE_CHECKING:
    from ..batteries.vector import QueryBuilder, VectorMatch, VectorStore

__all__ = ["DEFAULT_BATCH_SIZE", "PathInput", "ingest", "ingest_sync"]

PathInput = str | os.PathLike[str]
"""A file or directory path."""

DEFAULT_BATCH_SIZE = 512
"""Chunks per upsert (the store encodes each upsert in encoder-sized batches)."""

# Test hook (documented in docs/ingesting.md): SIGKILL this process right after the N-th
# store write (upsert, replace or delete) has committed, to prove a rerun completes a killed run.
# Armed only when the second variable holds this very process's id, so a value left in a shell
# or inherited by a child process can never kill anything.
CRASH_AFTER_WRITES_ENV = "_TURNKIT_INGEST_CRASH_AFTER_WRITES"
CRASH_PID_ENV = "_TURNKIT_INGEST_CRASH_PID"

_SCAN_LIMIT = 10_000  # the store's largest search limit
_MAX_BATCH = 100_000  # a sanity bound: one upsert holds its whole batch (and its vectors) in memory
_LOOKUP_FILES = 64  # files whose stored rows are fetched with one query
_DELETE_IDS = 500  # ids per delete statement
_QUEUE_FILES = 128  # loaded files waiting to be written (bounds memory)
_HEX = "0123456789abcdefg"
_LOAD_FAILED = DocumentLoadError.code
_FIELDS = ("id", "metadata.source_uri", "metadata.ingest_fingerprint", "metadata.chunk_count")


@dataclass(frozen=True, slots=True)
class _Candidate:
    path: str
    uri: str
    display_name: str
    kind: DocumentKind


@dataclass(frozen=True, slots=True)
class _Row:
    id: str
    fingerprint: str | None
    count: int | None


@dataclass(slots=True)
class _Outcome:
    candidate: _Candidate
    status: Literal["unchanged", "write", "repair", "empty", "error"]
    chunks: list[Chunk] = field(default_factory=list)
    stale_ids: list[str] = field(default_factory=list)
    issue: FileIssue | None = None


@dataclass(frozen=True, slots=True)
class _Settings:
    chunk_size: int
    chunk_overlap: int
    encoding: str


def _crash_after() -> int:
    """The commit after which the test hook kills this process, or 0 (disarmed)."""
    after, pid = os.environ.get(CRASH_AFTER_WRITES_ENV, ""), os.environ.get(CRASH_PID_ENV, "")
    if not (after.isdigit() and pid.isdigit()) or int(pid) != os.getpid():
        return 0
    return int(after)


def _issue(path: str, exc: Exception) -> FileIssue:
    reason = getattr(exc, "reason", None) or getattr(exc, "message", None) or str(exc)
    hint = getattr(exc, "hint", "")
    if isinstance(exc, IngestDependencyMissingError) and hint:
        reason = f"{reason} ({hint})"
    return FileIssue(path=path, reason=str(reason), code=getattr(exc, "code", "E_INGEST_LOAD_FAILED"))


@dataclass(slots=True)
class _Found:
    candidates: list[_Candidate] = field(default_factory=list)
    skipped: list[FileIssue] = field(default_factory=list)
    errors: list[FileIssue] = field(default_factory=list)
    prune_prefixes: list[str] = field(default_factory=list)
    missing_uris: list[str] = field(default_factory=list)


def _walk(paths: Sequence[PathInput], extensions: dict[str, DocumentKind]) -> _Found:
    """Every file to consider, in a deterministic order, deduplicated by resolved URI."""
    found = _Found()
    seen: set[str] = set()

    def consider(path: Path, display_name: str) -> None:
        uri = source_uri_for(path)
        if uri in seen:
            return
        seen.add(uri)
        try:
            kind = detect_kind(path, extensions)
        except UnsupportedDocumentError as exc:
            found.skipped.append(_issue(str(path), exc))
            return
        # A name that is not valid UTF-8 arrives with lone surrogates, which the store refuses.
        readable = os.fsencode(display_name).decode("utf-8", "replace")
        found.candidates.append(_Candidate(str(path), uri, readable, kind))

    for given in paths:
        path = Path(given).expanduser()
        if path.is_dir():
            root_uri = source_uri_for(path)
            found.prune_prefixes.append(root_uri if root_uri.endswith("/") else root_uri + "/")

            def on_error(exc: OSError) -> None:
                found.errors.append(
                    FileIssue(
                        path=str(exc.filename),
                        reason=f"cannot list directory: {exc.strerror or exc}",
                        code="E_INGEST_READ_FAILED",
                    )
                )

            for dirpath, dirnames, filenames in os.walk(path, onerror=on_error):
                # Hidden entries (.git, .venv, .DS_Store…) are never documents.
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if not name.startswith("."):
                        file = Path(dirpath, name)
                        consider(file, file.relative_to(path).as_posix())
        elif path.exists() or path.is_symlink():
            consider(path, path.name)
        else:
            uri = source_uri_for(path)
            found.missing_uris.append(uri)
            found.errors.append(
                FileIssue(path=str(path), reason="no such file or directory", code="E_INGEST_READ_FAILED")
            )
    return found


def _process(candidate: _Candidate, stored: list[_Row], settings: _Settings) -> _Outcome:
    """Decide what a file needs, reading and (only if needed) parsing and chunking it. Runs in a thread."""
    try:
        raw = read_file(candidate.path)
    except DocumentLoadError as exc:
        return _Outcome(candidate, "error", issue=_issue(candidate.path, exc))
    fingerprint = document_fingerprint(
        file_hash=raw.content_hash,
        kind=candidate.kind,
        source_uri=candidate.uri,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        encoding=settings.encoding,
    )
    current = [r for r in stored if r.fingerprint == fingerprint]
    others = [r.id for r in stored if r.fingerprint != fingerprint]
    if current and all(r.count == current[0].count for r in current):
        if len({r.id for r in current}) == current[0].count:
            return _Outcome(candidate, "repair" if others else "unchanged", stale_ids=others)
    try:
        doc = LoadedDocument(
            source_uri=candidate.uri,
            display_name=candidate.display_name,
            kind=candidate.kind,
            sections=parse_document(raw.data, candidate.kind, path=candidate.path),
            mtime=raw.mtime,
            content_hash=raw.content_hash,
            size=raw.size,
        )
        chunks = chunk_document(
            doc,
            chunk_size=settings.chunk_size,
            chunk_overlap=settings.chunk_overlap,
            encoding=settings.encoding,
        )
    except (DocumentLoadError, IngestDependencyMissingError) as exc:
        return _Outcome(candidate, "error", issue=_issue(candidate.path, exc))
    except Exception as exc:  # one file's surprise (a loader or chunker bug) must not end the run
        issue = FileIssue(
            path=candidate.path, reason=f"cannot be indexed ({type(exc).__name__}: {exc})", code=_LOAD_FAILED
        )
        return _Outcome(candidate, "error", issue=issue)
    new_ids = {c.id for c in chunks}
    stale = [r.id for r in stored if r.id not in new_ids]
    if not chunks:
        issue = FileIssue(
            path=candidate.path,
            reason="no text to index"
            + (" (a scanned PDF needs OCR first)" if candidate.kind == "pdf" else ""),
            code="E_INGEST_NO_TEXT",
        )
        return _Outcome(candidate, "empty", stale_ids=stale, issue=issue)
    return _Outcome(candidate, "write", chunks=chunks, stale_ids=stale)


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


async def _lookup(q: QueryBuilder, uris: list[str], *, whole_collection: bool) -> dict[str, list[_Row]]:
    """The stored rows of each of ``uris``.

    Every metadata filter scans the collection's JSON column, so for more
    files than one query's worth it is cheaper to read the whole collection
    once (by id ranges) than to filter it once per group of files.
    """
    rows: dict[str, list[_Row]] = {uri: [] for uri in uris}
    if not uris:
        return rows
    query = q if whole_collection else q.where_in("metadata.source_uri", uris)
    for match in await _scan(query, _FIELDS):
        meta = match.metadata or {}
        uri = meta.get("source_uri")
        if uri in rows:
            count = meta.get("chunk_count")
            rows[uri].append(
                _Row(match.id, meta.get("ingest_fingerprint"), count if isinstance(count, int) else None)
            )
    return rows


@dataclass(slots=True)
class _Pending:
    """A file with chunks in the writer's buffer."""

    remaining: int  # its chunks not yet committed
    stale_ids: list[str]  # deleted once all its chunks are in (files bigger than a batch)
    replace_uri: str | None  # its other rows go in the same commit as its chunks (files that fit)


class _Writer:
    """Batches chunk records into upserts and removes each changed file's stale rows.

    A file whose chunks fit in one batch is never split across batches, so its
    stale rows go in the same commit as its new chunks (a ``replace`` filtered
    on the ``source_uri`` of such files in the batch). A bigger file's chunks
    span batches; its stale rows are deleted once the last of them has committed.
    """

    def __init__(self, q: QueryBuilder, batch_size: int, bar: Any) -> None:
        self.q = q
        self.batch_size = batch_size
        self.bar = bar
        self.buffer: list[dict[str, Any]] = []
        self.files: deque[_Pending] = deque()
        self.stale: list[str] = []
        self.chunks_written = 0
        self.chunks_deleted = 0
        self.writes = 0
        self.crash_after = _crash_after()
        self.started = time.perf_counter()

    def committed(self) -> None:
        self.writes += 1
        if self.crash_after and self.writes >= self.crash_after:
            os.kill(os.getpid(), signal.SIGKILL)

    async def add(self, outcome: _Outcome) -> None:
        """Queue a file's chunks (or its stale rows) and write every full batch."""
        count = len(outcome.chunks)
        if not count:
            self.stale.extend(outcome.stale_ids)  # nothing to write first: they go with the next delete
            return
        whole = count <= self.batch_size
        if whole and len(self.buffer) + count > self.batch_size:
            await self._commit()  # keep the file in one commit, even if this batch is short
        self.buffer.extend(chunk.to_record() for chunk in outcome.chunks)
        if whole:
            replace_uri = outcome.candidate.uri if outcome.stale_ids else None
            self.files.append(_Pending(count, [], replace_uri))
        else:
            self.files.append(_Pending(count, outcome.stale_ids, None))
        while len(self.buffer) >= self.batch_size:
            await self._commit()

    async def finish(self) -> None:
        """Write what is left, then every pending stale row."""
        while self.buffer:
            await self._commit()
        await self.delete_stale()

    async def _commit(self) -> None:
        batch, self.buffer = self.buffer[: self.batch_size], self.buffer[self.batch_size :]
        if not batch:
            return
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
        if done:
            self.files[0].remaining -= done  # a big file's first batches
        await self.delete_stale()
        if self.bar is not None:
            rate = self.chunks_written / max(time.perf_counter() - self.started, 1e-9)
            self.bar.set_postfix(chunks=self.chunks_written, chunks_s=f"{rate:.0f}", refresh=False)

    async def delete_stale(self) -> None:
        while self.stale:
            ids, self.stale = self.stale[:_DELETE_IDS], self.stale[_DELETE_IDS:]
            self.chunks_deleted += await self.q.where_in("id", ids).delete()
            self.committed()


async def _prune(q: QueryBuilder, found: _Found, writer: _Writer) -> tuple[int, int]:
    """Remove the chunks of files under the ingested folders (or named paths) that no longer exist."""
    prefixes = tuple(found.prune_prefixes) + tuple(uri + "/" for uri in found.missing_uris)
    missing = set(found.missing_uris)
    gone: set[str] = set()
    # Every stored file has a chunk 0 (chunks are written in order and old rows go only after the
    # new ones are in), so one row per file is enough to list the files a collection holds.
    for match in await _scan(q.where("metadata.chunk_index", 0), ("id", "metadata.source_uri")):
        uri = (match.metadata or {}).get("source_uri")
        if not isinstance(uri, str) or not uri.startswith("file://"):
            continue
        if (uri in missing or uri.startswith(prefixes)) and not os.path.lexists(
            url2pathname(urlparse(uri).path)
        ):
            gone.add(uri)
    deleted = 0
    ordered = sorted(gone)
    for start in range(0, len(ordered), 100):
        deleted += await q.where_in("metadata.source_uri", ordered[start : start + 100]).delete()
        writer.committed()
    return len(gone), deleted


def _progress_bar(enabled: bool, total: int) -> Any:
    if not enabled or not sys.stderr.isatty():
        return None
    # tqdm ships no type information; it is used through an untyped handle.
    tqdm: Any = importlib.import_module("tqdm")
    return tqdm.tqdm(total=total, unit="file", desc="ingest", file=sys.stderr, dynamic_ncols=True)


async def ingest(
    paths: PathInput | Iterable[PathInput],
    *,
    store: VectorStore,
    collection: str,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    encoding: str = DEFAULT_CHUNK_ENCODING,
    batch_size: int = DEFAULT_BATCH_SIZE,
    prune: bool = False,
    progress: bool = True,
    extensions: ExtensionMap | None = None,
    workers: int | None = None,
) -> IngestReport:
    """Load, chunk and upsert files into a collection; rerunning it only writes what changed.

    Directories are walked recursively (hidden entries and unknown extensions
    skipped; symlinked directories not followed). A file that cannot be read
    or parsed is recorded in the report with its path and reason, and the run
    goes on. Store failures (disk full, encoder errors) raise.

    Args:
        paths: Files and/or directories (one path or an iterable).
        store: The vector store (it encodes the chunks with its encoder).
        collection: The collection to write to (created on first write).
        chunk_size: Maximum tokens per chunk (default 1024).
        chunk_overlap: Maximum tokens shared by consecutive chunks (default 200).
        encoding: The tiktoken encoding tokens are counted in.
        batch_size: Chunks per upsert, across files (default 512).
        prune: Also remove the chunks of files that no longer exist under the
            given directories (or at the given file paths).
        progress: Show a progress bar and a summary on stderr when it is a terminal.
        extensions: Extra extension → kind mappings, e.g. ``{".rst": "markdown"}``;
            map an extension to ``None`` to skip it.
        workers: Threads reading, parsing and chunking files (default: up to 8).

    Returns:
        An `IngestReport`: counts, skipped files, errors and elapsed time.

    Raises:
        InvalidChunkingError: invalid chunk size, overlap or encoding.
        InvalidIngestOptionError: invalid batch size, workers or extension map,
            or a store without an encoder.
    """
    started = time.perf_counter()
    settings = _Settings(chunk_size, chunk_overlap, encoding)
    validate_chunking(chunk_size, chunk_overlap, encoding)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or not 1 <= batch_size <= _MAX_BATCH:
        raise InvalidIngestOptionError(f"batch_size must be an int in [1, {_MAX_BATCH}]; got {batch_size!r}.")
    if workers is None:
        workers = min(8, os.cpu_count() or 1)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InvalidIngestOptionError(f"workers must be a positive int; got {workers!r}.")
    if getattr(store, "encoder", None) is None:
        raise InvalidIngestOptionError(
            "The store has no encoder, so chunks cannot be embedded.",
            hint="Create the store with one: create_vector_store(uri, encoder=WordLlamaEncoder()).",
        )
    path_list: list[PathInput] = [paths] if isinstance(paths, str | os.PathLike) else list(paths)
    q = store(collection)
    found = await asyncio.to_thread(_walk, path_list, resolve_extensions(extensions))
    exists = await store.has_collection(collection)

    bar = _progress_bar(progress, len(found.candidates))
    writer = _Writer(q, batch_size, bar)
    queue: asyncio.Queue[_Outcome | Exception | None] = asyncio.Queue(maxsize=_QUEUE_FILES)
    limit = asyncio.Semaphore(workers)

    async def process(candidate: _Candidate, stored: list[_Row]) -> _Outcome:
        async with limit:
            return await asyncio.to_thread(_process, candidate, stored, settings)

    async def produce() -> None:
        try:
            cands = found.candidates
            everything = exists and len(cands) > _LOOKUP_FILES
            known = await _lookup(q, [c.uri for c in cands], whole_collection=True) if everything else {}
            for start in range(0, len(cands), _LOOKUP_FILES):
                window = cands[start : start + _LOOKUP_FILES]
                if everything:
                    stored = known
                elif exists:
                    stored = await _lookup(q, [c.uri for c in window], whole_collection=False)
                else:
                    stored = {}
                tasks = [asyncio.ensure_future(process(c, stored.get(c.uri, []))) for c in window]
                try:
                    for task in tasks:
                        await queue.put(await task)
                finally:
                    for task in tasks:
                        task.cancel()
            await queue.put(None)
        except Exception as exc:  # hand it to the consumer, which would otherwise wait forever
            await queue.put(exc)

    counts = {"write": 0, "repair": 0, "unchanged": 0}
    skipped, errors = list(found.skipped), list(found.errors)
    producer = asyncio.ensure_future(produce())
    try:
        while (outcome := await queue.get()) is not None:
            if isinstance(outcome, Exception):
                raise outcome
            if outcome.status in counts:
                counts[outcome.status] += 1
            elif outcome.issue is not None:
                (errors if outcome.status == "error" else skipped).append(outcome.issue)
            await writer.add(outcome)
            if bar is not None:
                bar.update(1)
        await writer.finish()
        pruned_files = pruned_chunks = 0
        if prune and (exists or writer.chunks_written):  # a collection never written to holds nothing
            pruned_files, pruned_chunks = await _prune(q, found, writer)
    finally:
        producer.cancel()
        await asyncio.gather(producer, return_exceptions=True)
        if bar is not None:
            bar.close()
    report = IngestReport(
        collection=collection,
        files_seen=counts["write"] + counts["repair"] + counts["unchanged"] + len(skipped) + len(errors),
        files_written=counts["write"] + counts["repair"],
        files_unchanged=counts["unchanged"],
        files_pruned=pruned_files,
        chunks_written=writer.chunks_written,
        chunks_deleted=writer.chunks_deleted + pruned_chunks,
        skipped=tuple(skipped),
        errors=tuple(errors),
        elapsed_s=time.perf_counter() - started,
        settings={
            "chunk_size": chunk_size,
            "chunk_overlap": chunk_overlap,
            "encoding": encoding,
            "batch_size": batch_size,
            "prune": prune,
        },
    )
    if bar is not None:
        print(report, file=sys.stderr)
    return report


def ingest_sync(
    paths: PathInput | Iterable[PathInput],
    *,
    store: VectorStore,
    collection: str,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    encoding: str = DEFAULT_CHUNK_ENCODING,
    batch_size: int = DEFAULT_BATCH_SIZE,
    prune: bool = False,
    progress: bool = True,
    extensions: ExtensionMap | None = None,
    workers: int | None = None,
) -> IngestReport:
    """Sync form of `ingest` (works inside a running event loop too)."""
    return run_sync(
        ingest(
            paths,
            store=store,
            collection=collection,
            chunk_size=chunk_size,
            chunk_overlap=chunk_overlap,
            encoding=encoding,
            batch_size=batch_size,
            prune=prune,
            progress=progress,
            extensions=extensions,
            workers=workers,
        )
    )
