"""`turnkit query` imports only what a query needs: a guard for the lazy imports behind its cold start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import clean_env

# Each of these once loaded on every `turnkit query` without being used by it.
NOT_ON_THE_QUERY_PATH = (
    "turnkit._retrievable",  # pydantic models of the core
    "turnkit._context",
    "turnkit._runner",
    "turnkit._prompt",
    "turnkit.batteries.vector._callbacks",
    "turnkit.batteries.vector._glue_parts",
    "turnkit.ingest",
    "turnkit.mcp",
    "wordllama",  # the package (requests, its training config); its files are read directly
    "requests",
    "tiktoken",
    "mcp",
)


@pytest.mark.parametrize("encoder", ["wordllama", "hash"])
def test_query_loads_nothing_it_does_not_use(tmp_path: Path, encoder: str) -> None:
    if encoder == "wordllama":
        pytest.importorskip("wordllama")
    from turnkit.batteries.vector import create_vector_store, encoder_from_spec

    uri = str(tmp_path / "db")
    vs = create_vector_store(uri=uri, encoder=encoder_from_spec(encoder))
    vs("notes").upsert_sync(
        [
            {"id": "a", "document": "Refunds reach the original card within five business days."},
            {"id": "b", "document": "Orders ship from Lyon on weekdays."},
        ]
    )
    code = (
        "import json, sys; from turnkit.cli import main; "
        f"status = main(['query', 'when do refunds arrive', '--uri', {uri!r}, '-c', 'notes', '--json']); "
        f"print(json.dumps([status, sorted(m for m in {NOT_ON_THE_QUERY_PATH!r} if m in sys.modules)]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=clean_env()
    )
    *printed, last = out.stdout.strip().splitlines()
    status, loaded = json.loads(last)
    assert status == 0
    assert loaded == []
    results = json.loads("\n".join(printed))["results"]
    assert {r["id"] for r in results} == {"a", "b"}
