"""`turnkit collections`, `completion`, connection flags and per-command environment help."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from turnkit.cli import EXIT_DEPENDENCY, EXIT_OK, EXIT_USAGE, main
from turnkit.cli._connect import Connection, connection_of, parse_storage_options
from turnkit.cli._parser import build_parser

from .conftest import Result, Run


def test_storage_options_parse_and_lower_case_keys() -> None:
    assert parse_storage_options(["Endpoint=http://127.0.0.1:9000", "allow_http=true", "k=a=b"]) == {
        "endpoint": "http://127.0.0.1:9000",
        "allow_http": "true",
        "k": "a=b",
    }
    assert parse_storage_options(None) == {}


@pytest.mark.parametrize("bad", ["novalue", "=x", " =x"])
def test_storage_option_without_key_or_equals_is_a_usage_error(run: Run, bad: str) -> None:
    result = run("stats", "--uri", "s3://bucket/db", "--storage-option", bad)
    assert result.code == EXIT_USAGE
    assert "[E_CLI_USAGE]" in result.err and "KEY=VALUE" in result.err


def test_connection_flags_reach_the_store_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LANCEDB_API_KEY", raising=False)
    args = build_parser().parse_args(
        ["stats", "--uri", "s3://b/db", "--storage-option", "region=eu-west-1", "--api-key", "k"]
    )
    conn = connection_of(args)
    # An API key only matters to LanceDB Cloud; object stores get their storage options.
    assert conn.connect_options() == {"storage_options": {"region": "eu-west-1"}}
    cloud = Connection("db://mydb", api_key="sk-1", region="us-east-1")
    assert cloud.connect_options() == {"api_key": "sk-1", "region": "us-east-1"}


def test_cloud_key_comes_from_the_flag_or_lancedb_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANCEDB_API_KEY", "from-env")
    conn = connection_of(build_parser().parse_args(["stats", "--uri", "db://x"]))
    assert conn.api_key == "from-env"
    conn = connection_of(build_parser().parse_args(["stats", "--uri", "db://x", "--api-key", "flag"]))
    assert conn.api_key == "flag"


def test_cloud_without_a_key_says_what_to_pass(run: Run) -> None:
    for command in (["stats"], ["query", "x"], ["collections", "list"]):
        result = run(*command, "--uri", "db://mydb")
        assert result.code == EXIT_USAGE, result.err
        assert "--api-key" in result.err and "LANCEDB_API_KEY" in result.err


def test_each_command_lists_only_the_variables_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    def epilog(command: str) -> str:
        assert main([command, "--help"]) == EXIT_OK
        return capsys.readouterr().out.split("environment:")[1].split("exit status:")[0]

    demo = epilog("demo")
    assert "TURNKIT_OPENAI_MODEL" in demo and "TURNKIT_URI" not in demo and "AWS_" not in demo
    stats = epilog("stats")
    assert "TURNKIT_URI" in stats and "LANCEDB_API_KEY" in stats
    assert "TURNKIT_ENCODER" not in stats and "TURNKIT_OPENAI" not in stats
    query = epilog("query")
    assert "TURNKIT_ENCODER" in query and "TURNKIT_COLLECTION" in query and "TURNKIT_OPENAI" not in query
    assert "TURNKIT_MCP_TOKEN" not in query and "RAY_ADDRESS" not in query
    assert "TURNKIT_MCP_TOKEN" in epilog("serve") and "RAY_ADDRESS" not in epilog("serve")
    assert "RAY_ADDRESS" in epilog("ingest") and "TURNKIT_MCP_TOKEN" not in epilog("ingest")


def test_collections_list_path_and_drop(
    run: Run, clean_environ: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = clean_environ / "db"

    def cli(*args: str) -> Result:
        # In process, except the refusal below, whose claim is about a real stdin that is no terminal.
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    assert cli("ingest", str(corpus), "--uri", str(db), "--encoder", "hash", "-c", "one").code == EXIT_OK
    assert cli("ingest", str(corpus), "--uri", str(db), "--encoder", "hash", "-c", "two").code == EXIT_OK

    listed = cli("collections", "list", "--uri", str(db), "--json")
    assert listed.code == EXIT_OK, listed.err
    data = json.loads(listed.out)
    assert [c["name"] for c in data["collections"]] == ["one", "two"]
    assert all(c["rows"] > 0 for c in data["collections"])

    path = cli("collections", "path", "one", "--uri", str(db))
    assert path.code == EXIT_OK and Path(path.out.strip()) == db / "one.lance"
    assert Path(path.out.strip()).is_dir()

    # Not on a terminal and without --yes: refused, and nothing is dropped.
    refused = run("collections", "drop", "one", "--uri", str(db))
    assert refused.code == EXIT_USAGE and "--yes" in refused.err
    assert (db / "one.lance").is_dir()

    dropped = cli("collections", "drop", "one", "--uri", str(db), "--yes")
    assert dropped.code == EXIT_OK, dropped.err
    assert "Dropped 'one'" in dropped.out
    after = json.loads(cli("collections", "list", "--uri", str(db), "--json").out)
    assert [c["name"] for c in after["collections"]] == ["two"]

    missing = cli("collections", "path", "nope", "--uri", str(db))
    assert missing.code == EXIT_USAGE and "E_VECTOR_STORE_COLLECTION_NOT_FOUND" in missing.err
    noname = cli("collections", "drop", "--uri", str(db))
    assert noname.code == EXIT_USAGE and "needs a collection name" in noname.err


def test_collections_list_on_a_missing_database_creates_nothing(run: Run, tmp_path: Path) -> None:
    result = run("collections", "list", "--uri", str(tmp_path / "nothing"))
    assert result.code == EXIT_OK and "No collections" in result.out
    assert not (tmp_path / "nothing").exists()


def test_completion_scripts_complete_the_subcommands(run: Run) -> None:
    pytest.importorskip("shtab")
    bash = run("completion", "bash")
    assert bash.code == EXIT_OK, bash.err
    for command in ("ingest", "query", "collections", "serve"):
        assert command in bash.out
    if shutil.which("bash"):
        # The script is valid bash: sourcing it defines the completion function.
        check = subprocess.run(
            ["bash", "-c", f"source /dev/stdin <<'EOF'\n{bash.out}\nEOF\ncomplete -p turnkit"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert check.returncode == 0, check.stderr
        assert "turnkit" in check.stdout
    zsh = run("completion", "zsh")
    assert zsh.code == EXIT_OK and "#compdef turnkit" in zsh.out


def test_completion_without_shtab_names_the_extra(run: Run, tmp_path: Path) -> None:
    # A module named shtab that fails to import stands in for the missing extra.
    (tmp_path / "shtab.py").write_text("raise ImportError('no shtab here')\n")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    result = run("completion", "bash", env={"PYTHONPATH": path})
    assert result.code == EXIT_DEPENDENCY
    assert "turnkit[cli]" in result.err
