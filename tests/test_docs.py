"""README and docs pages: snippets run, links resolve, the error table is current, examples run."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _python_blocks(text: str) -> list[str]:
    return [textwrap.dedent(b) for b in re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)]


def _snippets() -> list[Any]:
    return [
        pytest.param(block, id=f"{page.relative_to(ROOT)}#{i}")
        for page in PAGES
        for i, block in enumerate(_python_blocks(page.read_text()))
    ]


@pytest.mark.parametrize("code", _snippets())
def test_snippet_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Snippets that use the default location write under the current directory.
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<snippet>", "exec"), {"__name__": "__snippet__"})


def test_there_are_snippets_on_the_main_pages() -> None:
    for name in ["README.md", "docs/store.md", "docs/filters.md", "docs/trust-tiers.md"]:
        assert _python_blocks((ROOT / name).read_text()), name


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


@pytest.mark.parametrize("example", sorted((ROOT / "examples").glob("*.py")), ids=lambda p: p.name)
def test_example_runs(example: Path, tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip(), "an example should show what it did"
