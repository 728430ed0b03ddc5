"""The value types loaders produce: :class:`LoadedDocument` and its :class:`Section` list."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["DocumentKind", "LoadedDocument", "Section"]

DocumentKind = Literal["text", "markdown", "html", "pdf"]
"""The loaders turnkit ships: plain text, Markdown, HTML (visible text) and PDF (text per page)."""


@dataclass(frozen=True, kw_only=True)
class Section:
    """A contiguous piece of a document's text.

    Markdown and HTML documents are cut at their headings; a PDF has one section
    per page; plain text has a single section. The sections of a document
    concatenate to :attr:`LoadedDocument.text`.
    """

    text: str
    """The section's text, headings included (sections concatenate back to the document)."""
    heading_path: tuple[str, ...] = ()
    """The titles of the enclosing headings, outermost first (Markdown and HTML)."""
    page: int | None = None
    """The 1-indexed page number (PDF), else ``None``."""


@dataclass(frozen=True, kw_only=True)
class LoadedDocument:
    """One file, read and turned into text.

    Attributes:
        source_uri: The file's absolute ``file://`` URI (see :func:`source_uri_for`):
            the key that ties stored chunks to their file.
        display_name: A short human name: the path relative to the ingested
            folder, or the file name.
        kind: Which loader read it.
        sections: The text, cut at headings (Markdown, HTML) or pages (PDF).
        mtime: The file's modification time (timezone-aware, UTC).
        content_hash: ``sha256`` of the file's bytes (hex); unchanged bytes mean
            an unchanged document.
        size: The file's size in bytes.
        front_matter: A Markdown file's YAML front matter (JSON values), else empty.
    """

    source_uri: str
    display_name: str
    kind: DocumentKind
    sections: tuple[Section, ...]
    mtime: datetime
    content_hash: str
    size: int = 0
    front_matter: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    @cached_property
    def text(self) -> str:
        """The whole document's text: its sections, concatenated."""
        return "".join(s.text for s in self.sections)

    @property
    def page_count(self) -> int | None:
        """The number of pages of a PDF, else ``None``."""
        pages = [s.page for s in self.sections if s.page is not None]
        return max(pages) if pages else None
