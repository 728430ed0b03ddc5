"""Helpers for the CLI tests: run the real `turnkit` entry point with a clean environment."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

TURNKIT = Path(sys.executable).with_name("turnkit")
# Variables the CLI reads; a developer's shell must not leak into the tests.
_SCRUB = ("TURNKIT_", "OPENAI_", "_TURNKIT_")


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB)}
    env["LANCEDB_LOG"] = "error"
    env.update(extra or {})
    return env


Run = Callable[..., Result]


@pytest.fixture
def run(tmp_path: Path) -> Run:
    """Run `.venv/bin/turnkit ARGS` in ``cwd`` (default: the test's tmp dir)."""
    assert TURNKIT.exists(), f"the console script is not installed at {TURNKIT}"

    def _run(
        *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> Result:
        proc = subprocess.run(
            [str(TURNKIT), *args],
            cwd=cwd or tmp_path,
            env=clean_env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    return _run


@pytest.fixture
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """For in-process `main([...])` calls: no TURNKIT_/OPENAI_ variables, cwd in tmp_path."""
    for key in list(os.environ):
        if key.startswith(_SCRUB):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    """A small folder of real documents: Markdown with sections, plain text, HTML."""
    root = tmp_path / "corpus"
    (root / "guides").mkdir(parents=True)
    (root / "guides" / "install.md").write_text(
        "# Install\n\n## Linux\n\nRun pip install turnkit on Linux.\n\n"
        "## Windows\n\nUse the Windows installer and then restart.\n"
    )
    (root / "faq.txt").write_text("Refunds reach the original card within five business days.\n")
    (root / "about.html").write_text(
        "<html><head><title>About</title><script>var hidden = 1;</script></head>"
        "<body><h1>About</h1><p>The shop ships from Lyon to every EU country.</p></body></html>"
    )
    return root
