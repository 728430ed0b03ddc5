"""docs/integrations/*.md: each page has snippets (run by tests/test_docs.py), is indexed, links resolve."""

from __future__ import annotations

import re
import textwrap
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
