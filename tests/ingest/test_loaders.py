import hashlib
import logging
import os
import re
import sys
from datetime import UTC

import pytest

from turnkit import ERROR_CODES, TurnkitError
from turnkit.ingest import (
    DocumentLoadError,
    IngestUsageError,
    chunk_document,
    load_document,
    source_uri_for,
)
from turnkit.ingest._loaders import DEFAULT_EXTENSIONS

MARKDOWN = """\
---
title: front matter
---
Intro before any heading.

# Guide

Welcome.

## Install

Run `pip install turnkit`.

```bash
# not a heading: inside a fence
pip install turnkit
```

### On Linux

Use a venv.

## Use [the API](https://example.com)

Call it.

Setext title
============

Under setext.

Sub setext
----------

Deep text.
"""

HTML = """\
<!DOCTYPE html>
<html><head><title>Hidden title</title><style>body { color: red }</style>
<script>var secret = "do not index";</script></head>
<body>
<noscript>enable javascript</noscript>
<h1>Manual</h1>
<p>First   paragraph
   spans lines &amp; has entities.</p>
<div>A div block.<br>After a break.</div>
<h2>Setup</h2>
<ul><li>one</li><li>two</li></ul>
<pre>  indented
    code</pre>
<template><p>template text</p></template>
<h2>Usage</h2><p>Use <b>bold</b> <i>words</i>.</p>
<table><tr><td>a</td><td>b</td></tr></table>
</body></html>
"""


def test_text_document(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"line one\r\nline two\r\n")
    doc = load_document(path)
    assert doc.kind == "text"
    assert doc.text == "line one\nline two\n"
    assert doc.source_uri == path.resolve().as_uri() == source_uri_for(path)
    assert doc.source_uri.startswith("file:///")
    assert doc.display_name == "notes.txt"
    assert doc.content_hash == hashlib.sha256(path.read_bytes()).hexdigest()
    assert doc.mtime.tzinfo is UTC
    assert doc.mtime.timestamp() == pytest.approx(os.stat(path).st_mtime)
    assert doc.page_count is None


def test_text_boms_and_display_name(tmp_path):
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfhello")
    (tmp_path / "u16.txt").write_bytes("héllo wörld".encode("utf-16"))
    assert load_document(tmp_path / "bom.txt").text == "hello"
    assert load_document(tmp_path / "u16.txt", display_name="Custom").text == "héllo wörld"
    assert load_document(tmp_path / "u16.txt", display_name="Custom").display_name == "Custom"


def test_source_uri_is_percent_encoded_and_resolved(tmp_path):
    folder = tmp_path / "with space"
    folder.mkdir()
    path = folder / "a b.md"
    path.write_text("x")
    link = tmp_path / "link.md"
    link.symlink_to(path)
    assert "%20" in source_uri_for(path)
    assert source_uri_for(link) == source_uri_for(path)


def test_markdown_heading_paths(tmp_path):
    path = tmp_path / "guide.md"
    path.write_text(MARKDOWN)
    doc = load_document(path)
    assert doc.kind == "markdown"
    # Front matter is metadata; the sections concatenate back to the rest of the file.
    assert doc.front_matter == {"title": "front matter"}
    assert doc.text == MARKDOWN.removeprefix("---\ntitle: front matter\n---\n")
    paths = [s.heading_path for s in doc.sections]
    assert paths == [
        (),
        ("Guide",),
        ("Guide", "Install"),
        ("Guide", "Install", "On Linux"),
        ("Guide", "Use the API"),
        ("Setext title",),
        ("Setext title", "Sub setext"),
    ]
    assert doc.sections[0].text.startswith("Intro before any heading.")
    install = doc.sections[2].text
    assert "# not a heading: inside a fence" in install
    assert doc.sections[5].text.startswith("Setext title\n====")


def test_markdown_without_headings_is_one_section(tmp_path):
    path = tmp_path / "plain.markdown"
    path.write_text("just text\n\n- a list\n---\n")
    doc = load_document(path)
    assert [s.heading_path for s in doc.sections] == [()]


def test_html_visible_text_and_headings(tmp_path):
    path = tmp_path / "page.html"
    path.write_text(HTML)
    doc = load_document(path)
    assert doc.kind == "html"
    text = doc.text
    for hidden in ("Hidden title", "color: red", "do not index", "enable javascript", "template text"):
        assert hidden not in text
    assert "First paragraph spans lines & has entities." in text
    assert "A div block.\nAfter a break." in text
    assert "one\ntwo" in text
    assert "  indented\n    code" in text  # pre keeps its whitespace
    assert "Use bold words." in text
    assert "a b" in text
    assert "\n\n\n" not in text
    assert [s.heading_path for s in doc.sections] == [("Manual",), ("Manual", "Setup"), ("Manual", "Usage")]
    assert doc.sections[0].text.startswith("Manual\n\nFirst paragraph")


def test_html_declared_charset(tmp_path):
    path = tmp_path / "legacy.htm"
    path.write_bytes('<meta charset="iso-8859-1"><p>café crème</p>'.encode("latin-1"))
    assert load_document(path).text == "café crème"


def test_pdf_text_per_page(tmp_path, make_pdf):
    path = make_pdf(
        tmp_path / "report.pdf",
        [["Alpha page one.", "Second line (with parens)."], ["Beta page two."], [], ["Delta page four."]],
    )
    doc = load_document(path)
    assert doc.kind == "pdf"
    assert doc.page_count == 4
    pages = {s.page: s.text for s in doc.sections}
    assert pages[1].startswith("Alpha page one.\nSecond line (with parens).")
    assert "Beta page two." in pages[2]
    assert pages[3] == ""
    assert pages[4] == "Delta page four."


@pytest.mark.parametrize(
    ("name", "data", "error", "code", "reason"),
    [
        pytest.param(
            "bad.txt",
            b"caf\xe9 au lait",
            DocumentLoadError,
            "E_INGEST_DECODE_FAILED",
            "not valid UTF-8 at byte 3",
            id="latin1",
        ),
        pytest.param(
            "bin.md",
            b"\x00\x01\x02binary",
            DocumentLoadError,
            "E_INGEST_DECODE_FAILED",
            "looks binary",
            id="binary",
        ),
        pytest.param(
            "bad.html",
            b"<p>\xff\xfe\xfa</p>",
            DocumentLoadError,
            "E_INGEST_DECODE_FAILED",
            "not valid UTF-8",
            id="html",
        ),
        pytest.param(
            "bad.pdf",
            b"%PDF-1.4\nthis is not a pdf",
            DocumentLoadError,
            "E_INGEST_PARSE_FAILED",
            "not a readable PDF",
            id="pdf",
        ),
        pytest.param(
            "empty.pdf", b"", DocumentLoadError, "E_INGEST_PARSE_FAILED", "not a readable PDF", id="empty-pdf"
        ),
    ],
)
def test_unreadable_files_raise_with_path_and_reason(tmp_path, name, data, error, code, reason):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(error) as info:
        load_document(path)
    assert info.value.code == code
    assert reason in info.value.reason
    assert info.value.path == str(path)
    assert str(path) in str(info.value)
    assert info.value.code.startswith("E_INGEST_")


def test_missing_and_broken_symlink(tmp_path):
    with pytest.raises(DocumentLoadError, match="No such file") as exc_info:
        load_document(tmp_path / "missing.txt")
    assert exc_info.value.code == "E_INGEST_READ_FAILED"
    link = tmp_path / "dangling.md"
    link.symlink_to(tmp_path / "nowhere.md")
    with pytest.raises(DocumentLoadError) as info:
        load_document(link)
    assert info.value.code == "E_INGEST_READ_FAILED"


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="root reads files regardless of mode bits"
)
def test_permission_denied(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("x")
    path.chmod(0)
    try:
        with pytest.raises(DocumentLoadError, match="Permission denied") as exc_info:
            load_document(path)
        assert exc_info.value.code == "E_INGEST_READ_FAILED"
    finally:
        path.chmod(0o600)


def test_unknown_extension_and_overrides(tmp_path):
    path = tmp_path / "notes.adoc"
    path.write_text("= Title\n\nbody")
    with pytest.raises(IngestUsageError) as info:
        load_document(path)
    assert info.value.code == "E_INGEST_UNSUPPORTED_FILE"
    assert "extensions=" in info.value.hint
    assert load_document(path, extensions={".ADOC": "text"}).kind == "text"
    assert load_document(path, kind="markdown").kind == "markdown"
    with pytest.raises(IngestUsageError) as exc_info:
        load_document(tmp_path / "x.md", extensions={".md": None})
    assert exc_info.value.code == "E_INGEST_UNSUPPORTED_FILE"
    with pytest.raises(IngestUsageError) as exc_info:
        load_document(path, extensions={"adoc": "text"})
    assert exc_info.value.code == "E_INGEST_INVALID_OPTION"
    with pytest.raises(IngestUsageError) as exc_info:
        load_document(path, extensions={".adoc": "word"})  # type: ignore[dict-item]
    assert exc_info.value.code == "E_INGEST_INVALID_OPTION"
    assert DEFAULT_EXTENSIONS[".md"] == "markdown"


def test_pdf_without_pypdf(tmp_path, make_pdf, monkeypatch):
    path = make_pdf(tmp_path / "a.pdf", [["text"]])
    monkeypatch.setitem(sys.modules, "pypdf", None)  # makes `import pypdf` raise ImportError
    with pytest.raises(IngestUsageError) as info:
        load_document(path)
    assert info.value.code == "E_INGEST_DEPENDENCY_MISSING"
    assert "turnkit[ingest]" in info.value.hint


def test_error_codes_are_registered_and_stable():
    from turnkit.ingest import _errors

    carried = {name: list(getattr(_errors, name).hints) for name in _errors.__all__}
    assert carried == {
        "DocumentLoadError": [
            "E_INGEST_LOAD_FAILED",
            "E_INGEST_READ_FAILED",
            "E_INGEST_DECODE_FAILED",
            "E_INGEST_PARSE_FAILED",
        ],
        "FileSkippedError": [
            "E_INGEST_FILE_SKIPPED",
            "E_INGEST_SPECIAL_FILE",
            "E_INGEST_FILE_TOO_LARGE",
            "E_INGEST_EXTERNAL_SYMLINK",
        ],
        "IngestUsageError": [
            "E_INGEST_USAGE",
            "E_INGEST_INVALID_CHUNKING",
            "E_INGEST_INVALID_OPTION",
            "E_INGEST_UNSUPPORTED_FILE",
            "E_INGEST_DEPENDENCY_MISSING",
        ],
    }
    for name, codes in carried.items():
        assert getattr(_errors, name).code == codes[0]
        for code in codes:
            assert ERROR_CODES[code] is getattr(_errors, name)
        assert issubclass(getattr(_errors, name), TurnkitError)


def test_errors_pickle(tmp_path):
    import pickle

    err = DocumentLoadError("Cannot decode 'x'.", code="E_INGEST_DECODE_FAILED", path="x", reason="bad")
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.path, again.reason, again.code) == (DocumentLoadError, "x", "bad", err.code)
    assert again.code == "E_INGEST_DECODE_FAILED"


def test_public_api_all_is_sorted_and_complete():
    import turnkit.ingest as ingest

    assert ingest.__all__ == sorted(ingest.__all__)
    public = {n for n in vars(ingest) if not n.startswith("_") and n not in {"annotations"}}
    modules = {n for n in public if type(getattr(ingest, n)).__name__ == "module"}
    assert set(ingest.__all__) == public - modules


def test_pdf_lone_surrogates_become_replacement_characters(tmp_path, make_pdf):
    # A broken ToUnicode map makes pypdf return lone surrogates, which cannot be stored as UTF-8.
    path = make_pdf(tmp_path / "broken-map.pdf", [["AB hello"]], to_unicode={"A": "D800"})
    doc = load_document(path)
    assert "\ufffd" in doc.text and "hello" in doc.text
    assert doc.text.encode("utf-8")  # no lone surrogate left
    chunks = chunk_document(doc)
    assert len(chunks) == 1 and "\ufffd" in chunks[0].text


def test_declared_charset_lone_surrogates_become_replacement_characters(tmp_path):
    path = tmp_path / "odd.html"
    path.write_bytes(
        b'<meta charset="unicode-escape"><p>a\\ud800b \xff</p>'
    )  # not UTF-8: the charset decodes
    assert load_document(path).text == "a\ufffdb \xff"


def test_pypdf_log_is_captured_not_printed(tmp_path, make_pdf, caplog):
    caplog.set_level(logging.DEBUG)
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"%PDF-1.4 this is not really a pdf")
    with pytest.raises(DocumentLoadError) as info:
        load_document(bad)
    assert info.value.code == "E_INGEST_PARSE_FAILED"
    assert "EOF marker not found" in info.value.reason  # pypdf's warning explains the failure
    bad_xref = tmp_path / "bad-xref.pdf"
    data = make_pdf(tmp_path / "ok.pdf", [["Readable text."]]).read_bytes()
    bad_xref.write_bytes(re.sub(rb"startxref\n\d+", b"startxref\n7", data))
    assert load_document(bad_xref).text == "Readable text."  # pypdf repairs it, and says so only to us
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]
    pypdf_logger = logging.getLogger("pypdf")
    assert pypdf_logger.propagate and not pypdf_logger.handlers  # left as it was found
    logging.getLogger("pypdf._reader").warning("outside parsing")  # other uses of pypdf still log
    assert [r.getMessage() for r in caplog.records if r.name.startswith("pypdf")] == ["outside parsing"]


def test_html_hidden_elements_are_not_indexed(tmp_path):
    path = tmp_path / "hidden.html"
    path.write_text(
        "<body><h1>Page</h1><p>Shown one.</p>"
        "<div hidden><div>nested secret</div>secret tail</div>"
        '<p style="color: red; DISPLAY: none">styled secret</p>'
        '<span style="visibility:hidden">invisible secret</span>'
        '<ul><li aria-hidden="true">icon secret<ul><li>deep secret</li></ul></li><li>Shown two.</li></ul>'
        "<h2 hidden>Secret heading</h2><p hidden>open secret<p>Shown three."
        '<div><p hidden>unclosed secret</div><p style="display:block">Shown four.</p>'
        '<img hidden alt="x"><div hidden="until-found">Shown five.</div>'
        "<section hidden>stray</span>end tag secret</section></body>"
    )
    doc = load_document(path)
    assert "secret" not in doc.text.lower()
    for n in ("one", "two", "three", "four", "five"):
        assert f"Shown {n}." in doc.text
    assert [s.heading_path for s in doc.sections] == [("Page",)]
