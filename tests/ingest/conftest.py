"""Shared helpers for the ingest tests: real files of each type, written into tmp_path."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

_counter = itertools.count()


def _pdf_escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _to_unicode_cmap(mapping: dict[str, str]) -> bytes:
    pairs = "\n".join(f"<{ord(char):02X}> <{utf16}>" for char, utf16 in mapping.items())
    return (
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n/CMapName /T def\n/CMapType 2 def\n"
        f"1 begincodespacerange\n<00> <FF>\nendcodespacerange\n{len(mapping)} beginbfchar\n{pairs}\n"
        "endbfchar\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend"
    ).encode()


def write_pdf(path: Path, pages: list[list[str]], *, to_unicode: dict[str, str] | None = None) -> Path:
    """Write a minimal valid PDF: one Helvetica text object per page, one line per entry.

    pypdf cannot lay out text, so the tests build the file by hand: catalog,
    page tree, pages with content streams, a font, and an exact xref table.
    ``to_unicode`` gives the font a ToUnicode map (character → UTF-16 hex), which
    is what text extraction reads, e.g. ``{"A": "D800"}`` for a broken one.
    """
    objects: list[bytes] = []
    font_id = 3 + 2 * len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    for i, lines in enumerate(pages):
        content_id = 4 + 2 * i
        objects.append(
            (
                f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                f"/Resources << /Font << /F1 {font_id} 0 R >> >> /Contents {content_id} 0 R >>"
            ).encode()
        )
        ops = ["BT", "/F1 12 Tf", "14 TL", "72 720 Td"]
        for n, line in enumerate(lines):
            ops.append(("" if n == 0 else "T* ") + f"({_pdf_escape(line)}) Tj")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1")
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    if to_unicode is None:
        objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    else:
        objects.append(
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode %d 0 R >>" % (font_id + 1)
        )
        cmap = _to_unicode_cmap(to_unicode)
        objects.append(b"<< /Length %d >>\nstream\n" % len(cmap) + cmap + b"\nendstream")
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    path.write_bytes(bytes(out))
    return path


@pytest.fixture
def make_pdf():
    return write_pdf


@pytest.fixture
def store(tmp_path):
    from turnkit.batteries.vector import HashEncoder, create_vector_store

    # A real LanceDB directory per test: the embedded default, as users run it.
    return create_vector_store(uri=str(tmp_path / "db"), encoder=HashEncoder(32), auto_optimize=None)


@pytest.fixture
def collection() -> str:
    return f"ingest{next(_counter)}"
