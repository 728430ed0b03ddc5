"""`turnkit query` on what a first user types and reads: flags of optional value, where each hit is from."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.cli import EXIT_OK, EXIT_USAGE, main
from turnkit.cli._parser import build_parser

from ..ingest.conftest import write_pdf
from .conftest import Run

QUESTION = "read a file line by line"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One database for the module, ingested in process (the console script is tested below)."""
    root = tmp_path_factory.mktemp("edges")
    corpus = root / "corpus"
    corpus.mkdir()
    (corpus / "faq.txt").write_text("Refunds reach the original card within five business days.\n")
    pages = [["Streams read a file line by line."], ["Each line ends with a newline."]]
    write_pdf(corpus / "manual.pdf", pages)
    (corpus / "api.html").write_text(
        # The shapes of Node.js's and rustdoc's pages: permalink marks and a button inside the headings.
        '<html><body><main><h1>Async hooks<span><a class="mark" href="#async_hooks" id="async_hooks">#</a>'
        "</span></h1><p>Hooks track asynchronous resources.</p><h2>Class: <code>AsyncHook</code><span>"
        '<a class="mark" href="#class-asynchook" id="class-asynchook">#</a></span></h2>'
        "<p>The AsyncHook class exposes an interface for tracking lifetime events.</p>"
        '<h2>Struct <a class="struct" href="#">HashMap</a><button id="copy-path">Copy item path</button></h2>'
        '<h3 id="examples"><a class="doc-anchor" href="#examples">§</a>Examples</h3>'
        "<p>A HashMap maps keys to values.</p></main></body></html>"
    )
    path = root / "db"
    with pytest.MonkeyPatch.context() as env:
        for key in [k for k in os.environ if k.startswith(("TURNKIT_", "OPENAI_"))]:
            env.delenv(key)
        assert main(["ingest", str(corpus), "--uri", str(path), "--encoder", "hash:64", "--no-progress"]) == 0
    return path


def _query(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """``turnkit query --json ARGS`` in process (``--json`` first: the arguments may end with ``--``)."""
    code = main(["query", "--json", *args])
    captured = capsys.readouterr()
    assert code == EXIT_OK, captured.err
    data: dict[str, Any] = json.loads(captured.out)
    return data


@pytest.mark.parametrize(
    ("flags", "hybrid", "diversify"),
    [
        (["--hybrid", QUESTION], "auto", None),
        ([QUESTION, "--hybrid"], "auto", None),
        (["--hybrid", "0.3", QUESTION], 0.3, None),
        ([QUESTION, "--hybrid", "0.3"], 0.3, None),
        (["--hybrid=0.3", QUESTION], 0.3, None),
        (["--hybrid", "auto", QUESTION], "auto", None),
        (["--diversify", QUESTION], None, 0.5),
        (["--diversify", "--hybrid", QUESTION, "-k", "3"], "auto", 0.5),
        (["--hybrid", QUESTION, "--diversify", "0.2"], "auto", 0.2),
        (["--hyb", QUESTION], "auto", None),  # argparse's abbreviations still work
        (["--hybrid", "--", QUESTION], "auto", None),
    ],
)
def test_flags_of_optional_value_never_take_the_question(
    capsys: pytest.CaptureFixture[str],
    clean_environ: Path,
    db: Path,
    flags: list[str],
    hybrid: object,
    diversify: object,
) -> None:
    data = _query(capsys, "--uri", str(db), *flags)
    assert data["query"] == QUESTION
    assert (data["hybrid"], data["diversify"]) == (hybrid, diversify)
    assert data["results"]
    # The same search as with the options written after the text.
    after = [QUESTION] + (["--hybrid", str(hybrid)] if hybrid is not None else [])
    after += ["--diversify", str(diversify)] if diversify is not None else []
    after += ["-k", "3"] if "-k" in flags else []
    same = _query(capsys, "--uri", str(db), *after)
    assert [r["id"] for r in data["results"]] == [r["id"] for r in same["results"]]


def test_the_console_script_searches_for_the_question_with_hybrid_on(run: Run, db: Path) -> None:
    result = run("query", "--hybrid", QUESTION, "--uri", str(db), "--json")
    assert result.code == EXIT_OK, result.err
    data = json.loads(result.out)
    assert data["query"] == QUESTION and data["hybrid"] == "auto"


def test_a_number_after_the_flag_is_its_value(run: Run, db: Path) -> None:
    result = run("query", "--hybrid", "42", "--uri", str(db))
    assert result.code == EXIT_USAGE
    assert "argument --hybrid: expected a number from 0 to 1, got '42'" in result.err
    assert "Hint: A number after --hybrid is its value; a TEXT that is a number goes before it" in result.err
    # A question that is a number goes first, or after `--`.
    for args in (["42", "--hybrid"], ["--hybrid", "--", "42"]):
        result = run("query", "--uri", str(db), "--json", *args)
        assert result.code == EXIT_OK, result.err
        assert json.loads(result.out)["query"] == "42"


_WORD = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=20)


@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    question=_WORD.filter(lambda w: not w.startswith("-") and not re.fullmatch(r"[-+.\deE]+|auto", w)),
    order=st.permutations(["TEXT", "--hybrid", "--diversify", "--rerank", "-k3"]),
)
def test_any_question_in_any_order_stays_the_question(question: str, order: list[str]) -> None:
    args = build_parser().parse_args(["query", *(question if w == "TEXT" else w for w in order)])
    assert (args.text, args.hybrid, args.diversify, args.top_k) == (question, "auto", 0.5, 3)


def test_serve_hybrid_stands_bare_or_takes_a_number() -> None:
    parser = build_parser()
    assert parser.parse_args(["serve", "--hybrid", "--rerank"]).hybrid == "auto"
    assert parser.parse_args(["serve", "--hybrid", "0.4"]).hybrid == 0.4
    assert parser.parse_args(["serve", "--hybrid"]).hybrid == "auto"


def test_hits_say_which_pages_and_which_clean_heading(run: Run, db: Path) -> None:
    result = run("query", "read a file line by line newline", "--uri", str(db), "-k", "10")
    assert result.code == EXIT_OK, result.err
    labels = [line.split("  ", 1)[1] for line in result.out.splitlines() if re.match(r" ?\d+\. ", line)]
    assert "manual.pdf (pp. 1–2)" in labels
    assert "api.html § Async hooks › Class: AsyncHook" in labels
    assert "api.html § Async hooks › Struct HashMap › Examples" in labels
    assert not [label for label in labels if re.search(r"[#§¶]$|Copy item path|§ .*§", label)]
    data = json.loads(run("query", "newline", "--uri", str(db), "-k", "10", "--json").out)
    pdf = next(r for r in data["results"] if r["source"] == "manual.pdf")
    assert pdf["page_span"] == {"first_page": 1, "last_page": 2}
