"""Read files into :class:`LoadedDocument`: plain text, Markdown, HTML and PDF.

A file is read once; its bytes are hashed and parsed from that same buffer, so
the hash stored with the chunks always describes the text they came from even
if the file changes while it is being ingested.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import os
import re
import stat
import threading
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any, get_args

from ._decode import check_fallback_encodings, decode_text
from ._errors import DocumentLoadError, FileSkippedError, IngestUsageError
from ._front_matter import split_front_matter
from ._html import HtmlExtractor, check_html_extractor, split_html, split_html_main
from ._markdown import split_markdown
from ._model import DocumentKind, LoadedDocument, Section

__all__ = [
    "DEFAULT_EXTENSIONS",
    "DEFAULT_MAX_FILE_SIZE",
    "ExtensionMap",
    "detect_kind",
    "load_document",
    "parse_file",
    "read_file",
    "resolve_extensions",
    "source_uri_for",
]

DEFAULT_EXTENSIONS: Mapping[str, DocumentKind] = MappingProxyType(
    {
        ".txt": "text",
        ".text": "text",
        ".rst": "text",
        ".md": "markdown",
        ".markdown": "markdown",
        ".mdown": "markdown",
        ".mkd": "markdown",
        ".mdx": "markdown",
        ".html": "html",
        ".htm": "html",
        ".xhtml": "html",
        ".pdf": "pdf",
    }
)
"""File extension (lower case, with the dot) → loader. Other extensions are skipped."""

ExtensionMap = Mapping[str, DocumentKind | None]
"""Extra extension mappings for :func:`load_document` / ``ingest``; ``None`` disables an extension."""

_KINDS: frozenset[str] = frozenset(get_args(DocumentKind))
_GZIP = ".gz"
_SURROGATES = re.compile("[\ud800-\udfff]")
_option_error = partial(IngestUsageError, code="E_INGEST_INVALID_OPTION")
_parse_error = partial(DocumentLoadError, code="E_INGEST_PARSE_FAILED")


def source_uri_for(path: str | os.PathLike[str]) -> str:
    """The ``source_uri`` turnkit stores for a file: its absolute, resolved ``file://`` URI.

    Use it to filter a collection by file, e.g.
    ``vs("docs").where("metadata.source_uri", source_uri_for("guide.md"))``.
    Symlinks are resolved, so a file reached through two paths is one source.
    """
    return Path(path).expanduser().resolve().as_uri()


def resolve_extensions(extensions: ExtensionMap | None) -> dict[str, DocumentKind]:
    """The default extension map with ``extensions`` applied (validated)."""
    merged = dict(DEFAULT_EXTENSIONS)
    for ext, kind in (extensions or {}).items():
        if not isinstance(ext, str) or not ext.startswith(".") or len(ext) < 2:
            raise _option_error(
                f"Extension keys look like '.md'; got {ext!r}.", hint="Start each key with a dot."
            )
        if kind is None:
            merged.pop(ext.lower(), None)
        elif kind not in _KINDS:
            raise _option_error(
                f"Unknown document kind {kind!r} for {ext!r}.", hint=f"Use one of {sorted(_KINDS)}."
            )
        else:
            merged[ext.lower()] = kind
    return merged


def detect_kind(path: str | os.PathLike[str], extensions: Mapping[str, DocumentKind]) -> DocumentKind:
    """The loader for ``path``, chosen by its extension (case-insensitive).

    A gzip file is read by the loader of the extension inside (``guide.md.gz``
    is Markdown), else by the one mapped to ``.gz`` itself, if any.
    """
    suffix = Path(path).suffix.lower()
    kind = extensions.get(suffix)
    if suffix == _GZIP:
        # README.gz, changelog.Debian.gz, tool.py.gz: one reason, "No loader for '.gz'", whose hint
        # (--ext .gz=text) reads them all.
        kind = extensions.get(Path(Path(path).stem).suffix.lower()) or kind
    if kind is None:
        raise IngestUsageError(
            f"No loader for {suffix or 'files without an extension'!r}.",
            code="E_INGEST_UNSUPPORTED_FILE",
            path=os.fspath(path),
        )
    return kind


@dataclass(frozen=True, kw_only=True)
class RawFile:
    data: bytes
    mtime: datetime
    size: int
    content_hash: str


DEFAULT_MAX_FILE_SIZE = 50 * 1024 * 1024
"""Files larger than this many bytes (50 MiB) are skipped unless ``max_file_size`` says otherwise."""

_READ_BLOCK = 1 << 20
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_SPECIAL = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def _read_error(path: str, exc: OSError) -> DocumentLoadError:
    reason = exc.strerror or type(exc).__name__
    return DocumentLoadError(
        f"Cannot read {path!r}: {reason}.", code="E_INGEST_READ_FAILED", path=path, reason=reason
    )


def _too_large(
    path: str, size: int | None, limit: int, what: str = "it grew while being read"
) -> FileSkippedError:
    reason = f"larger than the {limit:,}-byte limit ({f'{size:,} bytes' if size is not None else what})"
    return FileSkippedError(
        f"Skipped {path!r}: {reason}.", code="E_INGEST_FILE_TOO_LARGE", path=path, reason=reason
    )


def _check_stat(path: str, target: str | int, max_size: int | None) -> os.stat_result:
    """``os.stat`` of ``target`` (``path`` or its open descriptor): a regular file within the limit."""
    try:
        st = os.stat(target)
    except OSError as exc:
        raise _read_error(path, exc) from exc
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _SPECIAL if test(st.st_mode)), "a special file")
        reason = f"{kind}, not a regular file"
        raise FileSkippedError(
            f"Skipped {path!r}: {reason}.", code="E_INGEST_SPECIAL_FILE", path=path, reason=reason
        )
    if max_size is not None and st.st_size > max_size:
        raise _too_large(path, st.st_size, max_size)
    return st


class _RawReader(io.RawIOBase):
    """A file descriptor read at most ``budget`` bytes, hashed as it is read."""

    def __init__(self, fd: int, path: str, budget: int | None) -> None:
        super().__init__()
        self.fd, self.path, self.budget = fd, path, budget
        self.hash = hashlib.sha256()
        self.total = 0

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        want = _READ_BLOCK if size < 0 else size
        if self.budget is not None:
            want = min(want, self.budget - self.total)
        if want <= 0:
            if self.budget is not None and self.total >= self.budget:
                raise _too_large(self.path, None, self.budget - 1)
            return b""
        try:
            block = os.read(self.fd, want)
        except OSError as exc:
            raise _read_error(self.path, exc) from exc
        self.hash.update(block)
        self.total += len(block)
        return block

    def readinto(self, buffer: Any) -> int:
        block = self.read(len(buffer))
        buffer[: len(block)] = block
        return len(block)


def _read(fd: int, where: str, max_size: int | None) -> tuple[bytes, int, str]:
    """The file's bytes, its size and its sha256; a ``*.gz`` file is decompressed as a stream.

    At most ``max_size`` bytes are read or decompressed, so neither a growing
    file nor a gzip bomb (gigabytes of zeros in a few megabytes) is held whole.
    """
    budget = max_size + 1 if max_size is not None else None  # one byte over tells "too large"
    raw = _RawReader(fd, where, budget)
    gz = where.lower().endswith(_GZIP)
    stream: Any = gzip.GzipFile(fileobj=io.BufferedReader(raw, _READ_BLOCK)) if gz else raw
    parts: list[bytes] = []
    total = 0
    try:
        with stream:
            while block := stream.read(_READ_BLOCK if budget is None else min(_READ_BLOCK, budget - total)):
                parts.append(block)
                total += len(block)
                if max_size is not None and total > max_size:
                    raise _too_large(
                        where, None, max_size, "once decompressed" if gz else "it grew while being read"
                    )
    except (OSError, EOFError, zlib.error) as exc:  # only gzip raises these: gzip.BadGzipFile is an OSError
        reason = f"not a readable gzip file ({type(exc).__name__}: {exc})"
        raise _parse_error(f"Cannot decompress {where!r}: {reason}.", path=where, reason=reason) from exc
    return b"".join(parts), raw.total, raw.hash.hexdigest()


def read_file(path: str | os.PathLike[str], *, max_size: int | None = DEFAULT_MAX_FILE_SIZE) -> RawFile:
    """Read ``path`` once: its bytes, size, modification time and sha256.

    Only a regular file is read, and at most ``max_size`` bytes of it (``None``:
    no limit): the path is checked, opened non-blocking (a FIFO would block) and
    the descriptor checked again (the path may have been swapped in between). A
    ``*.gz`` file is decompressed as it is read, ``max_size`` bounding its output
    too; ``size`` and ``content_hash`` describe the file on disk.

    Raises:
        FileSkippedError: ``E_INGEST_SPECIAL_FILE``: a FIFO, socket, device or directory.
        FileSkippedError: ``E_INGEST_FILE_TOO_LARGE``: more than ``max_size`` bytes (on disk or decompressed).
        DocumentLoadError: ``E_INGEST_READ_FAILED``: the file cannot be opened or read.
        DocumentLoadError: ``E_INGEST_PARSE_FAILED``: a ``.gz`` file that is not valid gzip.
    """
    where = os.fspath(path)
    _check_stat(where, where, max_size)
    try:
        fd = os.open(where, _OPEN_FLAGS)
    except OSError as exc:
        raise _read_error(where, exc) from exc
    try:
        st = _check_stat(where, fd, max_size)
        data, size, digest = _read(fd, where, max_size)
    finally:
        os.close(fd)
    return RawFile(
        data=data, mtime=datetime.fromtimestamp(st.st_mtime, tz=UTC), size=size, content_hash=digest
    )


def _clean(text: str) -> str:
    """``text`` with every newline as LF, and lone surrogates replaced by U+FFFD.

    pypdf (from a broken ToUnicode map) and a few codecs (UTF-7, a declared
    charset) can yield surrogates; they cannot be encoded as UTF-8, so the
    chunker and the store would reject the whole document.
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.isascii() else _SURROGATES.sub("\ufffd", text)


class _PypdfLog(logging.Handler):
    """Collects the ``pypdf`` logger's records per parsing thread instead of letting them reach stderr.

    Records logged by a thread that is not parsing a PDF are handed on as if
    the logger still propagated, so other code using pypdf meanwhile keeps its logging.
    """

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.local = threading.local()
        self.users = 0
        self.parent_propagates = True

    def emit(self, record: logging.LogRecord) -> None:
        sink: list[str] | None = getattr(self.local, "sink", None)
        if sink is not None:
            sink.append(record.getMessage())
        elif self.parent_propagates and _PYPDF_LOGGER.parent is not None:
            _PYPDF_LOGGER.parent.handle(record)


_PYPDF_LOGGER = logging.getLogger("pypdf")
_PYPDF_LOG = _PypdfLog()
_PYPDF_LOCK = threading.Lock()


@contextmanager
def _captured_pypdf_log() -> Iterator[list[str]]:
    """The ``pypdf`` log messages of this thread while the block runs (they are not printed)."""
    with _PYPDF_LOCK:
        # Installed while any thread parses (workers overlap); the logger's own setting is restored after.
        if _PYPDF_LOG.users == 0:
            _PYPDF_LOG.parent_propagates = _PYPDF_LOGGER.propagate
            _PYPDF_LOGGER.addHandler(_PYPDF_LOG)
            _PYPDF_LOGGER.propagate = False
        _PYPDF_LOG.users += 1
    messages: list[str] = []
    _PYPDF_LOG.local.sink = messages
    try:
        yield messages
    finally:
        _PYPDF_LOG.local.sink = None
        with _PYPDF_LOCK:
            _PYPDF_LOG.users -= 1
            if _PYPDF_LOG.users == 0:
                _PYPDF_LOGGER.removeHandler(_PYPDF_LOG)
                _PYPDF_LOGGER.propagate = _PYPDF_LOG.parent_propagates


def _pdf_pages(data: bytes, *, path: str) -> tuple[Section, ...]:
    try:
        import pypdf
    except ImportError as exc:
        raise IngestUsageError(
            f"Reading {path!r} needs `pypdf`, which is not installed.",
            code="E_INGEST_DEPENDENCY_MISSING",
            path=path,
            reason="a PDF, and pypdf is not installed",
        ) from exc
    with _captured_pypdf_log() as logged:
        try:
            reader = pypdf.PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise _parse_error(
                    f"{path!r} is encrypted with a password.", path=path, reason="encrypted with a password"
                )
            pages = [_clean(page.extract_text() or "").rstrip() for page in reader.pages]
        except DocumentLoadError:
            raise
        except Exception as exc:  # pypdf raises many types on damaged input; all mean "unreadable PDF"
            reason = f"not a readable PDF ({type(exc).__name__}: {exc})"
            if logged:  # what pypdf noticed before giving up often names the actual damage
                reason += "; pypdf: " + "; ".join(dict.fromkeys(logged))
            raise _parse_error(f"Cannot parse {path!r}: {reason}.", path=path, reason=reason) from exc
    last = len(pages) - 1
    # Pages end with a blank line so a page break is a paragraph boundary for the chunker.
    return tuple(
        Section(text=text + ("\n\n" if text and i < last else ""), page=i + 1) for i, text in enumerate(pages)
    )


def parse_file(
    raw: RawFile,
    kind: DocumentKind,
    *,
    path: str,
    source_uri: str,
    display_name: str,
    fallback_encodings: Sequence[str],
    html_extractor: HtmlExtractor,
) -> LoadedDocument:
    """The document a file read by `read_file` holds: its bytes cut into sections by the loader for ``kind``.

    Text is read as UTF-8 (or UTF-16/32 with a byte-order mark, or an HTML
    page's declared charset), then with each of ``fallback_encodings`` in order.
    A Markdown file's YAML front matter is kept as metadata, not as text.
    ``html_extractor="trafilatura"`` reads only an HTML page's main content.

    Raises:
        DocumentLoadError: ``E_INGEST_DECODE_FAILED``: text that is not UTF-8/UTF-16 (or a declared HTML
            charset).
        DocumentLoadError: ``E_INGEST_PARSE_FAILED``: a damaged or password-protected PDF.
        IngestUsageError: ``E_INGEST_DEPENDENCY_MISSING``: a PDF without `pypdf` installed.
    """
    front_matter: dict[str, Any] = {}
    if kind == "pdf":
        sections = _pdf_pages(raw.data, path=path)
    else:
        fallbacks = check_fallback_encodings(fallback_encodings)
        text = _clean(decode_text(raw.data, path=path, html=kind == "html", fallbacks=fallbacks))
        if kind == "markdown":
            front_matter, body = split_front_matter(text, path=path)
            sections = split_markdown(body)
        elif kind == "html":
            try:
                sections = split_html_main(text) if html_extractor == "trafilatura" else split_html(text)
            except Exception as exc:  # html.parser is lenient; this guards its rare assertion failures
                raise _parse_error(
                    f"Cannot parse {path!r} as HTML: {exc}.", path=path, reason=f"unparsable HTML ({exc})"
                ) from exc
        else:
            sections = (Section(text=text),) if text else ()
    return LoadedDocument(
        source_uri=source_uri,
        display_name=display_name,
        kind=kind,
        sections=sections,
        front_matter=MappingProxyType(front_matter),
        mtime=raw.mtime,
        content_hash=raw.content_hash,
        size=raw.size,
    )


def load_document(
    path: str | os.PathLike[str],
    *,
    kind: DocumentKind | None = None,
    display_name: str | None = None,
    extensions: ExtensionMap | None = None,
    max_file_size: int | None = DEFAULT_MAX_FILE_SIZE,
    fallback_encodings: Sequence[str] = (),
    html_extractor: HtmlExtractor = "turnkit",
) -> LoadedDocument:
    """Read one file into a :class:`LoadedDocument`.

    Args:
        path: The file to read.
        kind: The loader to use; by default chosen from the extension.
        display_name: The name shown to people and agents; defaults to the file name.
        extensions: Extra extension → kind mappings (see :data:`DEFAULT_EXTENSIONS`).
        max_file_size: Largest file read, in bytes (``None``: no limit).
        fallback_encodings: Codecs tried in order on text that is not UTF-8
            (e.g. ``["cp1252"]``); ``latin-1`` decodes any bytes, so put it last.
        html_extractor: ``"turnkit"`` (the visible text, site chrome marked by
            HTML5 landmarks or ARIA roles dropped) or ``"trafilatura"`` (main
            content by trafilatura's heuristics; the ``html`` extra).

    Raises:
        FileSkippedError: ``E_INGEST_SPECIAL_FILE``: a FIFO, socket, device or directory.
        FileSkippedError: ``E_INGEST_FILE_TOO_LARGE``: the file is larger than ``max_file_size``.
        IngestUsageError: ``E_INGEST_UNSUPPORTED_FILE``: no loader for the file's extension.
        DocumentLoadError: ``E_INGEST_READ_FAILED``: the file cannot be read.
        DocumentLoadError: ``E_INGEST_DECODE_FAILED``: the text is not in a supported encoding.
        DocumentLoadError: ``E_INGEST_PARSE_FAILED``: the file's format is damaged.
        IngestUsageError: ``E_INGEST_DEPENDENCY_MISSING``: a loader's optional dependency is missing.
    """
    if kind is None:
        kind = detect_kind(path, resolve_extensions(extensions))
    elif kind not in _KINDS:
        raise _option_error(f"Unknown document kind {kind!r}.", hint=f"Use one of {sorted(_KINDS)}.")
    return parse_file(
        read_file(path, max_size=max_file_size),
        kind,
        path=os.fspath(path),
        source_uri=source_uri_for(path),
        display_name=display_name if display_name is not None else Path(path).name,
        fallback_encodings=fallback_encodings,
        html_extractor=check_html_extractor(html_extractor),
    )
