"""The ingestion run: walk, load, chunk, upsert in batches, remove stale chunks, prune.

Idempotency and crash safety rest on one stored fact per chunk, its
``metadata.ingest_fingerprint``; docs/ingesting.md ("Idempotency and crash
safety") states the rule and why every state a crash leaves is one a rerun repairs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from itertools import pairwise
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from turnkit._checks import is_int

from .._aio import sync_form, to_thread
from ._chunking import (
    DEFAULT_CHUNK_ENCODING,
    DEFAULT_CHUNK_OVERLAP,
    DEFAULT_CHUNK_SIZE,
    Chunk,
    chunks_of,
    document_fingerprint,
    validate_chunking,
)
from ._decode import check_fallback_encodings, needs_fallback
from ._errors import DocumentLoadError, FileSkippedError, IngestUsageError
from ._html import HtmlExtractor, check_html_extractor
from ._ignore import FileFilter, check_patterns
from ._loaders import DEFAULT_MAX_FILE_SIZE, ExtensionMap, parse_file, read_file, resolve_extensions
from ._report import FileIssue, IngestProgress, IngestReport, SkipTally
from ._store_io import LOOKUP_FILES, Row, Writer, declare_ingest_fields, lookup
from ._store_io import prune as prune_missing
from ._walk import Candidate, Found, PathInput, issue_of, walk

if TYPE_CHECKING:
    from ..batteries.vector import VectorStore
    from ._ray_engine import RayEngine

__all__ = ["DEFAULT_BATCH_SIZE", "PathInput", "ingest", "ingest_sync"]

_option_error = partial(IngestUsageError, code="E_INGEST_INVALID_OPTION")

DEFAULT_BATCH_SIZE = 512
"""Chunks per upsert (the store encodes each upsert in encoder-sized batches)."""

_MAX_BATCH = 100_000  # a sanity bound: one upsert holds its whole batch (and its vectors) in memory
_WINDOW_FILES = 64  # files read and chunked concurrently, then queued in order
_QUEUE_FILES = 128  # loaded files waiting to be written (bounds memory)
T = TypeVar("T")


@dataclass(slots=True)
class Outcome:
    candidate: Candidate
    status: Literal["unchanged", "write", "repair", "empty", "skipped", "error"]
    chunks: list[Chunk] = field(default_factory=list)
    stale_ids: list[str] = field(default_factory=list)
    issue: FileIssue | None = None
    # A file whose current chunks are all stored: its other rows go by fingerprint, not id, since
    # an interrupted distributed write can leave an old row under the same id as a current one.
    keep_fingerprint: str | None = None


@dataclass(frozen=True, slots=True)
class _Settings:
    chunk_size: int
    chunk_overlap: int
    encoding: str
    max_file_size: int | None = DEFAULT_MAX_FILE_SIZE
    fallback_encodings: tuple[str, ...] = ()
    html_extractor: HtmlExtractor = "turnkit"


def checked_settings(
    store: VectorStore,
    chunk_size: int,
    chunk_overlap: int,
    encoding: str,
    max_file_size: int | None,
    fallback_encodings: Sequence[str],
    html_extractor: Any,
) -> _Settings:
    """The per-file settings of a run, every option checked (both engines call it before reading anything).

    Raises:
        IngestUsageError: ``E_INGEST_INVALID_CHUNKING``: invalid chunk size, overlap or encoding.
        IngestUsageError: ``E_INGEST_INVALID_OPTION``: another option is invalid, or the store has no encoder.
    """
    if max_file_size is not None and not is_int(max_file_size, 1):
        raise _option_error(f"max_file_size must be a positive int or None; got {max_file_size!r}.")
    validate_chunking(chunk_size, chunk_overlap, encoding)
    if getattr(store, "encoder", None) is None:
        raise _option_error(
            "The store has no encoder, so chunks cannot be embedded.",
            hint="Create the store with one: create_vector_store(uri, encoder=WordLlamaEncoder()).",
        )
    fallbacks = check_fallback_encodings(fallback_encodings)
    return _Settings(
        chunk_size, chunk_overlap, encoding, max_file_size, fallbacks, check_html_extractor(html_extractor)
    )


def make_report(
    collection: str,
    found: Found,
    chunks: tuple[int, int],
    pruned: tuple[int, int],
    started: float,
    settings: _Settings,
    files: FileFilter,
    **options: Any,
) -> IngestReport:
    """The report of a run: ``chunks`` is (written, deleted), ``pruned`` (files, chunks).

    ``options`` are the run's own settings, recorded beside the per-file ones.
    """
    counts, skips, groups = found.counts, found.skips, found.skips.groups()
    record = dataclasses.asdict(settings) | {"fallback_encodings": list(settings.fallback_encodings)}
    record |= {"include": list(files.include), "exclude": list(files.exclude), "gitignore": files.gitignore}
    return IngestReport(
        collection=collection,
        files_seen=sum(counts.values()) + skips.total + len(found.errors),
        files_written=counts["write"] + counts["repair"],
        files_unchanged=counts["unchanged"],
        files_pruned=pruned[0],
        files_ignored=found.ignored,
        files_skipped=skips.total,
        chunks_written=chunks[0],
        chunks_deleted=chunks[1] + pruned[1],
        skip_groups=groups,
        skipped=tuple(issue for group in groups for issue in group.examples),
        errors=tuple(found.errors),
        elapsed_s=time.perf_counter() - started,
        settings=record | options,
    )


def _process(candidate: Candidate, stored: list[Row], settings: _Settings) -> Outcome:
    """Decide what a file needs, reading and (only if needed) parsing and chunking it. Runs in a thread."""
    try:
        raw = read_file(candidate.path, max_size=settings.max_file_size)
    except FileSkippedError as exc:
        return Outcome(candidate, "skipped", issue=issue_of(candidate.path, exc))
    except DocumentLoadError as exc:
        return Outcome(candidate, "error", issue=issue_of(candidate.path, exc))
    # The fallbacks belong to the fingerprint of a file that needs one, and to no other: a UTF-8
    # file's chunks do not change when --fallback-encoding is added or removed.
    fallbacks = settings.fallback_encodings
    if fallbacks and (candidate.kind == "pdf" or not needs_fallback(raw.data, html=candidate.kind == "html")):
        fallbacks = ()
    fingerprint = document_fingerprint(
        file_hash=raw.content_hash,
        kind=candidate.kind,
        source_uri=candidate.uri,
        chunk_size=settings.chunk_size,
        chunk_overlap=settings.chunk_overlap,
        encoding=settings.encoding,
        fallback_encodings=fallbacks,
        html_extractor=settings.html_extractor,
    )
    current = [r for r in stored if r.fingerprint == fingerprint]
    others = [r.id for r in stored if r.fingerprint != fingerprint]
    if current and all(r.count == current[0].count for r in current):
        if len({r.id for r in current}) == current[0].count:
            status: Literal["repair", "unchanged"] = "repair" if others else "unchanged"
            return Outcome(candidate, status, stale_ids=others, keep_fingerprint=fingerprint)
    try:
        doc = parse_file(
            raw,
            candidate.kind,
            path=candidate.path,
            source_uri=candidate.uri,
            display_name=candidate.display_name,
            fallback_encodings=settings.fallback_encodings,
            html_extractor=settings.html_extractor,
        )
        chunks = chunks_of(doc, settings.chunk_size, settings.chunk_overlap, settings.encoding, fingerprint)
    except Exception as exc:  # one file's surprise (a loader or chunker bug) must not end the run
        if isinstance(exc, DocumentLoadError) or getattr(exc, "code", None) == "E_INGEST_DEPENDENCY_MISSING":
            issue = issue_of(candidate.path, exc)
        else:
            reason = f"cannot be indexed ({type(exc).__name__}: {exc})"
            issue = FileIssue(path=candidate.path, reason=reason, code=DocumentLoadError.code)
        return Outcome(candidate, "error", issue=issue)
    new_ids = {c.id for c in chunks}
    stale = [r.id for r in stored if r.id not in new_ids]
    if not chunks:
        reason = "no text to index" + (" (a scanned PDF needs OCR first)" if candidate.kind == "pdf" else "")
        issue = FileIssue(path=candidate.path, reason=reason, code="E_INGEST_NO_TEXT")
        return Outcome(candidate, "empty", stale_ids=stale, issue=issue)
    return Outcome(candidate, "write", chunks=chunks, stale_ids=stale)


def _slices(items: list[T], parts: int) -> list[list[T]]:
    """``items`` in order, cut into ``min(parts, len(items))`` runs whose lengths differ by at most one."""
    count = min(parts, len(items))
    size, extra = divmod(len(items), count or 1)
    bounds = [part * size + min(part, extra) for part in range(count + 1)]
    return [items[a:b] for a, b in pairwise(bounds)]


def _process_group(
    group: list[tuple[Candidate, list[Row]]], settings: _Settings, stop: threading.Event
) -> list[Outcome]:
    """`_process` for each file of a worker's slice, in order; a run that has ended stops it early."""
    outcomes: list[Outcome] = []
    for candidate, stored in group:
        if stop.is_set():
            break
        outcomes.append(_process(candidate, stored, settings))
    return outcomes


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
    max_file_size: int | None = DEFAULT_MAX_FILE_SIZE,
    follow_external_symlinks: bool = False,
    fallback_encodings: Sequence[str] = (),
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    gitignore: bool = True,
    html_extractor: HtmlExtractor = "turnkit",
    engine: Literal["local"] | RayEngine = "local",
    on_skip: Callable[[FileIssue], None] | None = None,
    on_progress: Callable[[IngestProgress], None] | None = None,
) -> IngestReport:
    """Load, chunk and upsert files into a collection; rerunning it only writes what changed.

    Directories are walked recursively (hidden entries, unknown extensions and
    symlinked directories skipped). A file that cannot be read or parsed is
    recorded in the report and the run goes on; store failures raise. The
    options are described in docs/ingesting.md ("Options").

    Args:
        paths: Files and/or directories (one path or an iterable).
        store: The vector store (it encodes the chunks with its encoder).
        collection: The collection to write to (created on first write).
        chunk_size: Maximum tokens per chunk.
        chunk_overlap: Maximum tokens shared by consecutive chunks.
        encoding: The tiktoken encoding tokens are counted in.
        batch_size: Chunks per upsert, across files.
        prune: Also remove the chunks of files that no longer exist under the given paths.
        progress: Show a progress bar and a summary on stderr when it is a terminal.
        extensions: Extra extension → kind mappings (``{".rst": "markdown"}``; ``None`` skips one).
        workers: Threads reading, parsing and chunking files (default: up to 8).
        max_file_size: Larger files are skipped (``None``: no limit).
        follow_external_symlinks: Also read symlinks whose targets lie outside the given paths.
        fallback_encodings: Codecs (or ``"auto"``) tried in order on text that is not UTF-8.
        include: Wildmatch patterns a walked file must match (git's syntax, e.g. ``"docs/**"``).
        exclude: Patterns of walked files and folders to leave out; they win over ``include``.
        gitignore: Honour the ``.gitignore`` files inside the walked folders.
        html_extractor: ``"turnkit"`` (visible text) or ``"trafilatura"`` (main content).
        engine: ``"local"`` or a `turnkit.ingest.ray.RayEngine`.
        on_skip: Called with every skipped file as it is found, from one thread at a time.
        on_progress: Called with an `IngestProgress` after each file and each commit (local engine).

    Returns:
        An `IngestReport`: counts, skipped files, errors and elapsed time.

    Raises:
        IngestUsageError: ``E_INGEST_INVALID_CHUNKING``: invalid chunk size, overlap or encoding.
        IngestUsageError: ``E_INGEST_INVALID_OPTION``: invalid batch size, workers or extension map,
            or a store without an encoder.
    """
    started = time.perf_counter()
    settings = checked_settings(
        store, chunk_size, chunk_overlap, encoding, max_file_size, fallback_encodings, html_extractor
    )
    if not is_int(batch_size, 1, _MAX_BATCH):
        raise _option_error(f"batch_size must be an int in [1, {_MAX_BATCH}]; got {batch_size!r}.")
    if workers is None:
        workers = min(8, os.cpu_count() or 1)
    if not is_int(workers, 1):
        raise _option_error(f"workers must be a positive int; got {workers!r}.")
    q = store(collection)
    files = FileFilter(check_patterns(include, "include"), check_patterns(exclude, "exclude"), gitignore)
    found = await to_thread(
        walk,
        [paths] if isinstance(paths, str | os.PathLike) else list(paths),
        resolve_extensions(extensions),
        follow_external_symlinks=follow_external_symlinks,
        files=files,
        skips=SkipTally(on_skip),
    )
    if not isinstance(engine, str) and callable(getattr(engine, "run", None)):
        # A RayEngine: its module, and the ray extra, load only where a caller built one.
        return await to_thread(engine.run, store, collection, found, settings, files, prune, started)
    if engine != "local":
        raise _option_error(
            f"engine must be 'local' or a RayEngine, got {engine!r}.",
            hint="from turnkit.ingest.ray import RayEngine; ingest(..., engine=RayEngine()).",
        )
    exists = await store.has_collection(collection)
    if exists:
        await declare_ingest_fields(store, collection, exists=True)

    bar: Any = None
    if progress and sys.stderr.isatty():
        # tqdm ships no type information; it is used through an untyped handle.
        tqdm: Any = importlib.import_module("tqdm")
        bar = tqdm.tqdm(
            total=len(found.candidates), unit="file", desc="ingest", file=sys.stderr, dynamic_ncols=True
        )
    done = 0

    def report_progress() -> None:
        if on_progress is not None:
            on_progress(
                IngestProgress(
                    files_total=len(found.candidates),
                    files_done=done,
                    files_written=writer.files_written,
                    chunks_written=writer.chunks_written,
                    chunks_deleted=writer.chunks_deleted,
                )
            )

    writer = Writer(q, batch_size, bar, report_progress)
    queue: asyncio.Queue[Outcome | Exception | None] = asyncio.Queue(maxsize=_QUEUE_FILES)
    # The run's own `workers` threads, which also bound how many files are read at once: asyncio's
    # default pool has min(32, cores + 4) threads, fewer on a small machine, and the encoder's calls
    # wait in it too.
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="turnkit-ingest")
    stop = threading.Event()  # set when the run ends: a cancelled task's thread would read on
    loop = asyncio.get_running_loop()

    async def produce() -> None:
        try:
            for at in range(0, len(found.candidates), LOOKUP_FILES):
                cands = found.candidates[at : at + LOOKUP_FILES]
                stored = await lookup(q, [c.uri for c in cands]) if exists else {}
                for start in range(0, len(cands), _WINDOW_FILES):
                    window = [(c, stored.get(c.uri, [])) for c in cands[start : start + _WINDOW_FILES]]
                    # One slice per worker, not one hand-off per file: those cost 3-12% of ingest's
                    # wall time and half its loop's CPU (bench/ingest.py, 2,000 files).
                    slices = _slices(window, workers)
                    tasks = [loop.run_in_executor(pool, _process_group, g, settings, stop) for g in slices]
                    try:
                        for task in tasks:
                            for outcome in await task:
                                await queue.put(outcome)
                    finally:
                        for task in tasks:
                            task.cancel()
            await queue.put(None)
        except Exception as exc:  # hand it to the consumer, which would otherwise wait forever
            await queue.put(exc)

    producer = asyncio.ensure_future(produce())
    try:
        while (outcome := await queue.get()) is not None:
            if isinstance(outcome, Exception):
                raise outcome
            found.record(outcome.status, outcome.issue)
            await writer.add(outcome)
            done += 1
            report_progress()
            if bar is not None:
                bar.update(1)
        await writer.finish()
        pruned_files = pruned_chunks = 0
        if prune and (exists or writer.chunks_written):  # a collection never written to holds nothing
            pruned_files, pruned_chunks = await prune_missing(q, found, writer)
    finally:
        stop.set()
        producer.cancel()
        await asyncio.gather(producer, return_exceptions=True)
        pool.shutdown(wait=False, cancel_futures=True)
        if bar is not None:
            bar.close()
    report = make_report(
        collection,
        found,
        (writer.chunks_written, writer.chunks_deleted),
        (pruned_files, pruned_chunks),
        started,
        settings,
        files,
        prune=prune,
        batch_size=batch_size,
        follow_external_symlinks=follow_external_symlinks,
    )
    if bar is not None:
        print(report, file=sys.stderr)
    return report


ingest_sync = sync_form(ingest)
