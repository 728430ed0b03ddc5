"""A newcomer's first hour, end to end through the command line, on a generated messy tree.

One story in order: ingest a tree holding what real folders hold (files no
loader reads, a FIFO, text that is not UTF-8, a gzip file, a PDF), then look
at what went in, search it, export it, delete some of it, and make the usual
mistakes (a wrong collection, a mistyped --uri, an encoder left set in the
shell, an unwritable place). Each step is checked by its exit status and the
lines it prints, as a user would read them.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
from pathlib import Path

import pytest

from turnkit.cli import EXIT_FAILURE, EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, main

from ..ingest.conftest import write_pdf

HAS_PDF = importlib.util.find_spec("pypdf") is not None


def messy_tree(root: Path) -> Path:
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "install.md").write_text(
        "# Install\n\n## Linux\n\nRun pip install turnkit on Linux.\n\n"
        "## Windows\n\nUse the Windows installer, then restart the shell.\n"
    )
    (root / "faq.txt").write_text("Refunds reach the original card within five business days.\n")
    (root / "about.html").write_text(
        "<html><body><h1>About</h1><p>The shop ships from Lyon.</p></body></html>"
    )
    # What a real folder also holds.
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    (root / "Makefile").write_text("all:\n\techo build\n")
    (root / "copyright").write_text("Copyright the authors.\n")
    os.mkfifo(root / "pipe.md")
    (root / "latin1.txt").write_bytes("Caf\xe9 cr\xe8me, d\xe9j\xe0 vu.\n".encode("latin-1"))
    (root / "changelog.txt.gz").write_bytes(gzip.compress(b"Version 2 adds gzip support.\n"))
    if HAS_PDF:
        write_pdf(root / "manual.pdf", [["The manual, page one."], ["Warranty terms on page two."]])
    return root


def turnkit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    """Run one command; return its exit status, its stdout lines and its stderr."""
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err


def test_the_first_hour(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, clean_environ: Path
) -> None:
    tree = messy_tree(clean_environ / "tree")
    db = ["--uri", "db"]
    chunks_wanted = 5 + (1 if HAS_PDF else 0)  # the gzip file is read; the two short PDF pages make one chunk

    # Ingest: the files no loader reads are skipped, the undecodable one is an error (exit 3).
    code, out, err = turnkit(capsys, "ingest", str(tree), *db, "--encoder", "hash", "--no-progress")
    assert code == EXIT_PARTIAL, err
    assert any(line.startswith("Database: db (collection 'docs', encoder turnkit-hash-64)") for line in out)
    # Skips come one line per reason with a count and examples; the error comes in full with its hint.
    assert "Skipped 4 file(s):" in out
    assert any(
        line.startswith("  2  No loader for 'files without an extension' [E_INGEST_UNSUPPORTED_FILE]: ")
        for line in out
    )
    assert not any(line.strip().startswith("skipped:") for line in out)
    error = next(i for i, line in enumerate(out) if "[E_INGEST_DECODE_FAILED]" in line)
    assert "latin1.txt: not valid UTF-8" in out[error] and "--fallback-encoding" in out[error + 1]

    # What went in: counts, a peek, and the files with their chunk counts.
    code, out, _ = turnkit(capsys, "count", *db)
    assert (code, out) == (EXIT_OK, [str(chunks_wanted)])
    code, out, _ = turnkit(capsys, "count", *db, "--filter", 'kind = "markdown"')
    assert (code, out) == (EXIT_OK, ["2"])
    code, out, _ = turnkit(capsys, "peek", *db, "-n", "2")
    assert code == EXIT_OK and out[-1] == f"(2 of {chunks_wanted} rows, in id order)"
    code, out, _ = turnkit(capsys, "collections", "files", "docs", *db)
    assert code == EXIT_OK
    listed = {line.split(maxsplit=1)[1]: int(line.split()[0]) for line in out[:-1]}
    assert listed["guides/install.md"] == 2 and listed["faq.txt"] == 1 and listed["about.html"] == 1
    assert listed["changelog.txt.gz"] == 1
    assert "latin1.txt" not in listed and "logo.png" not in listed and "pipe.md" not in listed
    if HAS_PDF:
        assert listed["manual.pdf"] == 1
    assert out[-1] == f"{len(listed)} files, {chunks_wanted} chunks in 'docs'."

    # A search; a flag of optional value before the question never takes the question as its value.
    code, out, _ = turnkit(capsys, "query", "refunds original card", *db, "--top-k", "1")
    assert code == EXIT_OK and out[0].startswith(" 1. ") and "faq.txt" in out[0]
    code, out, err = turnkit(capsys, "query", "--hybrid", "refunds original card", *db, "--top-k", "1")
    assert code == EXIT_OK and "faq.txt" in out[0], err
    code, out, err = turnkit(capsys, "query", *db, "--diversify", "refunds original card", "--top-k", "1")
    assert code == EXIT_OK and "faq.txt" in out[0], err
    if HAS_PDF:
        # A PDF hit says which pages it came from.
        code, out, _ = turnkit(capsys, "query", "warranty terms manual", *db, "--top-k", "1")
        assert code == EXIT_OK and "manual.pdf (pp. 1–2)" in out[0]

    # Export: every row once, JSON Lines on stdout; a Parquet file beside it.
    code, out, err = turnkit(capsys, "export", *db, "--no-vectors")
    assert code == EXIT_OK and err.strip() == f"Exported {chunks_wanted} rows of 'docs'."
    rows = [json.loads(line) for line in out]
    assert len({r["id"] for r in rows}) == chunks_wanted and [r["id"] for r in rows] == sorted(
        r["id"] for r in rows
    )
    if importlib.util.find_spec("pyarrow.parquet") is not None:
        code, out, _ = turnkit(capsys, "export", *db, "--format", "parquet", "-o", "docs.parquet")
        assert code == EXIT_OK and out == [
            f"Exported {chunks_wanted} rows of 'docs' to docs.parquet (parquet)."
        ]

    # Delete by filter: refused without a terminal or --yes, then done.
    code, _, err = turnkit(capsys, "delete", *db, "--filter", 'kind = "html"')
    assert code == EXIT_USAGE and "stdin is not a terminal" in err and "Add --yes" in err
    code, out, _ = turnkit(capsys, "delete", *db, "--filter", 'kind = "html"', "--yes")
    assert (code, out) == (EXIT_OK, ["Deleted 1 row from 'docs'."])

    # The usual mistakes, each answered in the user's terms.
    code, _, err = turnkit(capsys, "query", "refunds", *db, "-c", "doc")
    assert code == EXIT_USAGE and "Did you mean 'docs'? Collections: docs." in err
    code, _, err = turnkit(capsys, "query", "refunds", "--uri", "dbb")
    assert code == EXIT_USAGE
    assert f"There is no database at {str(clean_environ / 'dbb')!r} (the folder does not exist)" in err
    assert not (clean_environ / "dbb").exists()
    monkeypatch.setenv("TURNKIT_ENCODER", "hash:32")
    code, _, err = turnkit(capsys, "query", "refunds", *db)
    assert code == EXIT_USAGE and "[E_VECTOR_STORE_ENCODER_MISMATCH]" in err
    assert "from TURNKIT_ENCODER=hash:32 (no --encoder given)" in err and "Unset TURNKIT_ENCODER" in err
    monkeypatch.delenv("TURNKIT_ENCODER")
    code, _, err = turnkit(
        capsys, "ingest", str(tree), "--uri", str(tree / "faq.txt" / "db"), "--encoder", "hash"
    )
    assert code == EXIT_FAILURE and "[E_VECTOR_STORE_CONNECTION_FAILED]" in err
    assert "AWS_" not in err and "--storage-option" not in err

    # The undecodable file is read once the fallback is asked for.
    code, out, err = turnkit(capsys, "ingest", str(tree / "latin1.txt"), *db, "--fallback-encoding", "cp1252")
    assert code == EXIT_OK, err
    code, out, _ = turnkit(capsys, "count", *db)
    assert out == [str(chunks_wanted)]  # the html rows were deleted above, latin1.txt's chunk added
    chunks_wanted += 1

    # Re-running the ingest writes nothing new and keeps the same answer.
    code, _, err = turnkit(capsys, "ingest", str(tree), *db, "--no-progress", "--fallback-encoding", "cp1252")
    assert code == EXIT_OK, err
    code, out, _ = turnkit(capsys, "count", *db)
    assert out == [str(chunks_wanted)]
