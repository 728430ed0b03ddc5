"""The docs ship inside the wheel, and the console script is declared."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from turnkit.cli import shipped_docs

ROOT = Path(__file__).resolve().parents[2]


def test_the_console_script_points_at_main() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["scripts"] == {"turnkit": "turnkit.cli:main"}
    assert "_docs/*.md" in project["tool"]["setuptools"]["package-data"]["turnkit"]


def test_shipped_docs_are_the_docs_folder() -> None:
    folder = shipped_docs()
    assert folder == ROOT / "src" / "turnkit" / "_docs"
    assert folder.resolve() == (ROOT / "docs").resolve()


def test_a_built_wheel_contains_every_docs_page(tmp_path: Path) -> None:
    # Build from a copy, so the checkout gets no build/ or egg-info litter.
    src = tmp_path / "src-tree"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "docs", src / "docs")
    shutil.copytree(ROOT / "src", src / "src", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    assert (src / "src" / "turnkit" / "_docs").is_symlink()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            ".",
        ],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (wheel,) = tmp_path.glob("turnkit-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        pages = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
        assert pages and {f"turnkit/_docs/{p}" for p in pages} <= names
        # Real files, with the pages' text, not links.
        assert archive.read("turnkit/_docs/cli.md") == (ROOT / "docs" / "cli.md").read_bytes()
        assert {"turnkit/cli/__init__.py", "turnkit/cli/_main.py", "turnkit/py.typed"} <= names
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert "turnkit = turnkit.cli:main" in archive.read(entry_points).decode()
