"""Ingest options: include/exclude patterns, .gitignore, fallback encodings, front matter, the shown rate."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_retrievable_callbacks, create_vector_store
from turnkit.ingest import (
    IngestReport,
    IngestUsageError,
    ingest_sync,
    load_document,
)


def _store(tmp_path: Path):
    return create_vector_store(str(tmp_path / "db"), encoder=HashEncoder(32), auto_optimize=None)


def _names(vs, collection: str = "kb") -> set[str]:
    rows = vs(collection).select("metadata").limit(10_000).search_sync()
    return {r.metadata["source_display_name"] for r in rows}


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


# -- include / exclude / .gitignore ---------------------------------------------------------------

TREE = {
    ".gitignore": "*.log\nbuild/\n!keep.log\n# a comment\n",
    "guide.md": "# Guide\n\nRead me.\n",
    "notes.txt": "plain notes",
    "debug.log": "noise",
    "keep.log": "kept on purpose",
    "build/out.md": "generated",
    "sub/.gitignore": "secret.md\n/local.txt\n",
    "sub/secret.md": "do not index",
    "sub/deeper/secret.md": "nor this (a bare name matches at any depth below)",
    "sub/local.txt": "anchored to sub/",
    "sub/deeper/local.txt": "not anchored here: read",
    "sub/page.md": "# Page\n\nKept.\n",
    "drafts/idea.md": "half an idea",
}


def test_gitignore_nested_negation_and_anchoring(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs", TREE)
    vs = _store(tmp_path)
    report = ingest_sync(root, store=vs, collection="kb", progress=False, extensions={".log": "text"})
    assert _names(vs) == {
        "guide.md",
        "notes.txt",
        "keep.log",
        "sub/deeper/local.txt",
        "sub/page.md",
        "drafts/idea.md",
    }
    # debug.log, sub/secret.md, sub/deeper/secret.md and sub/local.txt; build/ is not even entered.
    assert report.files_ignored == 4
    assert report.files_seen == 6
    assert "4 ignored by patterns" in str(report)


def test_include_exclude_and_no_gitignore(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs", TREE)
    vs = _store(tmp_path)
    ingest_sync(root, store=vs, collection="kb", progress=False, include=["*.md"], exclude=["drafts/"])
    assert _names(vs) == {"guide.md", "sub/page.md"}
    vs2 = _store(tmp_path / "two")
    ingest_sync(root, store=vs2, collection="kb", progress=False, gitignore=False, include=["sub/**"])
    assert _names(vs2) == {
        "sub/secret.md",
        "sub/deeper/secret.md",
        "sub/local.txt",
        "sub/deeper/local.txt",
        "sub/page.md",
    }


def test_a_file_named_directly_is_read_whatever_the_patterns(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs", TREE)
    vs = _store(tmp_path)
    ingest_sync(root / "drafts" / "idea.md", store=vs, collection="kb", progress=False, exclude=["*.md"])
    assert _names(vs) == {"idea.md"}


def test_prune_removes_files_left_out_by_new_patterns(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs", TREE)
    vs = _store(tmp_path)
    ingest_sync(root, store=vs, collection="kb", progress=False)
    assert "drafts/idea.md" in _names(vs)
    report = ingest_sync(root, store=vs, collection="kb", progress=False, exclude=["drafts/"], prune=True)
    assert report.files_pruned == 1 and "drafts/idea.md" not in _names(vs)
    again = ingest_sync(root, store=vs, collection="kb", progress=False, exclude=["drafts/"], prune=True)
    assert again.files_written == 0 and again.files_pruned == 0


@pytest.mark.parametrize("bad", [[""], ["  "], [3]])
def test_bad_patterns_are_refused_up_front(tmp_path: Path, bad: list[object]) -> None:
    with pytest.raises(IngestUsageError) as info:
        ingest_sync(tmp_path, store=_store(tmp_path), collection="kb", progress=False, include=bad)  # type: ignore[arg-type]
    assert info.value.code == "E_INGEST_INVALID_OPTION" and info.value.hint


# -- fallback encodings ---------------------------------------------------------------------------


def test_fallback_encodings_read_legacy_text(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "menu.txt").write_bytes("Café crème – 3 €".encode("cp1252"))
    vs = _store(tmp_path)
    plain = ingest_sync(root, store=vs, collection="kb", progress=False)
    (error,) = plain.errors
    assert error.code == "E_INGEST_DECODE_FAILED" and "not valid UTF-8 at byte 3" in error.reason
    report = ingest_sync(root, store=vs, collection="kb", progress=False, fallback_encodings=["cp1252"])
    assert report.files_written == 1 and report.ok
    (row,) = vs("kb").select("document").limit(5).search_sync()
    assert row.document == "Café crème – 3 €"
    # Same bytes, same fallbacks: nothing to do; other fallbacks: read again.
    assert (
        ingest_sync(
            root, store=vs, collection="kb", progress=False, fallback_encodings=["cp1252"]
        ).files_unchanged
        == 1
    )
    # latin-1 decodes these bytes too, but into C1 control characters: refused, not stored.
    refused = ingest_sync(root, store=vs, collection="kb", progress=False, fallback_encodings=["latin-1"])
    (error,) = refused.errors
    assert error.code == "E_INGEST_DECODE_FAILED" and "no fallback (iso8859-1) reads it" in error.reason
    (row,) = vs("kb").select("document").limit(5).search_sync()
    assert row.document == "Café crème – 3 €"  # a file that fails keeps its chunks


def test_a_file_no_encoding_reads_names_each_one_tried(tmp_path: Path) -> None:
    path = tmp_path / "odd.txt"
    path.write_bytes(b"\x81\x8d\x8f\x90\x9d")  # undefined in cp1252, and not UTF-8
    with pytest.raises(Exception) as info:
        load_document(path, fallback_encodings=["cp1252", "shift_jis"])
    reason = info.value.reason  # type: ignore[attr-defined]
    assert "not valid UTF-8 at byte 0, and no fallback (cp1252, shift_jis) reads it as text" in reason


@pytest.mark.parametrize("name", ["no-such-codec", "utf-16", "utf_32"])
def test_unusable_fallback_encodings_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(IngestUsageError) as info:
        ingest_sync(
            tmp_path, store=_store(tmp_path), collection="kb", progress=False, fallback_encodings=[name]
        )
    assert info.value.code == "E_INGEST_INVALID_OPTION"
    assert name in info.value.message and info.value.hint


# -- front matter ----------------------------------------------------------------------------------

FRONT = """---
title: Refund policy
tags: [billing, refunds]
published: 2024-05-01
source: official-policy.md
---
# Refunds

Refunds reach the card within five business days.
"""


def test_front_matter_is_metadata_not_a_chunk(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs", {"refunds.md": FRONT})
    vs = _store(tmp_path)
    ingest_sync(root, store=vs, collection="kb", progress=False)
    (row,) = vs("kb").select("document", "metadata").limit(5).search_sync()
    assert "title:" not in row.document and row.document.startswith("# Refunds")
    assert row.metadata["front_matter"] == {
        "title": "Refund policy",
        "tags": ["billing", "refunds"],
        "published": "2024-05-01",
        "source": "official-policy.md",
    }
    # Filterable like any metadata.
    hits = vs("kb").where("metadata.front_matter.title", "Refund policy").select("id").limit(5).search_sync()
    assert len(hits) == 1
    # It cannot pose as the glue's own keys: the cited source is still the file.
    callbacks = create_vector_retrievable_callbacks(store=vs, collection="kb", trust_tier="third-party")
    glue = callbacks.glue
    record = glue.to_retrievable(vs("kb").select("id", "document", "metadata").limit(1).search_sync()[0])
    assert record.source == "refunds.md § Refunds"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "head",
    [
        "---\ntitle: [unclosed\n---\n",  # malformed YAML
        "---\n- a list\n- not a mapping\n---\n",
        "---\n"
        + "".join(
            f"l{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]\n" for i in range(1, 12)
        ).replace("*a0, *a0, *a0, *a0", "x")
        + "---\n",
    ],
    ids=["malformed", "list", "alias-bomb"],
)
def test_front_matter_that_is_not_a_small_mapping_stays_text(tmp_path: Path, head: str) -> None:
    path = tmp_path / "doc.md"
    path.write_text(head + "Body text.\n")
    started = time.perf_counter()
    doc = load_document(path)
    assert time.perf_counter() - started < 10  # the alias bomb is never expanded
    assert doc.front_matter == {} and doc.text.startswith("---")


# -- the rate shown ---------------------------------------------------------------------------------


def test_short_runs_show_no_rate() -> None:
    short = IngestReport(
        collection="kb",
        files_seen=1,
        files_written=1,
        files_unchanged=0,
        files_pruned=0,
        chunks_written=3,
        chunks_deleted=0,
        elapsed_s=0.02,
    )
    assert not short.rate_is_meaningful and "/s" not in str(short)
    long = IngestReport(
        collection="kb",
        files_seen=40,
        files_written=40,
        files_unchanged=0,
        files_pruned=0,
        chunks_written=500,
        chunks_deleted=0,
        elapsed_s=2.0,
    )
    assert long.rate_is_meaningful and "(250.0/s)" in str(long)


# -- the command line --------------------------------------------------------------------------------


def test_cli_ingest_options(tmp_path: Path) -> None:
    root = _tree(tmp_path / "docs", {**TREE, "legacy.txt": ""})
    (root / "legacy.txt").write_bytes("Grüße".encode("cp1252"))
    argv = [
        sys.executable,
        "-m",
        "turnkit.cli",
        "ingest",
        str(root),
        "--uri",
        str(tmp_path / "db"),
        "-c",
        "kb",
    ]
    argv += [
        "--encoder",
        "hash:32",
        "--json",
        "--exclude",
        "drafts/",
        "--include",
        "*.md",
        "--include",
        "*.txt",
    ]
    argv += ["--fallback-encoding", "cp1252"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["errors"] == [] and report["files_ignored"] > 0
    assert report["settings"]["fallback_encodings"] == ["cp1252"]
    vs = create_vector_store(str(tmp_path / "db"), encoder=HashEncoder(32), auto_optimize=None)
    assert _names(vs) == {"guide.md", "notes.txt", "legacy.txt", "sub/deeper/local.txt", "sub/page.md"}


# -- HTML site chrome ---------------------------------------------------------------------------------

PAGE = """<!doctype html><html><head><title>Refunds</title></head><body>
<a class="skip-link" href="#main">Skip to content</a>
<header><div>ACME Docs</div>
<nav><ul><li><a href="/">Home</a></li><li><a href="/blog">Blog</a></li></ul></nav></header>
<div role="main" id="main"><div class="wrap"><p>Intro paragraph of the page.</p></div>
<header><h1>Refunds</h1><p>By Ann Example</p></header>
<article><h2>How long</h2><p>Refunds reach the card within five business days.</p>
<footer>Updated in May</footer></article>
<aside>Related: shipping rates</aside></div>
<aside class="sidebar">Popular posts this week</aside>
<div role="contentinfo"><p>Copyright 2024 ACME</p></div>
<footer><p>Privacy policy and terms</p></footer>
</body></html>"""


def test_html_site_chrome_is_dropped_and_content_chrome_kept(tmp_path: Path) -> None:
    path = tmp_path / "page.html"
    path.write_text(PAGE)
    text = load_document(path).text
    for chrome in ("Skip to content", "ACME Docs", "Home", "Blog", "Popular posts", "Copyright", "Privacy"):
        assert chrome not in text
    # A header, footer or aside inside main/article/section belongs to the content.
    for content in ("Intro paragraph", "By Ann Example", "five business days", "Updated in May", "Related:"):
        assert content in text
    assert [s.heading_path for s in load_document(path).sections][-1] == ("Refunds", "How long")


SOUP = """<html><body><div class="navbar"><ul><li><a href="/">Home page link</a></li>
<li><a href="/forum">Community forum link</a></li></ul></div>
<div class="content"><div class="post"><h1>Refunds</h1>
<p>Refunds reach the original card within five business days of the return being received.</p>
<p>Store credit is issued at once and never expires, whatever the amount of the purchase.</p></div></div>
<div class="site-footer"><p>Copyright 2001-2024 Example Foundation, all rights reserved.</p></div>
</body></html>"""


def test_trafilatura_extractor_drops_chrome_marked_only_by_class(tmp_path: Path) -> None:
    pytest.importorskip("trafilatura")
    path = tmp_path / "soup.html"
    path.write_text(SOUP)
    assert "Community forum link" in load_document(path).text  # turnkit keeps class-only chrome
    doc = load_document(path, html_extractor="trafilatura")
    assert "five business days" in doc.text and "never expires" in doc.text
    assert "Community forum link" not in doc.text and "Copyright" not in doc.text
    vs = _store(tmp_path)
    report = ingest_sync(path, store=vs, collection="kb", progress=False, html_extractor="trafilatura")
    assert report.settings["html_extractor"] == "trafilatura" and report.files_written == 1
    # Another extractor is another fingerprint: switching back rewrites the file.
    assert ingest_sync(path, store=vs, collection="kb", progress=False).files_written == 1


def test_unknown_or_missing_html_extractor(tmp_path: Path) -> None:
    with pytest.raises(IngestUsageError) as exc_info:
        ingest_sync(tmp_path, store=_store(tmp_path), collection="kb", html_extractor="readability")  # type: ignore[arg-type]
    assert exc_info.value.code == "E_INGEST_INVALID_OPTION"
    # Without the extra installed (an import that fails for real in a fresh interpreter).
    code = (
        "import sys; sys.modules['trafilatura'] = None\n"
        "from turnkit.ingest._html import check_html_extractor\n"
        "try:\n    check_html_extractor('trafilatura')\n"
        "except Exception as exc:\n    print(exc.code, exc.hint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.startswith("E_INGEST_DEPENDENCY_MISSING") and "turnkit[html]" in out.stdout
