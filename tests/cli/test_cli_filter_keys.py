"""`turnkit query --filter`: `kind` and `metadata.kind` alike; "did you mean" for a key no record holds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnkit.cli import EXIT_OK, EXIT_USAGE, main

from .conftest import Result


def test_both_spellings_and_did_you_mean(
    clean_environ: Path, corpus: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # In process: the claim is about the parser and the filter keys, not the console script.
    db = str(clean_environ / "db")

    def run(*args: str) -> Result:
        code = main(list(args))
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    assert run("ingest", str(corpus), "--uri", db, "--encoder", "hash").code == EXIT_OK

    def query(expression: str) -> list[str]:
        result = run("query", "Windows installer", "--uri", db, "--filter", expression, "--json")
        assert result.code == EXIT_OK, result.err
        return [r["id"] for r in json.loads(result.out)["results"]]

    bare = query('kind = "markdown"')
    assert len(bare) == 2 and query('metadata.kind = "markdown"') == bare  # was a silent "No results"
    assert query('metadata.kind = "markdown" AND section LIKE "%Linux"') == query(
        'kind = "markdown" AND metadata.section LIKE "%Linux"'
    )
    typo = run("query", "Windows installer", "--uri", db, "--filter", 'knd = "markdown"')
    assert typo.code == EXIT_USAGE
    assert typo.err.startswith(
        "turnkit: error: [E_VECTOR_STORE_FILTER_KEY_NOT_FOUND] No record in collection"
    )
    assert "Did you mean 'kind'?" in typo.err
    twice = run("query", "Windows installer", "--uri", db, "--filter", 'metadata.metadata.kind = "markdown"')
    assert twice.code == EXIT_USAGE and "Did you mean 'kind'?" in twice.err
    held = run("query", "Windows installer", "--uri", db, "--filter", 'kind = "pdf"')
    assert held.code == EXIT_OK and "No results" in held.out  # the key is held; no record has the value
