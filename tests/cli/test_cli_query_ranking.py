"""`turnkit query` with the ranking options every other surface has: hybrid, fusion, rerank, diversify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.cli import EXIT_OK, EXIT_USAGE

from .conftest import Run


@pytest.fixture
def db(run: Run, corpus: Path, tmp_path: Path) -> Path:
    path = tmp_path / "db"
    assert run("ingest", str(corpus), "--uri", str(path), "--encoder", "hash:64").code == EXIT_OK
    return path


def _ids(run: Run, db: Path, *flags: str) -> list[str]:
    result = run("query", "refunds original card", "--uri", str(db), "--json", "-k", "3", *flags)
    assert result.code == EXIT_OK, result.err
    return [r["id"] for r in json.loads(result.out)["results"]]


def test_query_takes_the_same_ranking_options_as_the_builder(run: Run, db: Path) -> None:
    store = create_vector_store(db, encoder=HashEncoder(64), auto_optimize=None)
    base = store("docs").near_text("refunds original card").select("id").limit(3)
    assert _ids(run, db) == [m.id for m in base.search_sync()]
    assert _ids(run, db, "--hybrid") == [m.id for m in base.hybrid(0.5).search_sync()]
    assert _ids(run, db, "--hybrid", "0.2", "--fusion", "zscore") == [
        m.id for m in base.hybrid(0.2, fusion="zscore").search_sync()
    ]
    assert _ids(run, db, "--diversify", "0.3") == [m.id for m in base.diversify(0.3).search_sync()]


def test_min_score_reads_the_dense_similarity_under_hybrid(run: Run, db: Path) -> None:
    store = create_vector_store(db, encoder=HashEncoder(64), auto_optimize=None)
    plain = store("docs").near_text("refunds original card").select("id").limit(3).search_sync()
    threshold = f"{(plain[0].score or 0) - 1e-3:.4f}"  # just below the best dense similarity
    assert _ids(run, db, "--min-score", threshold) == [plain[0].id]
    assert plain[0].id in _ids(run, db, "--min-score", threshold, "--hybrid", "0.5")
    result = run("query", "refunds original card", "--uri", str(db), "--json", "--min-score", threshold)
    assert json.loads(result.out)["min_score"] == float(threshold)


def test_rerank_reorders_an_over_fetched_pool(run: Run, db: Path) -> None:
    result = run("query", "refunds original card", "--uri", str(db), "--json", "-k", "2", "--rerank")
    assert result.code == EXIT_OK, result.err
    data = json.loads(result.out)
    assert data["rerank"] is True and 1 <= len(data["results"]) <= 2
    assert all(0.0 <= r["score"] <= 1.0 for r in data["results"])


@pytest.mark.parametrize("flags", [["--hybrid", "2"], ["--diversify", "-1"], ["--fusion", "max"]])
def test_bad_ranking_values_are_usage_errors(run: Run, db: Path, flags: list[str]) -> None:
    result = run("query", "x", "--uri", str(db), *flags)
    assert result.code == EXIT_USAGE and "[E_CLI_USAGE]" in result.err
