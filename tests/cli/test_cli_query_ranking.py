"""`turnkit query`: the shared `RetrievalSettings` by default, each flag one settings field, copies shown."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, get_args

import pytest

from turnkit.batteries.vector import (
    HashEncoder,
    RetrievalSettings,
    create_vector_store,
    parse_filter_expression,
    retrieve_sync,
)
from turnkit.batteries.vector.query._ranking_specs import FusionName
from turnkit.cli import EXIT_OK, EXIT_USAGE, main
from turnkit.cli._parser import build_parser
from turnkit.cli._query_flags import QUERY_FLAGS, query_settings, settings_json

QUESTION = "process object current Node.js process"
PAGE = "The process object provides information about, and control over, the current Node.js process."


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A page shipped as .md and .html (one text twice), and other pages; ingested in process."""
    root = tmp_path_factory.mktemp("query")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "process.md").write_text(f"# Process\n\n{PAGE}\n")
    # Not byte-equal (the rendering adds a line), so no tie decides which copy leads.
    (corpus / "process.html").write_text(
        f"<html><body><h1>Process</h1><p>{PAGE}</p><p>Stability: stable.</p></body></html>"
    )
    (corpus / "faq.txt").write_text("Refunds reach the original card within five business days.\n")
    (corpus / "events.md").write_text(
        "# Events\n\nThe process object emits an exit event when Node.js ends.\n"
    )
    (corpus / "ship.md").write_text("# Shipping\n\nOrders ship from Lyon to every EU country.\n")
    path = root / "db"
    with pytest.MonkeyPatch.context() as env:
        for key in [k for k in os.environ if k.startswith(("TURNKIT_", "OPENAI_"))]:
            env.delenv(key)
        assert main(["ingest", str(corpus), "--uri", str(path), "--encoder", "hash:64", "--no-progress"]) == 0
    return path


def _query(capsys: pytest.CaptureFixture[str], db: Path, *flags: str, text: str = QUESTION) -> dict[str, Any]:
    code = main(["query", text, "--uri", str(db), "--json", *flags])
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    data: dict[str, Any] = json.loads(captured.out)
    return data


def _settings(*flags: str) -> RetrievalSettings:
    return query_settings(build_parser().parse_args(["query", "x", *flags]))


@pytest.mark.parametrize(
    ("flags", "fields"),
    [
        ([], {}),
        (["-k", "3"], {"top_k": 3}),
        (["--hybrid"], {"hybrid": True}),
        (["--hybrid", "auto"], {"hybrid": True}),
        (["--hybrid", "0.3", "--fusion", "rrf"], {"hybrid": {"alpha": 0.3, "fusion": "rrf"}}),
        (["--fusion", "linear"], {"hybrid": {"fusion": "linear"}}),
        (["--no-hybrid"], {"hybrid": False}),
        (["--no-collapse"], {"collapse_duplicates": False}),
        (["--diversify"], {"diversify": 0.5}),
        (["--diversify", "0.2"], {"diversify": 0.2}),
        (["--min-score", "0.4"], {"min_score": 0.4}),
        (["--rerank", "-k", "2"], {"rerank": True, "top_k": 2}),
        (
            ["--nprobes", "8", "--refine-factor", "2", "--ef", "64"],
            {"nprobes": 8, "refine_factor": 2, "ef": 64},
        ),
        (["-f", 'kind = "faq"'], {"filter": parse_filter_expression('kind = "faq"')}),
    ],
)
def test_each_flag_sets_its_settings_field_over_the_defaults(
    flags: list[str], fields: dict[str, Any]
) -> None:
    assert _settings(*flags) == RetrievalSettings().merge(fields)


def test_the_table_names_real_fields_and_the_help_states_the_defaults() -> None:
    assert {f.field for f in QUERY_FLAGS} <= set(RetrievalSettings.model_fields)
    flags = [s for f in QUERY_FLAGS for s in f.flags]
    assert len(flags) == len(set(flags))
    defaults = RetrievalSettings()
    assert defaults.hybrid is not None and defaults.collapse_duplicates  # what the help says
    helps = {f.flags[-1]: str(f.argparse["help"]) for f in QUERY_FLAGS}
    assert f"default {defaults.top_k}" in helps["--top-k"]
    assert "on by default" in helps["--hybrid"] and f"default {defaults.hybrid.fusion}" in helps["--fusion"]
    # The CLI spells the fusion names out (importing the battery would slow `turnkit --help`).
    (fusion,) = [f for f in QUERY_FLAGS if "--fusion" in f.flags]
    assert sorted(fusion.argparse["choices"]) == sorted(get_args(FusionName))


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--no-hybrid", "--fusion", "rrf"], "--fusion needs hybrid search"),
        (["--hybrid", "--no-hybrid"], "not allowed with argument"),
        (["--hybrid", "2"], "expected a number from 0 to 1"),
        (["--diversify", "-1"], "expected a number from 0 to 1"),
        (["--fusion", "max"], "invalid choice"),
        (["--ef", "0"], "expected a positive integer"),
    ],
)
def test_bad_combinations_and_values_are_usage_errors(
    db: Path, capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    assert main(["query", "x", "--uri", str(db), *flags]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "[E_CLI_USAGE]" in err and message in err


def test_the_default_is_the_shared_settings_and_names_where_copies_are(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _query(capsys, db)
    assert data["settings"] == settings_json(RetrievalSettings())
    assert data["settings"]["hybrid"]["fusion"] == "zscore" and data["settings"]["collapse_duplicates"]
    store = create_vector_store(db, encoder=HashEncoder(64), auto_optimize=None)
    expected = retrieve_sync(store("docs").near_text(QUESTION)).matches
    assert [r["id"] for r in data["results"]] == [m.id for m in expected]
    first = data["results"][0]
    assert first["source"] in ("process.md", "process.html")
    other = "process.html" if first["source"] == "process.md" else "process.md"
    assert [c["source"] for c in first["duplicates"]] == [f"{other} § Process"]
    assert other not in [r["source"] for r in data["results"]]  # the freed slot went to another text
    # In text too: the copy is named under the result it was collapsed into.
    assert main(["query", QUESTION, "--uri", str(db), "-k", "2"]) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == f"      also in: {other} § Process"


def test_vector_only_and_every_copy_are_one_flag_each(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = create_vector_store(db, encoder=HashEncoder(64), auto_optimize=None)
    plain = store("docs").near_text(QUESTION).select("id").limit(3).search_sync()
    data = _query(capsys, db, "--no-hybrid", "--no-collapse", "-k", "3")
    assert data["settings"]["hybrid"] is None and data["settings"]["collapse_duplicates"] is False
    assert data["hybrid"] is False and data["collapse"] is False  # the flags as given
    assert [r["id"] for r in data["results"]] == [m.id for m in plain]
    assert {r["source"] for r in data["results"][:2]} == {"process.md", "process.html"}
    assert all(r["duplicates"] == [] for r in data["results"])


def test_flags_give_the_pipeline_the_same_settings_in_json(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flags = ["--hybrid", "0.4", "--fusion", "rrf", "--diversify", "0.3", "-k", "2", "-f", 'kind = "markdown"']
    data = _query(capsys, db, *flags)
    settings = _settings(*flags)
    assert data["settings"] == settings_json(settings, filter_text='kind = "markdown"')
    assert data["settings"]["hybrid"] == {"alpha": 0.4, "fusion": "rrf", "rrf_k": 60, "candidates": None}
    store = create_vector_store(db, encoder=HashEncoder(64), auto_optimize=None)
    expected = retrieve_sync(store("docs").near_text(QUESTION), settings).matches
    assert [r["id"] for r in data["results"]] == [m.id for m in expected]
    assert all(r["metadata"]["kind"] == "markdown" for r in data["results"])


def test_min_score_reads_the_dense_similarity_under_hybrid(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = create_vector_store(db, encoder=HashEncoder(64), auto_optimize=None)
    plain = store("docs").near_text(QUESTION).select("id").limit(3).search_sync()
    threshold = f"{(plain[0].score or 0) - 1e-3:.4f}"  # just below the best dense similarity
    data = _query(capsys, db, "--min-score", threshold)
    assert data["settings"]["min_score"] == float(threshold) and data["min_score"] == float(threshold)
    assert plain[0].id in {r["id"] for r in data["results"]} | {
        c["id"] for r in data["results"] for c in r["duplicates"]
    }
    for result in data["results"]:
        assert result["id"] in {m.id for m in plain if (m.score or 0) >= float(threshold)}


def test_rerank_reorders_an_over_fetched_pool(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _query(capsys, db, "-k", "2", "--rerank")
    assert data["rerank"] is True and data["settings"]["rerank"]["top_k"] == 2
    assert 1 <= len(data["results"]) <= 2
    assert all(0.0 <= r["score"] <= 1.0 for r in data["results"])
