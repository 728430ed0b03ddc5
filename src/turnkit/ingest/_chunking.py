"""Token-based chunking that prefers paragraph, then sentence, then line, then word boundaries.

Every cut is a token boundary of one tiktoken encoding of the text, never inside
a character or a combining sequence; a chunk ends at the best-ranked boundary in
the last half of its window, and the next starts at a sentence (else word) start
within the overlap. docs/ingesting.md ("Chunking") states the rules in full.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from turnkit._checks import is_int

from .._tokens import get_encoding
from ..batteries.vector import PageSpan
from ._decode import detector_version
from ._errors import IngestUsageError
from ._model import DocumentKind, LoadedDocument

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "CHUNKER_VERSION",
    "DEFAULT_CHUNK_ENCODING",
    "DEFAULT_CHUNK_OVERLAP",
    "DEFAULT_CHUNK_SIZE",
    "Chunk",
    "chunk_document",
    "chunks_of",
    "document_fingerprint",
    "split_text",
    "validate_chunking",
]

_chunking_error = partial(IngestUsageError, code="E_INGEST_INVALID_CHUNKING")

DEFAULT_CHUNK_SIZE = 1024
"""Tokens per chunk, as Vertex AI RAG Engine's default."""
DEFAULT_CHUNK_OVERLAP = 200
"""Tokens shared by consecutive chunks, as Vertex AI RAG Engine's default."""
DEFAULT_CHUNK_ENCODING = "cl100k_base"
"""The tiktoken encoding chunks are measured in (the one OpenAI's embedding models use)."""
CHUNKER_VERSION = 3
"""Bumped whenever the same input would be cut differently; part of the ingest fingerprint."""

_PARAGRAPH, _SENTENCE, _LINE, _WORD, _TOKEN, _UNUSABLE = 4, 3, 2, 1, 0, -1
_EDGE = 5
_TABLE_SIZE = 0x10000  # the Basic Multilingual Plane: every space, terminator and closer below


def _table(chars: str | list[int]) -> npt.NDArray[np.bool_]:
    table = np.zeros(_TABLE_SIZE, dtype=bool)
    table[[c if isinstance(c, int) else ord(c) for c in chars]] = True
    return table


# Lookup tables indexed by code point: much faster than np.isin on the short texts of most sections.
_SPACE = _table([9, 10, 11, 12, 13, 32, 0x85, 0xA0, 0x3000])
_TERMINATORS = _table(".!?…")
_CJK_TERMINATORS = _table("。！？｡")
_CLOSERS = _table("\"')]}»”’」』")
_ZWJ = 0x200D


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """One piece of a document, ready to be stored.

    ``start``/``end`` are token boundaries in :attr:`LoadedDocument.text`;
    ``text`` is that span without the whitespace at its edges.
    """

    id: str
    """Deterministic: ``sha256(source_uri, index, content_hash)``, 32 hex characters."""
    text: str
    """The chunk's text (stored as the record's ``document``)."""
    index: int
    """Position of the chunk in its document, from 0."""
    count: int
    """How many chunks the document produced."""
    start: int
    """Offset of the span's first character in the document text."""
    end: int
    """Offset just past the span's last character."""
    token_count: int
    """Tokens in :attr:`text` under the chunking encoding."""
    content_hash: str
    """``sha256`` of :attr:`text` (hex)."""
    heading_path: tuple[str, ...]
    """Enclosing headings, outermost first (Markdown, HTML)."""
    page_span: PageSpan | None
    """Pages covered (PDF), else ``None``."""
    source_uri: str
    """The file's ``file://`` URI."""
    source_display_name: str
    """The file's display name."""
    kind: DocumentKind
    """The loader that read the file."""
    mtime: datetime
    """The file's modification time when it was read."""
    file_hash: str
    """``sha256`` of the file's bytes."""
    fingerprint: str
    """Identifies the file content *and* the chunking settings that produced this chunk."""
    front_matter: Mapping[str, Any] = field(default_factory=dict)
    """The file's YAML front matter (Markdown), stored as ``metadata["front_matter"]``."""

    @property
    def metadata(self) -> dict[str, Any]:
        """The JSON metadata stored with the chunk (see the "Ingesting documents" docs)."""
        meta: dict[str, Any] = {
            "source_uri": self.source_uri,
            "source_display_name": self.source_display_name,
            "kind": self.kind,
        }
        if self.kind in ("markdown", "html"):
            meta["heading_path"] = list(self.heading_path)
            meta["section"] = " > ".join(self.heading_path)
        if self.page_span is not None:
            meta["page_span"] = self.page_span.to_dict()
        if self.front_matter:
            # One key of its own: front matter cannot pose as turnkit's keys (source, kind, trust_tier…).
            meta["front_matter"] = dict(self.front_matter)
        meta.update(
            mtime=self.mtime.isoformat(),
            file_hash=self.file_hash,
            content_hash=self.content_hash,
            chunk_index=self.index,
            chunk_count=self.count,
            token_count=self.token_count,
            char_start=self.start,
            char_end=self.end,
            ingest_fingerprint=self.fingerprint,
        )
        return meta

    def to_record(self) -> dict[str, Any]:
        """The record to upsert: ``{"id", "document", "metadata"}``."""
        return {"id": self.id, "document": self.text, "metadata": self.metadata}


def validate_chunking(chunk_size: int, chunk_overlap: int, encoding: str) -> tiktoken.Encoding:
    """Check the chunking settings and return the tiktoken encoding."""
    if not is_int(chunk_size, 1):
        raise _chunking_error(f"chunk_size must be a positive int; got {chunk_size!r}.")
    if not is_int(chunk_overlap, 0):
        raise _chunking_error(f"chunk_overlap must be an int >= 0; got {chunk_overlap!r}.")
    if chunk_overlap >= chunk_size:
        raise _chunking_error(
            f"chunk_overlap ({chunk_overlap}) must be smaller than chunk_size ({chunk_size})."
        )
    if encoding not in ("cl100k_base", "o200k_base"):
        raise _chunking_error(
            f"Unknown encoding {encoding!r}.", hint="Use 'cl100k_base' (the default) or 'o200k_base'."
        )
    return get_encoding(encoding)


def document_fingerprint(
    *,
    file_hash: str,
    kind: str,
    source_uri: str,
    chunk_size: int,
    chunk_overlap: int,
    encoding: str,
    fallback_encodings: Sequence[str] = (),
    html_extractor: str = "turnkit",
) -> str:
    """Everything that decides a file's chunks; equal fingerprints mean equal chunk sets.

    The source is its resolved ``source_uri``, never the display name: the same
    file reached from another root (``ingest docs/`` then ``ingest .``) is unchanged.
    """
    parts: list[object] = [CHUNKER_VERSION, file_hash, kind, source_uri, chunk_size, chunk_overlap, encoding]
    # Added only when set: fingerprints written without these options stay valid. Ingest passes the
    # fallbacks only for a file that needed one, so a UTF-8 file's fingerprint ignores them; the
    # detector's version is in too, since it decides which codec such a file is read with.
    if fallback_encodings:
        parts.append([*fallback_encodings, detector_version()])
    if html_extractor != "turnkit" and kind == "html":
        parts.append(html_extractor)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def _char_levels(text: str) -> npt.NDArray[np.int8]:
    """Level of the boundary before each character position ``0..len(text)``."""
    cp = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
    n = len(cp)
    lev = np.zeros(n + 1, dtype=np.int8)
    small = cp < _TABLE_SIZE
    index = np.where(small, cp, 0)

    def member(table: npt.NDArray[np.bool_]) -> npt.NDArray[np.bool_]:
        return table[index] & small

    space = member(_SPACE)
    # word: a space on either side
    lev[1:n] = np.where(space[:-1] | space[1:], _WORD, _TOKEN)
    # sentence: a terminator (maybe followed by a closing quote) then a space; CJK needs no space
    term = member(_TERMINATORS)
    ended = term.copy()
    ended[1:] |= member(_CLOSERS)[1:] & term[:-1]
    sentence = np.zeros(n + 1, dtype=bool)
    sentence[1:n] = ended[:-1] & space[1:]
    sentence[1:] |= member(_CJK_TERMINATORS)
    lev[sentence] = _SENTENCE
    # line: just after a newline; paragraph: just after a line that is blank
    newline = np.flatnonzero(cp == 10)
    lev[newline + 1] = _LINE
    if len(newline) > 1:
        nonspace = np.concatenate(([0], np.cumsum(~space)))
        prev, cur = newline[:-1], newline[1:]
        blank = nonspace[cur] - nonspace[prev + 1] == 0
        lev[cur[blank] + 1] = _PARAGRAPH
    # never inside a combining sequence: before a mark, ZWJ, variation selector, skin tone; after a ZWJ;
    # between two regional indicators (a flag)
    for i in np.flatnonzero(cp >= 0x300):
        c = int(cp[i])
        if (
            c == _ZWJ
            or 0xFE00 <= c <= 0xFE0F
            or 0xE0100 <= c <= 0xE01EF
            or 0x1F3FB <= c <= 0x1F3FF
            or unicodedata.category(chr(c)).startswith("M")
        ):
            lev[i] = _UNUSABLE
        if c == _ZWJ:
            lev[i + 1] = _UNUSABLE
        if 0x1F1E6 <= c <= 0x1F1FF and i + 1 < n and 0x1F1E6 <= int(cp[i + 1]) <= 0x1F1FF:
            lev[i + 1] = _UNUSABLE
    lev[0] = lev[n] = _EDGE
    return lev


@functools.cache
def _token_lengths(enc: tiktoken.Encoding) -> npt.NDArray[np.int64]:
    """Byte length of every ordinary token id of ``enc`` (built once per encoding, ~0.1 s)."""
    lengths = np.zeros(enc.max_token_value + 1, dtype=np.int64)
    for token_bytes, rank in enc._mergeable_ranks.items():
        lengths[rank] = len(token_bytes)
    return lengths


def _pick(levels: npt.NDArray[np.int8], lo: int, hi: int, *, latest: bool) -> int | None:
    """The best boundary index in ``[lo, hi]``: highest level, latest (or earliest) among equals."""
    if hi < lo:
        return None
    window = levels[lo : hi + 1]
    best = int(window.max())
    if best < _TOKEN:
        return None
    hits = np.flatnonzero(window == best)
    return lo + int(hits[-1] if latest else hits[0])


def _token_spans(
    text: str, enc: tiktoken.Encoding, chunk_size: int, chunk_overlap: int
) -> list[tuple[int, int, str, int]]:
    """``(start, end, stripped_text, tokens)`` for each chunk of ``text``; offsets are characters."""
    stripped = text.strip()
    if not stripped:
        return []
    # The common case for a heading section: it fits in one chunk, so no boundary search. The length
    # test only skips a pointless encode of a long text (either path gives the same result).
    if len(stripped) <= 16 * chunk_size:
        count = len(enc.encode_ordinary(stripped))
        if count <= chunk_size:
            return [(0, len(text), stripped, count)]
    tokens = enc.encode_ordinary(text)
    n = len(tokens)
    data = text.encode("utf-8")
    lens = _token_lengths(enc)[np.asarray(tokens, dtype=np.int64)]
    byte_at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=byte_at[1:])
    lead = (np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80
    char_of_byte = np.zeros(len(data) + 1, dtype=np.int64)
    np.cumsum(lead, out=char_of_byte[1:])
    char_at = char_of_byte[byte_at]  # meaningful only where the boundary is clean
    clean = np.ones(n + 1, dtype=bool)
    clean[:n] = lead[byte_at[:n]]
    levels = np.where(clean, _char_levels(text)[char_at], _UNUSABLE).astype(np.int8)
    levels[0] = levels[n] = _EDGE

    # Starts of overlaps: sentence-or-better starts count as equal, so the earliest wins (max overlap).
    start_levels = np.minimum(levels, _SENTENCE)
    min_fill = max(chunk_size // 2, chunk_overlap + 1)
    spans: list[tuple[int, int, str, int]] = []
    s = 0
    while True:
        hi = s + chunk_size
        if hi >= n:
            e = n
        else:
            found = _pick(levels, s + min(min_fill, chunk_size), hi, latest=True)
            if found is None:
                found = _pick(levels, s + 1, hi, latest=True)
            if found is None:  # one character needs more than chunk_size tokens
                found = s + 1 + int(np.flatnonzero(levels[s + 1 :] >= _TOKEN)[0])
            e = found
        while True:
            a, b = int(char_at[s]), int(char_at[e])
            piece = text[a:b].strip()
            count = len(enc.encode_ordinary(piece)) if piece else 0
            if count <= chunk_size:
                break
            shorter = _pick(levels, s + 1, e - 1, latest=True)
            if shorter is None:
                break  # cannot cut earlier without splitting a character
            e = shorter
        if piece:
            spans.append((a, b, piece, count))
        if e >= n:
            return spans
        if chunk_overlap == 0:
            s = e
        else:
            # e itself is excluded: a chunk that ended at a paragraph would otherwise never overlap.
            nxt = _pick(start_levels, max(e - chunk_overlap, s + 1), e - 1, latest=False)
            s = nxt if nxt is not None else e


def split_text(
    text: str,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    encoding: str = DEFAULT_CHUNK_ENCODING,
) -> list[str]:
    """Split a string into overlapping token-bounded pieces (the chunker without a document).

    Args:
        text: The text to split.
        chunk_size: Maximum tokens per piece.
        chunk_overlap: Maximum tokens shared by consecutive pieces.
        encoding: The tiktoken encoding tokens are counted in.

    Raises:
        IngestUsageError: ``E_INGEST_INVALID_CHUNKING``: invalid sizes or encoding.
    """
    enc = validate_chunking(chunk_size, chunk_overlap, encoding)
    return [piece for _, _, piece, _ in _token_spans(text, enc, chunk_size, chunk_overlap)]


def _groups(doc: LoadedDocument) -> list[tuple[int, int, tuple[str, ...]]]:
    """``(start, end, heading_path)`` ranges of the document that chunks never cross."""
    if doc.kind not in ("markdown", "html"):
        return [(0, len(doc.text), ())] if doc.text else []
    groups: list[tuple[int, int, tuple[str, ...]]] = []
    first = offset = 0
    for i, section in enumerate(doc.sections):
        offset += len(section.text)
        # A heading with no body of its own (a title followed by a subheading) travels with what follows.
        _, _, body = section.text.partition("\n")
        bare = not body.strip().strip("=-").strip()  # nothing but a setext underline, if any
        if section.heading_path and bare and i < len(doc.sections) - 1:
            continue
        groups.append((first, offset, section.heading_path))
        first = offset
    return groups


def chunk_document(
    doc: LoadedDocument,
    *,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    chunk_overlap: int = DEFAULT_CHUNK_OVERLAP,
    encoding: str = DEFAULT_CHUNK_ENCODING,
    fallback_encodings: Sequence[str] = (),
    html_extractor: str = "turnkit",
) -> list[Chunk]:
    """Cut a loaded document into chunks of at most ``chunk_size`` tokens.

    Markdown and HTML chunks stay inside one heading section and carry its
    heading path; PDF chunks may span pages and carry their ``page_span``.

    Args:
        doc: The document, from :func:`load_document`.
        chunk_size: Maximum tokens per chunk.
        chunk_overlap: Maximum tokens shared by consecutive chunks of a section.
        encoding: The tiktoken encoding (``"cl100k_base"`` or ``"o200k_base"``).
        fallback_encodings: The fallback encodings the document needed (empty if it decoded without);
            part of the chunks' fingerprint, as is ``html_extractor``.
        html_extractor: The HTML extractor the document was read with.

    Returns:
        The chunks in document order, with deterministic ids.

    Raises:
        IngestUsageError: ``E_INGEST_INVALID_CHUNKING``: invalid sizes or encoding.
    """
    validate_chunking(chunk_size, chunk_overlap, encoding)
    fingerprint = document_fingerprint(
        file_hash=doc.content_hash,
        kind=doc.kind,
        source_uri=doc.source_uri,
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        encoding=encoding,
        fallback_encodings=fallback_encodings,
        html_extractor=html_extractor,
    )
    return chunks_of(doc, chunk_size, chunk_overlap, encoding, fingerprint)


def chunks_of(
    doc: LoadedDocument, chunk_size: int, chunk_overlap: int, encoding: str, fingerprint: str
) -> list[Chunk]:
    """`chunk_document` with its settings checked and its ``fingerprint`` already computed."""
    enc = get_encoding(encoding)
    text = doc.text
    pieces: list[tuple[int, int, str, int, tuple[str, ...]]] = []
    for g_start, g_end, path in _groups(doc):
        for a, b, piece, count in _token_spans(text[g_start:g_end], enc, chunk_size, chunk_overlap):
            pieces.append((g_start + a, g_start + b, piece, count, path))

    offsets = itertools.accumulate((len(s.text) for s in doc.sections), initial=0)
    pages = [
        (at, s.page) for at, s in zip(offsets, doc.sections, strict=False) if s.page is not None and s.text
    ]
    page_starts = [at for at, _ in pages]

    def page_at(pos: int) -> int:
        return pages[max(bisect.bisect_right(page_starts, pos) - 1, 0)][1]

    chunks: list[Chunk] = []
    for index, (a, b, piece, count, path) in enumerate(pieces):
        content_hash = hashlib.sha256(piece.encode()).hexdigest()
        # The span of the stripped text decides the pages, so edge whitespace never adds a page.
        lead = len(text[a:b]) - len(text[a:b].lstrip())
        span = None
        if page_starts:
            span = PageSpan(first_page=page_at(a + lead), last_page=page_at(a + lead + len(piece) - 1))
        chunks.append(
            Chunk(
                id=hashlib.sha256(f"{doc.source_uri}\n{index}\n{content_hash}".encode()).hexdigest()[:32],
                text=piece,
                index=index,
                count=len(pieces),
                start=a,
                end=b,
                token_count=count,
                content_hash=content_hash,
                heading_path=path,
                page_span=span,
                source_uri=doc.source_uri,
                source_display_name=doc.display_name,
                kind=doc.kind,
                mtime=doc.mtime,
                file_hash=doc.content_hash,
                fingerprint=fingerprint,
                front_matter=doc.front_matter,
            )
        )
    return chunks
