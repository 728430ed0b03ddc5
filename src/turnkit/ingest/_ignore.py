"""Which walked files an ingest reads: ``--include``/``--exclude`` patterns and ``.gitignore`` files.

Patterns use git's wildmatch syntax (``*.md``, ``docs/**``, ``build/``,
``!keep.md``) and match paths relative to the walked directory. ``.gitignore``
files inside the walked tree apply below their own directory, deeper files
after shallower ones, so the last matching rule wins, as in git.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pathspec

from ._errors import IngestUsageError

__all__ = ["FileFilter", "check_patterns"]

_MAX_GITIGNORE_BYTES = 1 << 20  # a bigger .gitignore is not a real one: read the first MiB
_pattern_error = partial(
    IngestUsageError,
    code="E_INGEST_INVALID_OPTION",
    hint="Use git's syntax, e.g. '*.md', 'docs/**' or 'build/'.",
)


def check_patterns(patterns: Sequence[str] | str | None, option: str) -> tuple[str, ...]:
    """Validated wildmatch patterns for ``option`` (a lone string is one pattern).

    Raises:
        IngestUsageError: ``E_INGEST_INVALID_OPTION``: a pattern that is not a non-empty string or does not
            compile.
    """
    if patterns is None:
        return ()
    if isinstance(patterns, str):
        patterns = (patterns,)
    checked = tuple(patterns)
    for pattern in checked:
        if not isinstance(pattern, str) or not pattern.strip():
            raise _pattern_error(f"{option} patterns must be non-empty strings; got {pattern!r}.")
    try:
        pathspec.GitIgnoreSpec.from_lines(checked)
    except (ValueError, TypeError) as exc:
        raise _pattern_error(f"Invalid {option} pattern: {exc}.") from None
    return checked


def _rebase(line: str, prefix: str) -> str | None:
    """A ``.gitignore`` line of directory ``prefix`` as a pattern relative to the walked root."""
    line = line.rstrip("\n\r")
    if not line.strip() or line.startswith("#"):
        return None
    if not prefix:
        return line
    bang, body = ("!", line[1:]) if line.startswith("!") else ("", line)
    if "/" in body.rstrip("/"):  # anchored to the .gitignore's own directory
        body = body.lstrip("/")
    else:  # a bare name matches at any depth below it
        body = "**/" + body
    return f"{bang}{prefix}/{body}"


@dataclass(slots=True)
class FileFilter:
    """Decides, during one directory walk, which files are read and which directories are entered."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    gitignore: bool = True
    ignored: int = 0
    _include: pathspec.GitIgnoreSpec | None = field(default=None, init=False)
    _exclude: pathspec.GitIgnoreSpec | None = field(default=None, init=False)
    _git_lines: list[str] = field(default_factory=list, init=False)
    _git: pathspec.GitIgnoreSpec | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.include:
            self._include = pathspec.GitIgnoreSpec.from_lines(self.include)
        if self.exclude:
            self._exclude = pathspec.GitIgnoreSpec.from_lines(self.exclude)

    def for_root(self) -> FileFilter:
        """A fresh filter, with the same patterns, for another walked directory."""
        return FileFilter(self.include, self.exclude, self.gitignore)

    def enter(self, directory: Path, rel: str) -> None:
        """Read ``directory``'s ``.gitignore`` (``rel``: its path from the root, ``""`` for the root)."""
        if not self.gitignore:
            return
        try:
            with open(directory / ".gitignore", "rb") as f:
                text = f.read(_MAX_GITIGNORE_BYTES).decode("utf-8", "replace")
        except OSError:
            return
        lines = [r for r in (_rebase(line, rel) for line in text.splitlines()) if r is not None]
        if lines:
            self._git_lines.extend(lines)
            self._git = pathspec.GitIgnoreSpec.from_lines(self._git_lines)

    def _left_out(self, path: str) -> bool:
        return bool(
            (self._git is not None and self._git.match_file(path))
            or (self._exclude is not None and self._exclude.match_file(path))
        )

    def skips_dir(self, rel: str) -> bool:
        """Whether a directory is left out whole (ignored by ``.gitignore`` or ``exclude``)."""
        return self._left_out(rel + "/")

    def reads(self, rel: str) -> bool:
        """Whether the file at ``rel`` is read; a file left out is counted in ``ignored``."""
        keep = not self._left_out(rel) and (self._include is None or bool(self._include.match_file(rel)))
        if not keep:
            self.ignored += 1
        return keep
