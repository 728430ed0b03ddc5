"""README and docs pages: snippets run, links resolve, the error table is current, examples run."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from ._snippets import REQUIRES, ROOT, doc_pages, page_snippets, python_blocks, run_snippet

PAGES = doc_pages()


@pytest.mark.parametrize(("name", "code"), [pytest.param(n, c, id=n) for n, c in page_snippets()])
def test_snippet_runs_and_prints_what_it_says(
    name: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    page = name.split("#")[0]
    if page in REQUIRES:
        pytest.importorskip(REQUIRES[page])
    # Snippets that use the default location write under the current directory.
    monkeypatch.chdir(tmp_path)
    try:
        run_snippet(code, name=name)
    finally:
        _close_leftover_loop()


def _close_leftover_loop() -> None:
    """Finish the event loop a framework's ``run_sync`` leaves set (pydantic-ai does), as exiting would."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running() and not loop.is_closed():
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    asyncio.set_event_loop(None)


def test_there_are_snippets_on_the_main_pages() -> None:
    for name in [
        "README.md",
        "docs/store.md",
        "docs/filters.md",
        "docs/trust-tiers.md",
        "docs/retrieval-callbacks.md",
        "docs/vector-query-tool.md",
        "docs/retrieve-contexts.md",
        "docs/mcp.md",
    ]:
        assert python_blocks((ROOT / name).read_text()), name
    assert len(python_blocks((ROOT / "docs" / "retrieval-callbacks.md").read_text())) >= 7
    assert sum("#>" in code for _, code in page_snippets()) >= 15


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if "://" in target or target.startswith("mailto:"):
            continue
        if not (page.parent / target).exists():
            broken.append(target)
    assert broken == []


def test_readme_starts_with_the_two_commands() -> None:
    head = (ROOT / "README.md").read_text().split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in head.splitlines() if line.strip()]
    assert commands == ["scripts/demo", "scripts/test"]
    for command in commands:
        assert os.access(ROOT / command, os.X_OK)
    assert "scripts/test" in (ROOT / ".ci" / "run").read_text()


def test_readme_lists_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    unlisted = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if f"docs/{p.name}" not in readme]
    assert unlisted == []


def test_error_table_matches_the_registry() -> None:
    spec = importlib.util.spec_from_file_location("errors_doc", ROOT / "scripts" / "errors_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert (ROOT / "docs" / "errors.md").read_text() == module.render(), (
        "docs/errors.md is stale: run `python scripts/errors_doc.py > docs/errors.md`"
    )


def test_generated_settings_tables_match_the_code() -> None:
    spec = importlib.util.spec_from_file_location("settings_doc", ROOT / "scripts" / "settings_doc.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, page in module.PAGES.items():
        assert module.block(page.read_text(), name) == module.RENDER[name](), (
            f"{page.name}'s {name} table is stale: run `python scripts/settings_doc.py`"
        )
    assert "| `hybrid` | `HybridSpec \\| None` | `HybridSpec()` |" in module.render_fields()


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_example_runs(example: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip(), "an example should show what it did"
