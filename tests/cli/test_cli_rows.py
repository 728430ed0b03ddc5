"""`turnkit count`, `delete`, `export`, `peek`, `collections files`, and messages in the user's terms."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import orjson
import pytest

from turnkit.batteries.vector import create_vector_store
from turnkit.cli import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, main


def call(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def db(tmp_path: Path) -> str:
    """2,500 rows (more than one page of export) with vectors, kinds and numbers."""
    path = str(tmp_path / "db")
    vs = create_vector_store(path, auto_optimize=None)
    rng = np.random.default_rng(7)
    vs("kb").upsert_sync(
        [
            {
                "id": f"r{i:05d}",
                "vector": rng.normal(size=4).astype(np.float32),
                "document": f"row {i}",
                "metadata": {"kind": "even" if i % 2 == 0 else "odd", "n": i},
            }
            for i in range(2_500)
        ]
    )
    vs.create_collection_sync("notes", dimension=4)
    return path


def test_count_and_count_by_filter(capsys: pytest.CaptureFixture[str], db: str) -> None:
    assert call(capsys, "count", "--uri", db, "-c", "kb") == (EXIT_OK, "2500\n", "")
    code, out, _ = call(
        capsys, "count", "--uri", db, "-c", "kb", "--filter", 'kind = "odd" AND n < 10', "--json"
    )
    assert code == EXIT_OK and json.loads(out)["count"] == 5
    code, _, err = call(capsys, "count", "--uri", db, "-c", "kb", "--filter", "n >=")
    assert code == EXIT_USAGE and "[E_VECTOR_STORE_INVALID_FILTER]" in err


def test_export_writes_every_row_once_as_json_lines(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, err = call(capsys, "export", "--uri", db, "-c", "kb")
    assert code == EXIT_OK and "Exported 2500 rows" in err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["id"] for r in rows] == [f"r{i:05d}" for i in range(2_500)]
    stored = {m.id: m for m in create_vector_store(db)("kb").select("*").get_sync(["r00000", "r02499"])}
    for row in (rows[0], rows[-1]):
        # The vector reads back to the float32 values stored, bit for bit.
        assert np.array_equal(
            np.asarray(row["vector"], np.float32), np.asarray(stored[row["id"]].vector, np.float32)
        )
        assert row["metadata"] == stored[row["id"]].metadata and row["document"] == stored[row["id"]].document
        assert row["created_at"].endswith("+00:00")
    code, out, _ = call(capsys, "export", "--uri", db, "-c", "kb", "--filter", "n >= 2497", "--no-vectors")
    assert [json.loads(line) for line in out.splitlines()] == [
        {
            "id": f"r{i:05d}",
            "document": f"row {i}",
            "metadata": {"kind": "even" if i % 2 == 0 else "odd", "n": i},
            "created_at": rows[i]["created_at"],
            "updated_at": rows[i]["updated_at"],
        }
        for i in (2497, 2498, 2499)
    ]


def test_export_to_files_jsonl_and_parquet(
    capsys: pytest.CaptureFixture[str], db: str, tmp_path: Path
) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    target = tmp_path / "out.jsonl"
    code, out, _ = call(capsys, "export", "--uri", db, "-c", "kb", "-o", str(target), "--json")
    assert code == EXIT_OK and json.loads(out)["rows"] == 2500
    assert len(target.read_bytes().splitlines()) == 2500 and not list(tmp_path.glob("*.partial"))

    parquet = tmp_path / "out.parquet"
    code, out, _ = call(capsys, "export", "--uri", db, "-c", "kb", "--format", "parquet", "-o", str(parquet))
    assert code == EXIT_OK and out.startswith("Exported 2500 rows of 'kb' to ")
    table = pq.read_table(parquet)
    assert table.num_rows == 2500 and table["id"][0].as_py() == "r00000"
    assert orjson.loads(table["metadata"][1].as_py()) == {"kind": "odd", "n": 1}
    assert table.schema.field("vector").type.list_size == 4

    code, _, err = call(capsys, "export", "--uri", db, "-c", "kb", "--format", "parquet")
    assert code == EXIT_USAGE and "needs -o FILE" in err


def test_peek_shows_the_first_rows(capsys: pytest.CaptureFixture[str], db: str) -> None:
    code, out, _ = call(capsys, "peek", "--uri", db, "-c", "kb", "-n", "2", "--filter", 'kind = "odd"')
    assert code == EXIT_OK
    assert out.splitlines() == [
        "r00001  r00001",
        "    row 1",
        "r00003  r00003",
        "    row 3",
        "(2 of 1250 rows matching the filter, in id order)",
    ]
    code, out, _ = call(capsys, "peek", "--uri", db, "-c", "notes")
    assert (code, out) == (EXIT_OK, "No rows in 'notes'.\n")


def test_delete_by_filter_needs_a_confirmation(capsys: pytest.CaptureFixture[str], db: str) -> None:
    # pytest's stdin is not a terminal: refused with the flag that allows it, nothing deleted.
    code, _, err = call(capsys, "delete", "--uri", db, "-c", "kb", "--filter", "n < 10")
    assert code == EXIT_USAGE and "stdin is not a terminal" in err and "Add --yes" in err
    code, out, _ = call(capsys, "delete", "--uri", db, "-c", "kb", "--filter", "n < 10", "--yes")
    assert (code, out) == (EXIT_OK, "Deleted 10 rows from 'kb'.\n")
    assert call(capsys, "count", "--uri", db, "-c", "kb")[1] == "2490\n"
    code, _, err = call(capsys, "delete", "--uri", db, "-c", "kb", "--yes")
    assert code == EXIT_USAGE and "needs --filter EXPR or --all" in err
    code, out, _ = call(capsys, "delete", "--uri", db, "-c", "kb", "--all", "--yes", "--json")
    assert json.loads(out)["deleted"] == 2490


@pytest.mark.parametrize(("answer", "left"), [("n\n", 2500), ("y\n", 2499)])
def test_delete_asks_on_a_terminal(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, db: str, answer: str, left: int
) -> None:
    leader, follower = os.openpty()  # a real terminal for stdin
    with open(follower, encoding="utf-8", closefd=True) as tty:
        monkeypatch.setattr("sys.stdin", tty)
        os.write(leader, answer.encode())
        code, out, _ = call(capsys, "delete", "--uri", db, "-c", "kb", "--filter", "n = 7")
    os.close(leader)
    assert code == EXIT_OK
    assert out.startswith(f"Delete 1 row of 'kb' matching n = 7 from {db}? [y/N] ")
    assert create_vector_store(db)("kb").count_sync() == left


def test_collections_files_lists_ingested_files_with_chunk_counts(
    capsys: pytest.CaptureFixture[str], corpus: Path, tmp_path: Path, clean_environ: Path
) -> None:
    db = str(tmp_path / "ingested")
    assert main(["ingest", str(corpus), "--uri", db, "--encoder", "hash", "--no-progress"]) == EXIT_OK
    create_vector_store(db)("docs").upsert_sync([{"id": "by-hand", "vector": [1.0] * 64}])
    capsys.readouterr()
    code, out, _ = call(capsys, "collections", "files", "docs", "--uri", db)
    assert code == EXIT_OK
    assert out.splitlines() == [
        "1  about.html",
        "1  faq.txt",
        "2  guides/install.md",
        "1  (rows without a source_uri: not from turnkit ingest)",
        "3 files, 4 chunks in 'docs'.",
    ]
    code, out, _ = call(capsys, "collections", "files", "docs", "--uri", db, "--json")
    files = json.loads(out)["files"]
    assert [(f["display_name"], f["chunks"]) for f in files] == [
        ("about.html", 1),
        ("faq.txt", 1),
        ("guides/install.md", 2),
    ]
    assert files[0]["source_uri"] == (corpus / "about.html").resolve().as_uri()


def test_a_wrong_collection_gets_did_you_mean_and_the_list(
    capsys: pytest.CaptureFixture[str], db: str
) -> None:
    for command in (["query", "row 1"], ["count"], ["export"], ["peek"], ["optimize"], ["delete", "--all"]):
        code, _, err = call(capsys, *command, "--uri", db, "-c", "kbb")
        assert code == EXIT_USAGE, command
        assert "No collection 'kbb'" in err and "Did you mean 'kb'? Collections: kb, notes." in err, command
    code, _, err = call(capsys, "collections", "files", "nots", "--uri", db)
    assert code == EXIT_USAGE and "Did you mean 'notes'?" in err
    code, _, err = call(capsys, "stats", "--uri", db, "-c", "zzz")
    assert code == EXIT_USAGE and "Collections: kb, notes." in err and "Did you mean" not in err


def test_a_database_that_does_not_exist_says_so_with_its_absolute_path(
    capsys: pytest.CaptureFixture[str], clean_environ: Path
) -> None:
    where = str(clean_environ / "typo-db")
    for command in (["query", "hello"], ["count"], ["export"], ["collections", "files", "docs"]):
        code, _, err = call(capsys, *command, "--uri", "typo-db")
        assert code == EXIT_USAGE, command
        assert f"There is no database at {where!r} (the folder does not exist)" in err, command
    code, out, _ = call(capsys, "stats", "--uri", "typo-db")
    assert code == EXIT_OK and f"there is no database at {where!r}" in out
    assert not (clean_environ / "typo-db").exists()


def test_storage_hints_only_for_object_storage(
    capsys: pytest.CaptureFixture[str], corpus: Path, clean_environ: Path
) -> None:
    (clean_environ / "a-file").write_text("not a folder")
    code, _, err = call(
        capsys, "ingest", str(corpus), "--uri", "a-file/db", "--encoder", "hash", "--no-progress"
    )
    assert code == EXIT_FAILURE and "[E_VECTOR_STORE_CONNECTION_FAILED]" in err
    hint = err.split("Hint:")[1]
    assert "parent folder must exist and be writable" in hint
    assert "--storage-option" not in hint and "AWS_" not in hint


def _mismatch(capsys: pytest.CaptureFixture[str], db: str, *flags: str) -> str:
    code, _, err = call(capsys, "query", "row", "--uri", db, *flags)
    assert code == EXIT_USAGE and "[E_VECTOR_STORE_ENCODER_MISMATCH]" in err
    return err


def test_the_encoder_mismatch_names_the_setting_in_force(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, corpus: Path, clean_environ: Path
) -> None:
    db = str(clean_environ / "db")
    assert main(["ingest", str(corpus), "--uri", db, "--encoder", "hash", "--no-progress"]) == EXIT_OK
    flag = _mismatch(capsys, db, "--encoder", "hash:32")
    assert "from --encoder hash:32; TURNKIT_ENCODER is not set" in flag and "Drop --encoder" in flag
    monkeypatch.setenv("TURNKIT_ENCODER", "hash:32")
    env = _mismatch(capsys, db)
    assert "from TURNKIT_ENCODER=hash:32 (no --encoder given)" in env and "Unset TURNKIT_ENCODER" in env
    assert "--encoder hash:64 to override it" in env
    both = _mismatch(capsys, db, "--encoder", "hash:16")
    assert "from --encoder hash:16; TURNKIT_ENCODER=hash:32 is set too, and the flag wins" in both
    assert "Drop --encoder and unset TURNKIT_ENCODER" in both
    # The same encoder under another name is no mismatch.
    assert main(["query", "pip", "--uri", db, "--encoder", "hash:64"]) == EXIT_OK
