"""``turnkit count``, ``delete``, ``export``, ``peek`` and ``collections files``: a collection's rows.

Each reads the whole collection through `QueryBuilder.iter_rows` (pages in id
order, one page in memory) or works on the filter alone (`count`, `delete`).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from ._connect import Connection, location_of
from ._errors import EXIT_OK, CliUsageError
from ._lookup import open_collection
from ._output import emit_json, one_line, source_label

if TYPE_CHECKING:
    from ..batteries.vector import QueryBuilder, VectorMatch, VectorStore

__all__ = ["print_files", "run_count", "run_delete", "run_export", "run_peek"]

_PAGE = 1_000  # rows per page read by export and files
_EXCERPT = 120
_FIELDS = ("id", "document", "metadata", "created_at", "updated_at")  # an exported row, then its vector


def _open(args: argparse.Namespace) -> tuple[Connection, str, QueryBuilder]:
    """The connection, the collection's name and a builder narrowed by ``--filter`` (parsed first)."""
    from ..batteries.vector import parse_filter_expression

    conn, name = location_of(args)
    # A bad filter is reported before any database is opened.
    node = parse_filter_expression(args.filter) if getattr(args, "filter", None) else None
    query = open_collection(conn, name)(name)
    return conn, name, query if node is None else query.where(node)


def _head(conn: Connection, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """What every JSON answer here starts with: the database, the collection, the filter."""
    return {"uri": conn.uri, "collection": name, "filter": args.filter}


def run_count(args: argparse.Namespace) -> int:
    """Print how many rows the collection (or ``--filter``) holds."""
    conn, name, query = _open(args)
    rows = query.count_sync()
    if args.json:
        emit_json(_head(conn, name, args) | {"count": rows})
    else:
        print(rows)
    return EXIT_OK


def _rows(n: int) -> str:
    return f"{n} row" if n == 1 else f"{n} rows"


def run_delete(args: argparse.Namespace) -> int:
    """Delete the rows ``--filter`` matches (or ``--all``), after a confirmation unless ``--yes``."""
    if bool(args.filter) == bool(args.all):
        raise CliUsageError(
            "`turnkit delete` needs --filter EXPR or --all (not both).",
            hint="Example: turnkit delete -c docs --filter 'kind = \"draft\"'",
        )
    conn, name, query = _open(args)
    rows = query.count_sync()
    what = f"{_rows(rows)} of {name!r}" + (f" matching {args.filter}" if args.filter else " (every row)")
    if rows and not args.yes:
        if not sys.stdin.isatty():
            raise CliUsageError(
                f"Not deleting {what} without confirmation: stdin is not a terminal.",
                hint="Add --yes to delete without asking (scripts, CI).",
                collection=name,
            )
        if input(f"Delete {what} from {conn.uri}? [y/N] ").strip().lower() not in {"y", "yes"}:
            print("Nothing deleted.", file=sys.stderr)
            return EXIT_OK
    deleted = query.delete_sync(all=bool(args.all)) if rows else 0
    if args.json:
        emit_json(_head(conn, name, args) | {"deleted": deleted})
    else:
        print(f"Deleted {_rows(deleted)} from {name!r}.")
    return EXIT_OK


def _record(match: VectorMatch, vectors: bool) -> dict[str, Any]:
    import numpy as np

    record: dict[str, Any] = {name: getattr(match, name) for name in _FIELDS}
    if vectors:
        # float32 as stored: orjson prints each value's shortest float32 form, which reads back exactly.
        record["vector"] = None if match.vector is None else np.asarray(match.vector, dtype=np.float32)
    return record


def _jsonl(pages: Any, out: BinaryIO, vectors: bool) -> int:
    import orjson

    rows = 0
    for page in pages:
        lines = [orjson.dumps(_record(m, vectors), option=orjson.OPT_SERIALIZE_NUMPY) for m in page]
        out.write(b"\n".join(lines) + b"\n")
        out.flush()
        rows += len(page)
    return rows


def _parquet(pages: Any, path: str, dimension: int, vectors: bool) -> int:
    import orjson
    import pyarrow as pa
    import pyarrow.parquet as pq

    stamp = pa.timestamp("us", tz="UTC")
    schema = pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("document", pa.string()),
            pa.field("metadata", pa.string()),  # JSON text: keys differ between rows
            pa.field("created_at", stamp),
            pa.field("updated_at", stamp),
            *([pa.field("vector", pa.list_(pa.float32(), dimension))] if vectors else []),
        ]
    )
    rows = 0
    with pq.ParquetWriter(path, schema) as writer:
        for page in pages:
            records = [
                _record(m, vectors)
                | {"metadata": None if m.metadata is None else orjson.dumps(m.metadata).decode()}
                for m in page
            ]
            writer.write_table(pa.Table.from_pylist(records, schema=schema))
            rows += len(page)
    return rows


def run_export(args: argparse.Namespace) -> int:
    """Write every row (or those ``--filter`` matches) as JSON Lines or Parquet, in id order."""
    if args.format == "parquet" and args.output in (None, "-"):
        raise CliUsageError(
            "Parquet is binary: `turnkit export --format parquet` needs -o FILE.",
            hint="Example: turnkit export -c docs --format parquet -o docs.parquet",
        )
    conn, name, query = _open(args)
    vectors = not args.no_vectors
    fields = ("*",) if vectors else _FIELDS
    matches = iter(query.select(*fields).iter_rows_sync(page_size=_PAGE))
    pages = iter(lambda: list(itertools.islice(matches, _PAGE)), [])  # pages of _PAGE rows until none is left
    if args.output in (None, "-"):
        rows = _jsonl(pages, sys.stdout.buffer, vectors)
        print(f"Exported {_rows(rows)} of {name!r}.", file=sys.stderr)
        return EXIT_OK
    target = Path(args.output)
    # Written beside the target and renamed at the end: an interrupted export leaves no half file.
    partial = target.with_name(target.name + ".partial")
    try:
        if args.format == "parquet":
            dimension = query.info_sync().dimension
            rows = _parquet(pages, str(partial), dimension, vectors)
        else:
            with open(partial, "wb") as out:
                rows = _jsonl(pages, out, vectors)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    if args.json:
        emit_json(_head(conn, name, args) | {"rows": rows, "format": args.format, "output": str(target)})
    else:
        print(f"Exported {_rows(rows)} of {name!r} to {target} ({args.format}).")
    return EXIT_OK


def run_peek(args: argparse.Namespace) -> int:
    """Show the first rows (in id order) with their source and an excerpt."""
    conn, name, query = _open(args)
    rows = list(itertools.islice(query.iter_rows_sync(page_size=min(args.rows, _PAGE)), args.rows))
    total = query.count_sync()
    if args.json:
        listed = [{"id": m.id, "document": m.document, "metadata": m.metadata} for m in rows]
        emit_json(_head(conn, name, args) | {"total": total, "rows": listed})
        return EXIT_OK
    if not rows:
        print(f"No rows in {name!r}" + (" for this filter." if args.filter else "."))
        return EXIT_OK
    for match in rows:
        print(f"{match.id}  {source_label(match.metadata, match.id)}")
        print(f"    {one_line(match.document or '', _EXCERPT)}")
    print(f"({len(rows)} of {total} rows{' matching the filter' if args.filter else ''}, in id order)")
    return EXIT_OK


def print_files(args: argparse.Namespace, conn: Connection, store: VectorStore, name: str) -> int:
    """``turnkit collections files NAME``: each ingested file with its chunk count."""
    chunks: Counter[str] = Counter()
    names: dict[str, str] = {}
    query = store(name).select("id", "metadata.source_uri", "metadata.source_display_name")
    for match in query.iter_rows_sync(page_size=_PAGE):
        meta = match.metadata or {}
        uri = meta.get("source_uri")
        key = uri if isinstance(uri, str) else ""
        chunks[key] += 1
        shown = meta.get("source_display_name")
        names.setdefault(key, shown if isinstance(shown, str) and shown else key)
    files = sorted((k for k in chunks if k), key=lambda k: (names[k], k))
    if args.json:
        listed = [{"source_uri": k, "display_name": names[k], "chunks": chunks[k]} for k in files]
        emit_json({"uri": conn.uri, "collection": name, "files": listed, "other_rows": chunks.get("", 0)})
        return EXIT_OK
    width = max((len(str(chunks[k])) for k in files), default=1)
    for k in files:
        print(f"{str(chunks[k]).rjust(width)}  {names[k]}")
    if chunks.get(""):
        print(f"{str(chunks['']).rjust(width)}  (rows without a source_uri: not from turnkit ingest)")
    print(f"{len(files)} files, {sum(chunks[k] for k in files)} chunks in {name!r}.")
    return EXIT_OK
