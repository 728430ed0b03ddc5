"""Finding the files of an ingest run: walking folders, the skip rules, symlink policy."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote_from_bytes

from ._errors import FileSkippedError, IngestUsageError
from ._ignore import FileFilter
from ._loaders import detect_kind, source_uri_for
from ._model import DocumentKind
from ._report import FileIssue, SkipTally

__all__ = ["Candidate", "Found", "PathInput", "issue_of", "walk"]

PathInput = str | os.PathLike[str]
"""A file or directory path."""


@dataclass(frozen=True, slots=True)
class Candidate:
    path: str
    uri: str
    display_name: str
    kind: DocumentKind


def issue_of(path: str, exc: Exception) -> FileIssue:
    reason = getattr(exc, "reason", None) or getattr(exc, "message", None) or str(exc)
    hint = getattr(exc, "hint", None) or ""
    code = getattr(exc, "code", "E_INGEST_LOAD_FAILED")
    return FileIssue(path=path, reason=str(reason), code=code, hint=str(hint))


@dataclass(slots=True)
class Found:
    candidates: list[Candidate] = field(default_factory=list)
    skips: SkipTally = field(default_factory=SkipTally)
    errors: list[FileIssue] = field(default_factory=list)
    prune_prefixes: list[str] = field(default_factory=list)
    missing_uris: list[str] = field(default_factory=list)
    ignored: int = 0
    # What patterns and .gitignore left out, for prune: file URIs, and URI prefixes of skipped folders.
    left_out: set[str] = field(default_factory=set)
    left_out_prefixes: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(("write", "repair", "unchanged"), 0))

    def unreadable(self, path: str, reason: str) -> None:
        self.errors.append(FileIssue(path=path, reason=reason, code="E_INGEST_READ_FAILED"))

    def record(self, status: str, issue: FileIssue | None) -> None:
        """Count a file once it is decided: by its status, or as an error or a skip."""
        if status in self.counts:
            self.counts[status] += 1
        elif issue is not None and status == "error":
            self.errors.append(issue)
        elif issue is not None:
            self.skips.add(issue)


def walk(
    paths: Sequence[PathInput],
    extensions: dict[str, DocumentKind],
    *,
    follow_external_symlinks: bool = False,
    files: FileFilter | None = None,
    skips: SkipTally | None = None,
) -> Found:
    """Every file to consider, in a deterministic order, deduplicated by resolved URI.

    ``files`` (include/exclude patterns, ``.gitignore``) applies to the files
    found inside a given directory; a file given by name is always considered.
    """
    base = files if files is not None else FileFilter(gitignore=False)
    found = Found(skips=skips if skips is not None else SkipTally())
    seen: set[str] = set()
    roots: list[Path] = []
    for given in paths:
        try:
            roots.append(Path(given).expanduser().resolve())
        except (OSError, RuntimeError):
            continue

    def outside(path: Path) -> bool:
        """Whether a symlink's target lies outside every given path."""
        target = path.resolve()
        return not any(target == root or target.is_relative_to(root) for root in roots)

    def consider(path: Path, display_name: str, folder_uri: str | None = None) -> None:
        try:
            if folder_uri is not None and not os.path.islink(path):
                # What source_uri_for returns for a file that is not a symlink, without resolving
                # every component of its path again (most of the walk's time).
                uri, external = folder_uri + quote_from_bytes(os.fsencode(path.name)), False
            else:
                uri = source_uri_for(path)
                external = path.is_symlink() and not follow_external_symlinks and outside(path)
        except (OSError, RuntimeError) as exc:  # a symlink loop
            found.unreadable(str(path), f"cannot resolve: {exc}")
            return
        if external:
            reason = "a symlink to a target outside the ingested paths"
            found.skips.add(issue_of(str(path), FileSkippedError(reason, code="E_INGEST_EXTERNAL_SYMLINK")))
            return
        if uri in seen:
            return
        seen.add(uri)
        try:
            kind = detect_kind(path, extensions)
        except IngestUsageError as exc:
            if exc.code != "E_INGEST_UNSUPPORTED_FILE":
                raise
            found.skips.add(issue_of(str(path), exc))
            return
        # A name that is not valid UTF-8 arrives with lone surrogates, which the store refuses.
        readable = os.fsencode(display_name).decode("utf-8", "replace")
        found.candidates.append(Candidate(str(path), uri, readable, kind))

    for given in paths:
        path = Path(given).expanduser()
        if path.is_dir():
            found.prune_prefixes.append(_folder_uri(path))

            rules = base.for_root()
            for dirpath, dirnames, filenames in os.walk(
                path,
                onerror=lambda e: found.unreadable(
                    str(e.filename), f"cannot list directory: {e.strerror or e}"
                ),
            ):
                here = Path(dirpath)
                rel_dir = here.relative_to(path).as_posix()
                prefix = "" if rel_dir == "." else rel_dir
                rules.enter(here, prefix)
                folder_uri = None
                if not dirpath.startswith("~"):  # source_uri_for would expand it
                    with suppress(OSError, RuntimeError):  # each file then reports its own error
                        folder_uri = _folder_uri(here)
                # Hidden entries (.git, .venv, .DS_Store…) are never documents.
                kept = []
                for d in sorted(dirnames):
                    if d.startswith("."):
                        continue
                    if rules.skips_dir(f"{prefix}/{d}" if prefix else d):
                        found.left_out_prefixes.append(_folder_uri(here / d))
                    else:
                        kept.append(d)
                dirnames[:] = kept
                for name in sorted(filenames):
                    if not name.startswith("."):
                        rel = f"{prefix}/{name}" if prefix else name
                        if rules.reads(rel):
                            consider(here / name, rel, folder_uri)
                        else:
                            found.left_out.add(source_uri_for(here / name))
            found.ignored += rules.ignored
        elif path.exists() or path.is_symlink():
            consider(path, path.name)
        else:
            found.missing_uris.append(source_uri_for(path))
            found.unreadable(str(path), "no such file or directory")
    return found


def _folder_uri(folder: Path) -> str:
    """``source_uri_for(folder)`` ending in ``/``: the start of the URI of every file in it."""
    uri = source_uri_for(folder)
    return uri if uri.endswith("/") else uri + "/"
