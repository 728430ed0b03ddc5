"""``turnkit ingest``, ``query``, ``stats`` and ``optimize``: thin layers over the store and ingest APIs."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._config import DEFAULT_ENCODER, open_store
from ._connect import connection_of, location_of
from ._errors import (
    DEPENDENCY_SUFFIXES,
    EXIT_DEPENDENCY,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    CliUsageError,
)
from ._lookup import database_missing, no_collections_line, open_collection
from ._output import emit_json, one_line, source_label
from ._query_flags import QUERY_FLAGS, query_settings, settings_json

if TYPE_CHECKING:
    from ..batteries.vector import CollectionInfo, VectorMatch
    from ..ingest import IngestProgress

__all__ = ["run_ingest", "run_optimize", "run_query", "run_stats"]

_EXCERPT = 200
_OWN_FIELDS = ("section", "page_span")  # metadata a JSON result also gives as a field of its own


def _extensions(items: list[str]) -> dict[str, str | None]:
    """``--ext`` values (``.adoc``, ``.rst=markdown``, ``log=none``) as ingest's ``extensions`` map."""
    mapping: dict[str, str | None] = {}
    for item in items:
        ext, sep, kind = item.partition("=")
        ext, kind = ext.strip().lower(), (kind.strip().lower() if sep else "text")
        ext = ext if ext.startswith(".") else "." + ext
        if len(ext) < 2 or kind not in ("text", "markdown", "html", "pdf", "none"):
            raise CliUsageError(
                f"--ext {item!r} is not .EXT or .EXT=KIND.",
                hint="Examples: --ext .adoc (read as text), --ext .rst=markdown, --ext .log=none (skip). "
                "KIND is text, markdown, html, pdf or none.",
                field="extension",
            )
        mapping[ext] = None if kind == "none" else kind
    return mapping


def _printer(progress: bool) -> Callable[[str], None]:
    """Print a line on stdout, clearing and redrawing the progress bar on a terminal around it."""
    if not (progress and sys.stderr.isatty()):
        return lambda line: print(line, flush=True)
    # tqdm ships no type information; it is used through an untyped handle.
    tqdm: Any = importlib.import_module("tqdm")

    def write(line: str) -> None:
        with tqdm.tqdm.external_write_mode(file=sys.stdout):
            print(line, flush=True)

    return write


def _interrupted(collection: str, last: IngestProgress | None) -> int:
    if last is None or not (last.files_written or last.chunks_written or last.chunks_deleted):
        said = "interrupted before anything was written. Run the same command again to ingest."
    else:
        said = (
            f"interrupted. Written to {collection!r} so far: {last.files_written:,} file(s), "
            f"{last.chunks_written:,} chunk(s) ({last.files_done:,} of {last.files_total:,} files read). "
            "Run the same command again to finish: what was written is found unchanged, the rest is written."
        )
    print(f"turnkit: {said}", file=sys.stderr)
    return EXIT_INTERRUPTED


def run_ingest(args: argparse.Namespace) -> int:
    """Load files into a collection and print what was written."""
    from ..ingest import ingest_sync

    conn, collection = location_of(args)
    if not args.prune:
        # With --prune a missing path is how a deleted file's chunks are removed.
        missing = [p for p in args.paths if not os.path.lexists(os.path.expanduser(p))]
        if missing:
            raise CliUsageError(
                f"No such file or folder: {', '.join(map(repr, missing))}.",
                hint="Check the path; to remove the chunks of deleted files, add --prune.",
                path=missing[0],
            )
    extensions = _extensions(args.extension)
    store = open_store(conn, collection, encoder=args.encoder, fallback=DEFAULT_ENCODER)
    if args.ray_address and args.engine != "ray":
        raise CliUsageError("--ray-address needs --engine ray.", hint="Add --engine ray.")
    progress = not (args.no_progress or args.json)
    progress_shown = progress and sys.stderr.isatty()
    latest: dict[str, IngestProgress] = {}
    same = ("chunk_size", "chunk_overlap", "batch_size", "prune", "max_file_size", "include", "exclude")
    options: dict[str, Any] = {
        n: getattr(args, n) for n in (*same, "follow_external_symlinks", "html_extractor")
    }
    options.update(
        store=store,
        collection=collection,
        progress=progress,
        gitignore=not args.no_gitignore,
        fallback_encodings=args.fallback_encoding,
        extensions=extensions or None,
        on_progress=lambda now: latest.__setitem__("now", now),
    )
    if args.verbose and not args.json:
        write = _printer(progress)
        options["on_skip"] = lambda issue: write(f"  skipped: {issue}")
    if args.engine == "ray":
        from ..ingest.ray import RayEngine

        options["engine"] = RayEngine(address=args.ray_address)
    try:
        report = ingest_sync(args.paths, **options)
    except KeyboardInterrupt:
        return _interrupted(collection, latest.get("now"))
    if args.engine == "ray" and progress_shown:
        print(report, file=sys.stderr)  # the ray engine draws no progress bar
    # Let a compaction the writes triggered finish rather than die with the process.
    store.wait_for_maintenance_sync()
    encoder = store.encoder.name if store.encoder is not None else None
    if args.json:
        data = dataclasses.asdict(report)
        data.update(ok=report.ok, chunks_per_second=report.chunks_per_second, uri=conn.uri, encoder=encoder)
        emit_json(data)
    else:
        # ingest prints the same report under the progress bar, which it shows only on a terminal.
        if not progress_shown:
            print(report)
        if not args.verbose and report.files_skipped > len(report.skipped):
            print("List every skipped file with --verbose.")
        if any(g.code == "E_INGEST_UNSUPPORTED_FILE" for g in report.skip_groups):
            print("Read an extension with --ext, e.g. --ext .adoc=text (or markdown, html, pdf).")
        print(f"Database: {conn.uri} (collection {collection!r}, encoder {encoder})")
    needs_extra = sum(issue.code.endswith(DEPENDENCY_SUFFIXES) for issue in report.errors)
    if needs_extra:
        failed, status = (
            f"{needs_extra} file(s) need an optional extra (the hint above names it)",
            EXIT_DEPENDENCY,
        )
    elif report.errors:
        failed, status = f"{len(report.errors)} file(s) could not be read", EXIT_PARTIAL
    else:
        return EXIT_OK
    print(f"turnkit: {failed}; the others were ingested.", file=sys.stderr)
    return status


def _match_json(match: VectorMatch) -> dict[str, Any]:
    meta = match.metadata or {}
    return {
        "id": match.id,
        "score": match.score,
        "distance": match.distance,
        # The file alone: the section and the pages are fields of their own.
        "source": source_label({k: v for k, v in meta.items() if k not in _OWN_FIELDS}, match.id),
        "section": meta.get("section"),
        "page_span": meta.get("page_span"),
        "document": match.document,
        "metadata": meta,
    }


def _copies_json(match: VectorMatch) -> list[dict[str, Any]]:
    return [{"id": d.id, "source": source_label(d.metadata, d.id)} for d in match.duplicates]


def run_query(args: argparse.Namespace) -> int:
    """Search a collection and print the matches."""
    from ..batteries.vector import retrieve_sync

    conn, collection = location_of(args)
    if not args.text.strip():
        raise CliUsageError("The query text is empty.", hint='Pass what to search for: turnkit query "…".')
    # Before any model or database is opened: a bad filter or flag is reported first.
    settings = query_settings(args)
    open_collection(conn, collection)  # the not-found error, before anything is created
    store = open_store(conn, collection, encoder=args.encoder, fallback=None)
    matches = retrieve_sync(store(collection).near_text(args.text), settings).matches
    if args.json:
        emit_json(
            {
                "uri": conn.uri,
                "collection": collection,
                "query": args.text,
                # The flags as given (null: not given), then the settings the search ran with.
                **{flag.name: getattr(args, flag.name) for flag in QUERY_FLAGS},
                "settings": settings_json(settings, filter_text=args.filter),
                "results": [_match_json(m) | {"duplicates": _copies_json(m)} for m in matches],
            }
        )
        return EXIT_OK
    if not matches:
        print(f"No results in {collection!r}" + (" for this filter." if args.filter else "."))
        return EXIT_OK
    for rank, match in enumerate(matches, 1):
        score = f"{match.score:.3f}" if match.score is not None else "  -  "
        print(f"{rank:>2}. {score}  {source_label(match.metadata, match.id)}")
        text = match.document or ""
        if args.full:
            print("\n".join("      " + line for line in text.splitlines()) + "\n")
        else:
            print(f"      {one_line(text, _EXCERPT)}")
        if match.duplicates:
            # The same text elsewhere: collapsed into this result, not hidden.
            print(f"      also in: {', '.join(c['source'] for c in _copies_json(match))}")
    return EXIT_OK


def _info_json(info: CollectionInfo) -> dict[str, Any]:
    return dataclasses.asdict(info) | {"indexes": list(info.indexes)}


def run_stats(args: argparse.Namespace) -> int:
    """Describe the collections of a database."""
    conn = connection_of(args)
    infos: list[CollectionInfo] = []
    missing = database_missing(conn)
    if args.collection or not missing:
        store = open_collection(conn, *(args.collection or ()))
        infos = [store.collection_info_sync(n) for n in (args.collection or store.list_collections_sync())]
    if args.json:
        emit_json({"uri": conn.uri, "collections": [_info_json(i) for i in infos]})
        return EXIT_OK
    if not infos:
        print(no_collections_line(conn, missing))
        return EXIT_OK
    print(f"Database: {conn.uri}")
    header = tuple("collection rows dim metric encoder version fragments unindexed indexes".split())
    rows = [
        [str(v) for v in (i.name, i.rows, i.dimension, i.metric, i.encoder or "-", i.version, i.fragments)]
        + [str(i.unindexed_rows), ", ".join(i.indexes) or "none"]
        for i in infos
    ]
    widths = [max(len(r[c]) for r in [header, *rows]) for c in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return EXIT_OK


def _has_vector_index(info: CollectionInfo) -> bool:
    # CollectionInfo.indexes reads "name:TYPE"; vector indexes are the IVF and HNSW families.
    return any(("IVF" in entry.upper() or "HNSW" in entry.upper()) for entry in info.indexes)


def run_optimize(args: argparse.Namespace) -> int:
    """Compact collections and build or update their vector index."""
    conn, collection = location_of(args)
    names = [] if args.all else [collection]
    store = open_collection(conn, *names)
    names = names or store.list_collections_sync()
    results: list[dict[str, Any]] = []
    for name in names:
        q = store(name)
        before = q.info_sync()
        q.optimize_sync()
        built: str | None = None
        if args.index not in ("auto", "none"):
            built = q.create_index_sync(args.index)
        elif args.index == "auto" and not _has_vector_index(before) and before.rows >= args.index_min_rows:
            built = q.create_index_sync("auto")
        after = q.info_sync()
        states = {"before": _info_json(before), "after": _info_json(after)}
        results.append({"collection": name, "index_built": built, **states})
        if not args.json:
            line = (
                f"{name}: {after.rows} rows, fragments {before.fragments} → {after.fragments}, "
                f"version {before.version} → {after.version}, unindexed rows {after.unindexed_rows}"
            )
            if built is not None:
                line += f"; built a {built} index"
            elif not _has_vector_index(after):
                line += f"; no vector index (flat search is exact and fast below {args.index_min_rows} rows)"
            print(line)
    if args.json:
        emit_json({"uri": conn.uri, "results": results})
    return EXIT_OK
