"""What a first run on a messy tree meets: grouped skips, gzip files, legacy encodings, failed first runs."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import FunctionEncoder, HashEncoder, create_vector_store
from turnkit.ingest import (
    DocumentLoadError,
    FileIssue,
    FileSkippedError,
    IngestProgress,
    chunk_document,
    ingest_sync,
    load_document,
)
from turnkit.ingest._report import SKIP_EXAMPLES


def _store(tmp_path: Path, encoder=None):
    return create_vector_store(str(tmp_path / "db"), encoder=encoder or HashEncoder(32), auto_optimize=None)


def _rows(vs, collection: str = "kb") -> dict[str, tuple[str | None, str]]:
    """Each stored chunk's document and fingerprint, by id."""
    got = vs(collection).select("document", "metadata").limit(10_000).search_sync()
    return {m.id: (m.document, m.metadata["ingest_fingerprint"]) for m in got}


# -- skips: counted per reason, a few examples kept, every one streamed -----------------------------


def test_skips_are_grouped_with_counts_and_few_examples(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    (root / "sub").mkdir(parents=True)
    for i in range(40):
        (root / "sub" / f"copyright{i:02}").write_text("x")
    for i in range(5):
        (root / f"img{i}.png").write_bytes(b"\x89PNG")
    (root / "big.md").write_text("# Big\n\n" + "words " * 400)
    (root / "empty.md").write_text("   \n")
    (root / "ok.md").write_text("# Ok\n\nText.\n")
    streamed: list[FileIssue] = []
    report = ingest_sync(
        root,
        store=_store(tmp_path),
        collection="kb",
        progress=False,
        max_file_size=1000,
        on_skip=streamed.append,
    )
    assert report.files_skipped == len(streamed) == 47
    assert report.files_seen == report.files_written + report.files_unchanged + 47 + len(report.errors)
    groups = {(g.reason, g.code): g.count for g in report.skip_groups}
    assert groups == {
        ("No loader for 'files without an extension'", "E_INGEST_UNSUPPORTED_FILE"): 40,
        ("No loader for '.png'", "E_INGEST_UNSUPPORTED_FILE"): 5,
        ("larger than the 1,000-byte limit", "E_INGEST_FILE_TOO_LARGE"): 1,
        ("no text to index", "E_INGEST_NO_TEXT"): 1,
    }
    assert [g.count for g in report.skip_groups] == [40, 5, 1, 1]  # the largest first
    # Only a few examples are kept per reason; the callback saw every file, each with its own detail.
    assert all(len(g.examples) == min(g.count, SKIP_EXAMPLES) for g in report.skip_groups)
    assert len(report.skipped) == SKIP_EXAMPLES * 2 + 2
    assert any(
        "(2,4" in i.reason or "bytes)" in i.reason for i in streamed if i.code == "E_INGEST_FILE_TOO_LARGE"
    )
    text = str(report)
    assert text.count("\n") == 5  # summary, heading, four groups: not one line per file
    assert "40  No loader for 'files without an extension' [E_INGEST_UNSUPPORTED_FILE]" in text
    assert "… 37 more" in text


def test_errors_come_in_full_each_hint_once(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    for i in range(25):  # more than the 20 the summary used to show
        (root / f"legacy{i:02}.txt").write_bytes("Café crème".encode("cp1252"))
    report = ingest_sync(root, store=_store(tmp_path), collection="kb", progress=False)
    assert len(report.errors) == 25 and {e.code for e in report.errors} == {"E_INGEST_DECODE_FAILED"}
    assert all("--fallback-encoding auto" in e.hint for e in report.errors)
    text = str(report)
    assert text.count("  error: ") == 25 and text.count("Hint:") == 1
    assert "--fallback-encoding auto" in text


# -- gzip ---------------------------------------------------------------------------------------------

_SECTION = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sections=st.lists(st.tuples(_SECTION, _SECTION), min_size=1, max_size=4), level=st.integers(1, 9))
def test_a_gzip_file_loads_as_its_plain_twin(
    tmp_path: Path, sections: list[tuple[str, str]], level: int
) -> None:
    text = "".join(f"# {title}\n\n{body}\n\n" for title, body in sections)
    plain = tmp_path / "guide.md"
    plain.write_text(text, encoding="utf-8")
    packed = tmp_path / "guide.md.gz"
    packed.write_bytes(gzip.compress(text.encode(), compresslevel=level))
    a, b = load_document(plain), load_document(packed)
    assert (b.kind, b.display_name) == ("markdown", "guide.md.gz")
    assert b.sections == a.sections and b.text == a.text
    assert b.source_uri.endswith("/guide.md.gz")
    strip = [
        (c.text, c.heading_path, c.start, c.end) for c in chunk_document(a, chunk_size=32, chunk_overlap=4)
    ]
    assert strip == [
        (c.text, c.heading_path, c.start, c.end) for c in chunk_document(b, chunk_size=32, chunk_overlap=4)
    ]


def test_gzip_text_is_ingested_with_its_own_name_and_kind(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md.gz").write_bytes(gzip.compress(b"# Guide\n\n## Install\n\nRun pip.\n"))
    (root / "notes.rst.gz").write_bytes(gzip.compress(b"Plain notes.\n"))
    (root / "NEWS.gz").write_bytes(gzip.compress(b"news"))  # nothing inside names a loader
    (root / "broken.txt.gz").write_bytes(b"\x1f\x8b\x08\x00not really gzip")
    vs = _store(tmp_path)
    report = ingest_sync(root, store=vs, collection="kb", progress=False)
    assert report.files_written == 2
    assert [(g.reason, g.count) for g in report.skip_groups] == [("No loader for '.gz'", 1)]
    # Compressed files whose inner name has no loader share that one reason (and its --ext hint).
    (root / "changelog.Debian.gz").write_bytes(gzip.compress(b"changes"))
    (root / "tool.py.gz").write_bytes(gzip.compress(b"print(1)"))
    again = ingest_sync(root, store=vs, collection="kb", progress=False)
    assert [(g.reason, g.count) for g in again.skip_groups] == [("No loader for '.gz'", 3)]
    (error,) = report.errors
    assert error.code == "E_INGEST_PARSE_FAILED" and "not a readable gzip file" in error.reason
    meta = {
        m.metadata["source_display_name"]: m.metadata
        for m in vs("kb").select("metadata").limit(9).search_sync()
    }
    assert meta["guide.md.gz"]["kind"] == "markdown" and meta["guide.md.gz"]["section"] == "Guide > Install"
    assert meta["notes.rst.gz"]["kind"] == "text"
    # Mapping .gz itself reads the rest as that kind, decompressed.
    again = ingest_sync(root, store=vs, collection="kb", progress=False, extensions={".gz": "text"})
    assert (again.files_written, again.files_unchanged, again.files_skipped) == (3, 2, 0)


def test_a_gzip_bomb_is_refused_without_being_held(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.txt.gz"
    squeeze = zlib.compressobj(1, zlib.DEFLATED, 31)  # 31: a gzip header and trailer
    with bomb.open("wb") as out:
        block = b" " * (1 << 20)
        for _ in range(32):  # 32 MiB of spaces in a few hundred KiB
            out.write(squeeze.compress(block))
        out.write(squeeze.flush())
    assert bomb.stat().st_size < 1 << 20
    tracemalloc.start()
    try:
        with pytest.raises(FileSkippedError) as info:
            load_document(bomb, max_file_size=2 << 20)
        assert info.value.code == "E_INGEST_FILE_TOO_LARGE"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "2,097,152-byte limit (once decompressed)" in info.value.reason  # type: ignore[attr-defined]
    assert peak < 8 << 20  # it stopped after the limit, far short of 32 MiB


def test_a_truncated_gzip_file_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "cut.md.gz"
    path.write_bytes(gzip.compress(b"# Title\n\n" + b"text " * 1000)[:-40])
    with pytest.raises(DocumentLoadError) as exc_info:
        load_document(path)
    assert exc_info.value.code == "E_INGEST_PARSE_FAILED"


# -- encodings -----------------------------------------------------------------------------------------

ZH = "如何在 Python 中逐行讀取檔案？這是一個常見的問題，答案是使用 for 迴圈。\n" * 3
FR = "Le café est très apprécié à Paris. Où est la gare ? Ça dépend de la météo.\n" * 2


def test_big5_is_refused_as_cp1252_and_detected_with_auto(tmp_path: Path) -> None:
    path = tmp_path / "zh.txt"
    path.write_bytes(ZH.encode("big5"))
    with pytest.raises(DocumentLoadError) as info:
        load_document(path, fallback_encodings=["cp1252"])  # cp1252 decodes these bytes, into mojibake
    assert info.value.code == "E_INGEST_DECODE_FAILED"
    assert "no fallback (cp1252) reads it as text" in info.value.reason  # type: ignore[attr-defined]
    assert "--fallback-encoding auto" in info.value.hint
    assert load_document(path, fallback_encodings=["auto"]).text == ZH
    assert load_document(path, fallback_encodings=["cp1252", "big5"]).text == ZH  # tried in order
    western = tmp_path / "fr.txt"
    western.write_bytes(FR.encode("cp1252"))
    assert load_document(western, fallback_encodings=["auto"]).text == FR


def test_fallbacks_change_only_the_files_that_need_them(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    root.mkdir()
    (root / "guide.md").write_text("# Guide\n\nUTF-8 text: naïve café.\n")
    (root / "page.html").write_text("<h1>Page</h1><p>ünïcödé</p>")
    (root / "legacy.txt").write_bytes(FR.encode("cp1252"))
    vs = _store(tmp_path)
    first = ingest_sync(root, store=vs, collection="kb", progress=False)
    assert (first.files_written, len(first.errors)) == (2, 1)
    utf8_rows = _rows(vs)
    for fallbacks, written in ((["cp1252"], 1), (["auto"], 1), (["auto"], 0), ([], 0)):
        report = ingest_sync(root, store=vs, collection="kb", progress=False, fallback_encodings=fallbacks)
        assert report.files_written == written, fallbacks
        assert report.files_unchanged == 2 + (written == 0 and bool(fallbacks))
        rows = _rows(vs)
        assert {k: v for k, v in rows.items() if k in utf8_rows} == utf8_rows  # never rewritten
    legacy = [doc for doc, _ in _rows(vs).values() if doc and "Paris" in doc]
    assert legacy == [FR.strip()]


# -- a first run that fails before writing ----------------------------------------------------------


def test_a_failed_first_run_leaves_no_empty_collection(tmp_path: Path) -> None:
    def broken(texts: list[str], kind: str) -> list[list[float]]:
        raise RuntimeError("the model is not installed")

    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    vs = _store(tmp_path, FunctionEncoder(broken, dimension=8, name="broken"))
    with pytest.raises(Exception, match="not installed"):
        ingest_sync(tmp_path / "a.md", store=vs, collection="kb", progress=False)
    assert not vs.has_collection_sync("kb")


def test_progress_is_reported_after_files_and_commits(tmp_path: Path) -> None:
    for i in range(6):
        (tmp_path / f"f{i}.md").write_text(f"# F{i}\n\nText {i}.\n")
    seen: list[IngestProgress] = []
    report = ingest_sync(
        tmp_path,
        store=_store(tmp_path),
        collection="kb",
        progress=False,
        batch_size=2,
        on_progress=seen.append,
    )
    assert seen[-1].files_done == seen[-1].files_total == 6
    assert (seen[-1].files_written, seen[-1].chunks_written) == (6, report.chunks_written) == (6, 6)
    committed = [p.chunks_written for p in seen]
    assert committed == sorted(committed) and {2, 4, 6} <= set(committed)


def test_the_printed_skips_stop_at_ten_reasons(tmp_path: Path) -> None:
    from turnkit.ingest._report import SKIP_LINES

    root = tmp_path / "docs"
    root.mkdir()
    (root / "a.md").write_text("# A\n\ntext\n")
    for i in range(SKIP_LINES + 3):
        for j in range(SKIP_LINES + 3 - i):  # reason i has fewer files than reason i - 1
            (root / f"f{j}.x{i}").write_text("x")
    report = ingest_sync(root, store=_store(tmp_path), collection="kb", progress=False)
    lines = report.skip_lines()
    assert len(lines) == 1 + SKIP_LINES + 1
    assert lines[-1].split() == ["6", "for", "3", "other", "reasons", "(--verbose", "lists", "every", "file)"]
    assert "'.x0'" in lines[1] and "'.x9'" in lines[SKIP_LINES]
