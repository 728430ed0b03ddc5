"""Where turnkit's own documentation is, for ``turnkit demo``.

The pages live in ``docs/`` at the top of the repository, where readers find
them. The package reaches them as ``turnkit/_docs``: in a checkout that is a
symlink to ``../../docs`` (so an editable install sees the live pages), and a
wheel stores the files themselves (``_docs/*.md`` is package data, and
setuptools copies through the link).
"""

from __future__ import annotations

from pathlib import Path

from ._errors import CliRuntimeError

__all__ = ["shipped_docs"]


def shipped_docs() -> Path:
    """The folder of Markdown pages shipped with the package.

    Raises:
        CliRuntimeError: ``E_CLI_DOCS_NOT_FOUND``, neither the packaged pages nor a checkout's
            ``docs/`` exist.
    """
    package = Path(__file__).resolve().parent.parent
    candidates = [
        package / "_docs",
        # A checkout whose symlink was not materialised (git on Windows without core.symlinks).
        package.parent.parent / "docs",
    ]
    for folder in candidates:
        if folder.is_dir() and any(folder.glob("*.md")):
            return folder
    raise CliRuntimeError(
        f"turnkit's documentation is not installed (looked in {', '.join(map(str, candidates))}).",
        code="E_CLI_DOCS_NOT_FOUND",
        looked_in=str(candidates[0]),
    )
