"""The retrieval-callbacks docs page and the glue examples run, and show what they claim."""

from __future__ import annotations

import importlib.util
import inspect
import subprocess
import sys
from types import ModuleType

import pytest

import turnkit.batteries.vector as vector

from .._snippets import ROOT, python_blocks, run_snippet

# The page's own snippets run with every other page in tests/test_docs.py.


def test_docstring_example_runs() -> None:
    [block] = python_blocks(inspect.getdoc(vector.create_vector_retrievable_callbacks) or "")
    run_snippet(block, name="<docstring>")


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


def test_hyde_finds_what_the_question_alone_misses(capsys) -> None:
    outcome = load("hyde").main()
    assert outcome.plain_ids == ["help-tracking"]
    assert outcome.hyde_ids == ["policy-damaged"]
    assert outcome.draft.startswith("Damaged items are refunded")
    assert outcome.used == [("policy-damaged", "first-party")]
    assert outcome.reply.endswith("[policies/damaged-items.md]")
    assert "HyDE search: ['policy-damaged']" in capsys.readouterr().out


def test_query_rewrite_resolves_the_pronoun_from_history() -> None:
    outcome = load("query_rewrite").main()
    assert outcome.rewritten == ["Aurora X2 headphones", "Aurora X2 warranty"]
    assert outcome.retrieved == [["aurora-overview"], ["aurora-warranty"]]
    assert outcome.plain_ids == ["nimbus-warranty"]
    assert outcome.replies[-1] == "See products/aurora-x2-warranty.md."


@pytest.mark.parametrize("name", ["hyde", "query_rewrite"])
def test_examples_run_as_scripts(name: str) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / f"{name}.py")], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    assert "policy-damaged" in out.stdout if name == "hyde" else "aurora-warranty" in out.stdout


def test_public_names_are_exported_and_sorted() -> None:
    assert vector.__all__ == sorted(vector.__all__)
    from turnkit.batteries.vector._glue_parts import GLUE_METADATA_KEYS

    assert GLUE_METADATA_KEYS  # the glue's own keys, kept out of the public names
    for name in (
        "RetrievableSkippedWarning",
        "VectorRetrievableCallbacks",
        "VectorRetrievableGlue",
        "create_vector_retrievable_callbacks",
    ):
        assert name in vector.__all__ and hasattr(vector, name)
    glue_codes = {"E_INVALID_RETRIEVABLE_GLUE_CONFIG", "E_VECTOR_GLUE_RESERVED_METADATA_KEY"}
    assert glue_codes <= set(vector.VectorStoreUsageError.hints)
    assert vector.VectorRetrievableGlue.__doc__ and vector.VectorRetrievableCallbacks.__doc__
