"""docs/integrations/google-adk.md runs here, where google-adk is installed (tests/test_docs.py skips it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .._snippets import REQUIRES, ROOT, page_snippets, run_snippet

PAGE = ROOT / "docs" / "integrations" / "google-adk.md"


@pytest.mark.parametrize(("name", "code"), [pytest.param(n, c, id=n) for n, c in page_snippets([PAGE])])
def test_page_snippet_runs(name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the snippets' store lives under the current directory
    run_snippet(code, name=name)


def test_the_main_run_skips_this_page_for_want_of_google_adk() -> None:
    assert REQUIRES["docs/integrations/google-adk.md"] == "google.adk"
    assert len(page_snippets([PAGE])) >= 3
