"""The command line's conventions: help everywhere, exit statuses, one-line errors, --debug, --json."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from turnkit.cli import (
    EXIT_DEPENDENCY,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    main,
)

from .conftest import Run, clean_env

COMMANDS = ["ingest", "query", "stats", "optimize", "serve", "demo", "collections", "completion"]


def test_top_level_help_lists_every_command(run: Run) -> None:
    result = run("--help")
    assert result.code == EXIT_OK
    for command in COMMANDS:
        assert re.search(rf"^    {command}\b", result.out, re.M), command
    assert "TURNKIT_URI" in result.out and ".turnkit/lancedb" in result.out
    assert "exit status" in result.out


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([command, "--help"]) == EXIT_OK
    out = capsys.readouterr().out
    assert out.startswith(f"usage: turnkit {command}")
    assert "--debug" in out


def test_version(run: Run) -> None:
    import turnkit

    result = run("--version")
    assert (result.code, result.out.strip()) == (EXIT_OK, f"turnkit {turnkit.__version__}")


def test_python_dash_m_is_the_same_command(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "turnkit.cli", "--version"], capture_output=True, text=True, env=clean_env()
    )
    assert proc.returncode == 0 and proc.stdout.startswith("turnkit ")


def test_no_command_prints_help_and_is_a_usage_error(run: Run) -> None:
    result = run()
    assert result.code == EXIT_USAGE
    assert "usage: turnkit" in result.err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["bogus"], "invalid choice: 'bogus'"),
        (["query"], "turnkit query: the following arguments are required: TEXT"),
        (["query", "x", "--top-k", "0"], "expected a positive integer"),
        (["query", "x", "--min-score", "2"], "expected a number from 0 to 1"),
        (["ingest", "--nope", "x"], "unrecognized arguments: --nope"),
    ],
)
def test_usage_errors_are_one_line_with_code_and_hint(run: Run, args: list[str], needle: str) -> None:
    result = run(*args)
    assert result.code == EXIT_USAGE
    assert result.out == ""
    lines = result.err.splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith("turnkit: error: [E_CLI_USAGE] ")
    assert needle in lines[0]
    assert "Hint: Run `turnkit" in lines[0]
    assert "Traceback" not in result.err


def test_json_errors_go_to_stdout_as_well(run: Run, tmp_path: Path) -> None:
    result = run("query", "hello", "--uri", str(tmp_path / "db"), "--collection", "nope", "--json")
    assert result.code == EXIT_USAGE
    payload = json.loads(result.out)["error"]
    assert payload["code"] == "E_VECTOR_STORE_COLLECTION_NOT_FOUND"
    assert payload["collection"] == "nope"
    assert "turnkit ingest" in payload["hint"]
    assert result.err.startswith("turnkit: error: [E_VECTOR_STORE_COLLECTION_NOT_FOUND]")
    # Looking did not create a database.
    assert not (tmp_path / "db").exists()


def test_exit_statuses_are_distinct() -> None:
    codes = [EXIT_OK, EXIT_FAILURE, EXIT_USAGE, EXIT_PARTIAL, EXIT_DEPENDENCY, EXIT_INTERRUPTED]
    assert codes == [0, 1, 2, 3, 4, 130]


def test_exit_codes_in_the_docs_match(tmp_path: Path) -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text()
    for code in ("0", "1", "2", "3", "4", "130"):
        assert f"| `{code}` |" in page
    for command in COMMANDS:
        assert f"## `turnkit {command}" in page


def test_the_cli_does_not_load_lancedb_for_help() -> None:
    code = (
        "import sys\n"
        "from turnkit.cli import main\n"
        "assert main(['--help']) == 0\n"
        "assert main(['query', '--help']) == 0\n"
        "assert 'lancedb' not in sys.modules, 'lancedb was imported'\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env())
    assert proc.returncode == 0, proc.stderr


def test_public_names_are_sorted_and_star_importable() -> None:
    import turnkit.cli

    assert turnkit.cli.__all__ == sorted(turnkit.cli.__all__)
    namespace: dict[str, object] = {}
    exec("from turnkit.cli import *", namespace)
    assert sorted(k for k in namespace if k != "__builtins__") == sorted(turnkit.cli.__all__)


def test_cli_error_codes_have_hints() -> None:
    from turnkit import ERROR_CODES

    cli_codes = {code: cls for code, cls in ERROR_CODES.items() if code.startswith("E_CLI_")}
    assert set(cli_codes) == {
        "E_CLI_USAGE",
        "E_CLI_UNKNOWN_ENCODER",
        "E_CLI_DEPENDENCY_MISSING",
        "E_CLI_DOCS_NOT_FOUND",
    }
    assert all(cls.hints[code].strip() for code, cls in cli_codes.items())
