"""docs/integrations/*.md: each ```python block runs (its framework installed) and prints what it shows."""

from __future__ import annotations

import contextlib
import io
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "integrations"
# The module a page's snippets need; a page not listed needs only turnkit.
REQUIRES = {
    "pydantic-ai.md": "pydantic_ai",
    "langchain.md": "langchain_core",
    "llamaindex.md": "llama_index.core",
    "openai-agents.md": "agents",
    "google-adk.md": "google.adk",  # not installable next to turnkit's pins: skipped here
}


def _python_blocks(text: str) -> list[str]:
    # The same convention as tests/test_docs.py: fenced ```python blocks, run in order, each on its own.
    return [textwrap.dedent(b) for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)]


def _snippets() -> list[Any]:
    return [
        pytest.param(page.name, block, id=f"{page.name}#{i}")
        for page in sorted(DOCS.glob("*.md"))
        for i, block in enumerate(_python_blocks(page.read_text()))
    ]


@pytest.mark.parametrize(("page", "code"), _snippets())
def test_snippet_runs_and_prints_what_it_shows(
    page: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if page in REQUIRES:
        pytest.importorskip(REQUIRES[page])
    monkeypatch.chdir(tmp_path)
    # A real module, so dataclasses (and pydantic) defined in a snippet can resolve their module.
    module = types.ModuleType("__snippet__")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"<{page}>", "exec"), module.__dict__)
    shown = [line[3:] for line in code.splitlines() if line.startswith("#> ")]
    printed = out.getvalue().splitlines()
    it = iter(printed)
    missing = [line for line in shown if not any(line == p for p in it)]
    assert missing == [], f"printed: {printed}"


def test_every_page_has_snippets_and_the_index_lists_it() -> None:
    index = (DOCS / "index.md").read_text()
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "index.md":
            assert _python_blocks(page.read_text()), page.name
            assert f"({page.name})" in index, page.name
    assert "docs/integrations/index.md" in (ROOT / "README.md").read_text()


@pytest.mark.parametrize("page", sorted(DOCS.glob("*.md")), ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    broken = [t for t in targets if "://" not in t and not (page.parent / t).exists()]
    assert broken == []
