"""`turnkit ingest`, `query`, `stats` and `optimize` against a real LanceDB in a temp dir."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from turnkit.batteries.vector import create_vector_store
from turnkit.cli import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE, main

from ..ingest.conftest import write_pdf
from .conftest import Run


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any, str]:
    """Run `main([...])` in-process with --json; return (status, parsed stdout, stderr)."""
    code = main([*args, "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


def test_ingest_query_stats_through_the_console_script(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    first = run("ingest", str(corpus), "--uri", db, "--collection", "kb", "--encoder", "hash")
    assert first.code == EXIT_OK, first.err
    assert "3 files (3 written, 0 unchanged" in first.out
    assert "Database: " + db in first.out and "turnkit-hash-64" in first.out

    # The encoder is read back from the collection: no --encoder needed to query.
    hits = run("query", "pip install on Linux", "--uri", db, "--collection", "kb", "--top-k", "2")
    assert hits.code == EXIT_OK, hits.err
    lines = hits.out.splitlines()
    assert lines[0].startswith(" 1. ") and "install.md § Install › Linux" in lines[0]
    assert "Run pip install turnkit on Linux." in lines[1]
    assert sum(1 for line in lines if line[:4].strip().endswith(".") and line[1].isdigit()) == 2

    stats = run("stats", "--uri", db)
    assert stats.code == EXIT_OK
    header, row = stats.out.splitlines()[1:3]
    assert header.split() == [
        "collection",
        "rows",
        "dim",
        "metric",
        "encoder",
        "version",
        "fragments",
        "unindexed",
        "indexes",
    ]
    assert row.split()[:5] == ["kb", "4", "64", "cosine", "turnkit-hash-64"]


def test_environment_variables_configure_and_flags_win(run: Run, corpus: Path, tmp_path: Path) -> None:
    env = {
        "TURNKIT_URI": str(tmp_path / "env-db"),
        "TURNKIT_COLLECTION": "from-env",
        "TURNKIT_ENCODER": "hash:32",
    }
    assert run("ingest", str(corpus), env=env).code == EXIT_OK
    store = create_vector_store(str(tmp_path / "env-db"))
    info = store.collection_info_sync("from-env")
    assert (info.rows, info.dimension, info.encoder) == (4, 32, "turnkit-hash-32")

    flagged = run("ingest", str(corpus / "faq.txt"), "--collection", "flagged", env=env)
    assert flagged.code == EXIT_OK
    assert store.list_collections_sync() == ["flagged", "from-env"]
    assert not (tmp_path / ".turnkit").exists()


def test_default_location_is_dot_turnkit_under_the_working_directory(
    run: Run, corpus: Path, tmp_path: Path
) -> None:
    assert run("ingest", str(corpus), "--encoder", "hash").code == EXIT_OK
    store = create_vector_store(str(tmp_path / ".turnkit" / "lancedb"))
    assert store.list_collections_sync() == ["docs"]


def test_reingest_is_idempotent_and_prune_removes_deleted_files(
    capsys: pytest.CaptureFixture[str], clean_environ: Path, corpus: Path
) -> None:
    base = ["--uri", str(clean_environ / "db"), "--encoder", "hash"]
    code, first, _ = call(capsys, "ingest", str(corpus), *base)
    assert code == EXIT_OK
    assert (first["files_written"], first["chunks_written"], first["ok"]) == (3, 4, True)
    assert first["encoder"] == "turnkit-hash-64" and first["collection"] == "docs"

    code, again, _ = call(capsys, "ingest", str(corpus), *base)
    assert (code, again["files_unchanged"], again["chunks_written"], again["chunks_deleted"]) == (0, 3, 0, 0)

    (corpus / "faq.txt").unlink()
    code, kept, _ = call(capsys, "ingest", str(corpus), *base)
    assert (kept["files_pruned"], kept["chunks_deleted"]) == (0, 0)  # no --prune: nothing removed
    code, pruned, _ = call(capsys, "ingest", str(corpus), "--prune", *base)
    assert code == EXIT_OK
    assert (pruned["files_pruned"], pruned["chunks_deleted"]) == (1, 1)
    assert create_vector_store(str(clean_environ / "db"))("docs").count_sync() == 3


def test_unreadable_files_give_exit_status_3_and_the_rest_is_ingested(
    run: Run, corpus: Path, tmp_path: Path
) -> None:
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    (corpus / "picture.png").write_bytes(b"\x89PNG\r\n")
    result = run("ingest", str(corpus), "--uri", str(tmp_path / "db"), "--encoder", "hash")
    assert result.code == EXIT_PARTIAL, result.err
    assert "1 errors" in result.out and "broken.pdf" in result.out and "E_INGEST_PARSE_FAILED" in result.out
    assert (
        "1  No loader for '.png' [E_INGEST_UNSUPPORTED_FILE]: " in result.out and "picture.png" in result.out
    )
    assert "1 file(s) could not be read" in result.err
    assert create_vector_store(str(tmp_path / "db"))("docs").count_sync() == 4


def test_a_pdf_whose_text_has_lone_surrogates_is_ingested_with_the_rest(
    run: Run, corpus: Path, tmp_path: Path
) -> None:
    # A broken ToUnicode map: pypdf extracts "\ud800", which no UTF-8 writer accepts.
    write_pdf(corpus / "mapped.pdf", [["AB broken map, readable words"]], to_unicode={"A": "D800"})
    result = run("ingest", str(corpus), "--uri", str(tmp_path / "db"), "--encoder", "hash", "--json")
    assert result.code == EXIT_OK, result.err
    report = json.loads(result.out)
    assert (report["files_written"], report["errors"]) == (4, [])
    assert create_vector_store(str(tmp_path / "db"))("docs").count_sync() == 5


def test_pypdf_warnings_stay_off_stderr_and_explain_the_failure(
    run: Run, corpus: Path, tmp_path: Path
) -> None:
    (corpus / "broken.pdf").write_bytes(b"%PDF-1.4 this is not really a pdf")
    result = run("ingest", str(corpus), "--uri", str(tmp_path / "db"), "--encoder", "hash", "--json")
    assert result.code == EXIT_PARTIAL
    assert "EOF marker" not in result.err  # no stray library log line
    assert result.err.strip() == "turnkit: 1 file(s) could not be read; the others were ingested."
    (issue,) = json.loads(result.out)["errors"]
    assert issue["code"] == "E_INGEST_PARSE_FAILED" and "EOF marker not found" in issue["reason"]


def test_a_missing_path_is_a_usage_error_and_writes_nothing(run: Run, tmp_path: Path) -> None:
    result = run("ingest", str(tmp_path / "nope"), "--uri", str(tmp_path / "db"))
    assert result.code == EXIT_USAGE
    assert result.err.startswith("turnkit: error: [E_CLI_USAGE] No such file or folder:")
    assert "--prune" in result.err
    assert not (tmp_path / "db").exists()


def test_query_json_filter_and_min_score(
    capsys: pytest.CaptureFixture[str], clean_environ: Path, corpus: Path
) -> None:
    base = ["--uri", str(clean_environ / "db")]
    assert main(["ingest", str(corpus), *base, "--encoder", "hash"]) == EXIT_OK
    capsys.readouterr()

    code, out, _ = call(capsys, "query", "Windows installer", *base, "--filter", 'kind = "markdown"')
    assert code == EXIT_OK
    assert out["filter"] == out["settings"]["filter"] == 'kind = "markdown"'
    assert out["top_k"] is None and out["settings"]["top_k"] == 5  # not given: the settings' default
    results = out["results"]
    assert {r["metadata"]["kind"] for r in results} == {"markdown"}
    assert len(results) == 2
    assert results[0]["source"] == "guides/install.md" and results[0]["section"] == "Install > Windows"
    assert results[0]["score"] >= results[1]["score"]

    code, out, _ = call(
        capsys, "query", "Windows installer", *base, "--filter", 'kind = "markdown" AND section LIKE "%Linux"'
    )
    assert [r["section"] for r in out["results"]] == ["Install > Linux"]

    code, out, _ = call(capsys, "query", "Windows installer", *base, "--min-score", "0.99")
    assert (code, out["results"]) == (EXIT_OK, [])


def test_a_bad_filter_is_a_usage_error_with_its_column(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("ingest", str(corpus), "--uri", db, "--encoder", "hash").code == EXIT_OK
    result = run("query", "x", "--uri", db, "--filter", "year >= ")
    assert result.code == EXIT_USAGE
    assert result.err.startswith(
        "turnkit: error: [E_VECTOR_STORE_INVALID_FILTER] Invalid filter expression at column"
    )
    assert 'Hint: Example: kind = "faq"' in result.err
    assert len(result.err.splitlines()) == 1


def test_encoder_errors(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    unknown = run("ingest", str(corpus), "--uri", db, "--encoder", "bert")
    assert unknown.code == EXIT_USAGE
    assert unknown.err.startswith("turnkit: error: [E_CLI_UNKNOWN_ENCODER] Unknown encoder 'bert'.")

    assert run("ingest", str(corpus), "--uri", db, "--encoder", "hash").code == EXIT_OK
    mismatch = run("query", "x", "--uri", db, "--encoder", "hash:32")
    assert mismatch.code == EXIT_USAGE
    assert "[E_VECTOR_STORE_ENCODER_MISMATCH]" in mismatch.err and "turnkit-hash-64" in mismatch.err


def test_stats_json_and_empty_database(
    capsys: pytest.CaptureFixture[str], clean_environ: Path, corpus: Path
) -> None:
    code, out, _ = call(capsys, "stats")
    assert (code, out) == (EXIT_OK, {"uri": ".turnkit/lancedb", "collections": []})
    assert not (clean_environ / ".turnkit").exists()

    assert main(["ingest", str(corpus), "--encoder", "hash"]) == EXIT_OK
    assert main(["ingest", str(corpus / "faq.txt"), "-c", "other", "--encoder", "hash:16"]) == EXIT_OK
    capsys.readouterr()
    code, out, _ = call(capsys, "stats")
    by_name = {c["name"]: c for c in out["collections"]}
    assert sorted(by_name) == ["docs", "other"]
    assert by_name["docs"]["rows"] == 4 and by_name["other"]["dimension"] == 16
    assert by_name["docs"]["encoder"] == "turnkit-hash-64"
    assert {"version", "unindexed_rows", "fragments", "indexes", "metric"} <= set(by_name["docs"])

    code, out, _ = call(capsys, "stats", "-c", "other")
    assert [c["name"] for c in out["collections"]] == ["other"]
    code, out, _ = call(capsys, "stats", "-c", "missing")
    assert code == EXIT_USAGE and out["error"]["code"] == "E_VECTOR_STORE_COLLECTION_NOT_FOUND"


def _many_files(root: Path, n: int) -> Path:
    root.mkdir()
    for i in range(n):
        (root / f"note-{i:03d}.txt").write_text(f"Note number {i} about topic {i % 7} and item {i * 13}.\n")
    return root


def test_optimize_compacts_and_builds_an_index(
    capsys: pytest.CaptureFixture[str], clean_environ: Path
) -> None:
    notes = _many_files(clean_environ / "notes", 300)
    base = ["--uri", str(clean_environ / "db")]
    # Small batches: many commits, many fragments to compact.
    assert main(["ingest", str(notes), *base, "--encoder", "hash", "--batch-size", "50"]) == EXIT_OK
    capsys.readouterr()

    code, out, _ = call(capsys, "optimize", *base)
    assert code == EXIT_OK
    (result,) = out["results"]
    assert result["before"]["fragments"] > 1 and result["after"]["fragments"] == 1
    assert result["index_built"] is None  # 300 rows < 10,000: no vector index yet
    # Only the scalar indexes of the fields ingest declares (source_uri, kind, ...).
    assert all(i.split(":")[1] in ("BTree", "Bitmap") for i in result["after"]["indexes"])
    assert "source_uri_idx:BTree" in result["after"]["indexes"]

    code, out, _ = call(capsys, "optimize", *base, "--index-min-rows", "100")
    (result,) = out["results"]
    assert result["index_built"] == "ivf_flat"
    assert any("IVF" in i.upper() for i in result["after"]["indexes"])

    # The index is used by queries, and a later optimize only updates it.
    assert main(["query", "topic 3", *base, "--top-k", "3"]) == EXIT_OK
    assert "note-" in capsys.readouterr().out
    code, out, _ = call(capsys, "optimize", "--all", *base, "--index-min-rows", "100")
    assert [r["index_built"] for r in out["results"]] == [None]


def test_optimize_text_output_and_unknown_collection(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("ingest", str(corpus), "--uri", db, "--encoder", "hash").code == EXIT_OK
    result = run("optimize", "--uri", db)
    assert result.code == EXIT_OK
    assert result.out.startswith("docs: 4 rows, fragments ")
    assert "no vector index" in result.out
    missing = run("optimize", "--uri", db, "-c", "nope")
    assert missing.code == EXIT_USAGE and "[E_VECTOR_STORE_COLLECTION_NOT_FOUND]" in missing.err


def test_ingest_skips_special_big_and_outside_files_with_codes(run: Run, tmp_path: Path) -> None:
    root = tmp_path / "tree"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nhello\n")
    (root / "big.txt").write_text("word " * 1000)
    os.mkfifo(root / "pipe.md")
    (root / "zero.txt").symlink_to("/dev/zero")
    db = str(tmp_path / "db")
    result = run("ingest", str(root), "--uri", db, "--encoder", "hash", "--max-file-size", "2KB")
    assert result.code == EXIT_OK, result.err
    assert "larger than the 2,000-byte limit [E_INGEST_FILE_TOO_LARGE]: " in result.out
    assert "a named pipe (FIFO), not a regular file [E_INGEST_SPECIAL_FILE]: " in result.out
    assert "zero.txt" in result.out and "[E_INGEST_EXTERNAL_SYMLINK]" in result.out
    assert "big.txt" in result.out and "pipe.md" in result.out
    verbose = run("ingest", str(root), "--uri", db, "--max-file-size", "2KB", "--verbose")
    assert (
        "  skipped: " + str(root / "big.txt") + ": larger than the 2,000-byte limit (5,000 bytes)"
        in verbose.out
    )
    bad = run("ingest", str(root), "--uri", db, "--max-file-size", "lots")
    assert bad.code != EXIT_OK and "expected a size" in bad.err
