"""`turnkit ingest` on a messy tree: grouped skips, --ext, --verbose, missing extras, SIGINT."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from turnkit.batteries.vector import create_vector_store
from turnkit.cli import EXIT_DEPENDENCY, EXIT_INTERRUPTED, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, main

from .._json_http import send_json, serving
from ..ingest.conftest import write_pdf
from .conftest import clean_env


def _messy(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    for i in range(30):
        (root / "sub" / f"copyright{i:02}").write_text("Copyright notice.\n")
    for i in range(4):
        (root / f"shot{i}.png").write_bytes(b"\x89PNG\r\n")
    (root / "guide.md").write_text("# Guide\n\n## Install\n\nRun pip install turnkit.\n")
    (root / "manual.adoc").write_text("= Manual\n\nAsciiDoc text.\n")
    (root / "notes.md.gz").write_bytes(gzip.compress(b"# Notes\n\n## Packed\n\nCompressed notes.\n"))
    (root / "menu.txt").write_bytes("Le café est très apprécié à Paris. Où est la gare ?\n".encode("cp1252"))
    os.mkfifo(root / "pipe.md")
    return root


def test_skips_are_one_line_per_reason_and_errors_end_with_their_hint(
    clean_environ: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _messy(clean_environ / "tree")
    code = main(["ingest", str(root), "--uri", "db", "--encoder", "hash", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == EXIT_PARTIAL, err
    lines = out.splitlines()
    assert len(lines) < 15  # not one line per skipped file
    assert lines[0].startswith("Ingested into 'docs'") and "36 skipped, 1 errors" in lines[0]
    assert lines[1] == "Skipped 36 file(s):"
    assert lines[2].startswith(
        "  30  No loader for 'files without an extension' [E_INGEST_UNSUPPORTED_FILE]: "
    )
    assert lines[2].endswith(", … 27 more")
    assert any(line.startswith("   4  No loader for '.png'") for line in lines)
    assert any("a named pipe (FIFO), not a regular file [E_INGEST_SPECIAL_FILE]" in line for line in lines)
    at = lines.index("1 file(s) could not be read:")
    assert "menu.txt: not valid UTF-8 at byte 6 [E_INGEST_DECODE_FAILED]" in lines[at + 1]
    assert lines[at + 2].startswith("    Hint: ") and "--fallback-encoding auto" in lines[at + 2]
    assert "List every skipped file with --verbose." in lines and lines[-1].startswith("Database: ")
    assert "--ext" in out
    assert "1 file(s) could not be read" in err

    # --verbose streams every skipped file; --ext reads an extension; auto reads the cp1252 file.
    flags = ["--verbose", "--ext", "ADOC", "--ext", ".text=none", "--fallback-encoding", "auto"]
    code = main(["ingest", str(root), "--uri", "db", "--no-progress", *flags])
    out, err = capsys.readouterr()
    assert code == EXIT_OK, err
    streamed = [line for line in out.splitlines() if line.startswith("  skipped: ")]
    assert len(streamed) == 35 and not any("manual.adoc" in line for line in streamed)
    assert "(2 written, 2 unchanged, 35 skipped, 0 errors" in out
    assert "List every skipped file" not in out
    vs = create_vector_store(str(clean_environ / "db"))
    meta = {
        m.metadata["source_display_name"]: m
        for m in vs("docs").select("document", "metadata").limit(9).search_sync()
    }
    assert set(meta) == {"guide.md", "notes.md.gz", "menu.txt", "manual.adoc"}
    assert meta["notes.md.gz"].metadata["section"] == "Notes > Packed"
    assert "très apprécié" in (meta["menu.txt"].document or "")

    bad = main(["ingest", str(root), "--uri", "db", "--ext", ".x=video"])
    assert (
        bad == EXIT_USAGE
        and "[E_CLI_USAGE] --ext '.x=video' is not .EXT or .EXT=KIND" in capsys.readouterr().err
    )


def test_json_reports_skip_groups_and_counts(clean_environ: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _messy(clean_environ / "tree")
    main(["ingest", str(root), "--uri", "db", "--encoder", "hash", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert report["files_skipped"] == 36 and len(report["skipped"]) == 3 + 3 + 1 + 1
    assert report["skip_groups"][0]["count"] == 30 and len(report["skip_groups"][0]["examples"]) == 3
    (error,) = report["errors"]
    assert error["code"] == "E_INGEST_DECODE_FAILED" and "--fallback-encoding" in error["hint"]


def test_a_missing_pdf_extra_exits_4_with_one_install_line(
    clean_environ: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = clean_environ / "tree"
    root.mkdir()
    for i in range(3):
        write_pdf(root / f"doc{i}.pdf", [[f"Page of document {i}."]])
    (root / "a.md").write_text("# A\n\nText.\n")
    monkeypatch.setitem(sys.modules, "pypdf", None)  # makes `import pypdf` raise ImportError
    code = main(["ingest", str(root), "--uri", "db", "--encoder", "hash", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == EXIT_DEPENDENCY
    assert out.count("[E_INGEST_DEPENDENCY_MISSING]") == 3
    assert (out + err).count("pip install 'turnkit[ingest]'") == 1
    assert "3 file(s) need an optional extra" in err


def test_a_missing_encoder_extra_exits_4_says_it_once_and_leaves_no_collection(
    clean_environ: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = clean_environ / "tree"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nText.\n")
    monkeypatch.setitem(sys.modules, "wordllama", None)
    code = main(["ingest", str(root), "--uri", "db", "--no-progress"])  # the default encoder
    err = capsys.readouterr().err
    assert code == EXIT_DEPENDENCY, err
    assert err.count("Hint:") == 1 and err.count("pip install 'turnkit[wordllama]'") == 1
    assert "[E_VECTOR_STORE_DRIVER_UNAVAILABLE]" in err
    assert create_vector_store(str(clean_environ / "db")).list_collections_sync() == []


# -- SIGINT -------------------------------------------------------------------------------------------


class _Embeddings(BaseHTTPRequestHandler):
    """An OpenAI-style /embeddings endpoint that holds its second request until released."""

    calls = 0
    held = threading.Event()
    release = threading.Event()

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).calls += 1
        if type(self).calls == 2:
            type(self).held.set()
            type(self).release.wait(60)
        rows = [
            {"index": i, "embedding": [b / 255 + 0.01 for b in hashlib.sha256(text.encode()).digest()[:8]]}
            for i, text in enumerate(body["input"])
        ]
        send_json(self, 200, {"data": rows})


@pytest.fixture
def endpoint() -> Iterator[str]:
    _Embeddings.calls = 0
    _Embeddings.held, _Embeddings.release = threading.Event(), threading.Event()
    with serving(_Embeddings) as url:
        try:
            yield url
        finally:
            _Embeddings.release.set()  # before the server waits for its handlers


def test_sigint_says_what_was_written_and_a_rerun_finishes(
    endpoint: str, clean_environ: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = clean_environ / "tree"
    root.mkdir()
    for i in range(12):
        (root / f"f{i:02}.md").write_text(f"# Note {i}\n\nThe text of note number {i}.\n")
    args = [
        "ingest",
        str(root),
        "--uri",
        "db",
        "--encoder",
        "openai:fake@8",
        "--batch-size",
        "4",
        "--no-progress",
    ]
    env = clean_env({"TURNKIT_OPENAI_BASE_URL": endpoint})
    # A shell that starts the tests in the background leaves SIGINT ignored, and exec keeps an
    # ignored signal ignored: the child would never see it. A handled one is reset to the default.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "turnkit.cli", *args],
            cwd=clean_environ,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, handler)
    lines: list[str] = []
    told = threading.Event()

    def read_stderr() -> None:
        assert child.stderr is not None
        with child.stderr:
            for line in child.stderr:
                lines.append(line)
                if line.startswith("turnkit: interrupted"):
                    told.set()
        told.set()  # the child is gone without saying it: the assertions below show what it said

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        # The second batch's request is being held: the first batch (4 files) has committed.
        assert _Embeddings.held.wait(120), lines
        child.send_signal(signal.SIGINT)
        # Let the request in flight return, as a real endpoint would, only once the child has said
        # what it wrote: on a busy machine an earlier answer can have the second batch committed
        # before the child runs its signal handler.
        assert told.wait(120), lines
        _Embeddings.release.set()
        child.wait(timeout=60)
    finally:
        child.kill()
        reader.join(60)
    err = "".join(lines)
    assert child.returncode == EXIT_INTERRUPTED, err
    assert "interrupted. Written to 'docs' so far: 4 file(s), 4 chunk(s)" in err
    assert "Run the same command again to finish" in err

    monkeypatch.setenv("TURNKIT_OPENAI_BASE_URL", endpoint)
    assert main([*args, "--json"]) == EXIT_OK
    rerun = json.loads(capsys.readouterr().out)
    assert rerun["files_unchanged"] >= 4 and rerun["files_written"] + rerun["files_unchanged"] == 12
    assert main(["ingest", str(root), "--uri", "clean", *args[4:], "--json"]) == EXIT_OK  # one whole run
    capsys.readouterr()

    def rows(db: str) -> dict[str, tuple[str | None, str]]:
        got = create_vector_store(str(clean_environ / db))("docs").select("document", "metadata").limit(99)
        return {m.id: (m.document, m.metadata["ingest_fingerprint"]) for m in got.search_sync()}

    assert rows("db") == rows("clean") and len(rows("db")) == 12
