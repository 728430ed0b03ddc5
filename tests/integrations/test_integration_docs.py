"""docs/integrations/*.md: each page has snippets and is in the index (tests/test_docs.py runs them)."""

from __future__ import annotations

from .._snippets import ROOT, python_blocks

DOCS = ROOT / "docs" / "integrations"


def test_every_page_has_snippets_and_the_index_lists_it() -> None:
    index = (DOCS / "index.md").read_text()
    for page in sorted(DOCS.glob("*.md")):
        if page.name != "index.md":
            assert python_blocks(page.read_text()), page.name
            assert f"({page.name})" in index, page.name
    assert "docs/integrations/index.md" in (ROOT / "README.md").read_text()
