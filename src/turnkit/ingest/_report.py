"""What an ingestion run did: :class:`IngestReport`, its :class:`FileIssue` entries and skip groups."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FileIssue",
    "IngestProgress",
    "IngestReport",
    "RATE_MIN_CHUNKS",
    "RATE_MIN_SECONDS",
    "SKIP_EXAMPLES",
    "SKIP_LINES",
    "SkipGroup",
    "SkipTally",
]

# Below these a run's rate mostly measures its start-up (opening the store, loading the model).
RATE_MIN_CHUNKS = 100
RATE_MIN_SECONDS = 1.0

SKIP_EXAMPLES = 3
"""Skipped files a report keeps per reason; the others are only counted (``on_skip`` sees them all)."""
SKIP_LINES = 10
"""Skip reasons a report prints a line each, the largest first; the others share one line."""
_MAX_GROUPS = 64  # distinct reasons kept apart; a tree of odd extensions (log.1, log.2…) must not grow it
_OTHER = "other reasons"
_DETAIL = re.compile(r"\s*\([^()]*\)\.?$")  # a trailing "(5,000 bytes)": per file, not per reason


@dataclass(frozen=True, kw_only=True)
class FileIssue:
    """A file that was skipped or failed, and why."""

    path: str
    """The file, as found (the path given or walked)."""
    reason: str
    """One line saying what happened."""
    code: str
    """The stable error code (``E_INGEST_*``); ``E_INGEST_NO_TEXT`` for files with no extractable text."""
    hint: str = ""
    """What to do about it (the error's hint), or empty."""

    def __str__(self) -> str:
        return f"{self.path}: {self.reason} [{self.code}]"


@dataclass(frozen=True, kw_only=True)
class SkipGroup:
    """The skipped files that share a reason: how many, and the first few of them."""

    code: str
    """The stable code the files were skipped with (``E_INGEST_UNSUPPORTED_FILE``…)."""
    reason: str
    """The shared reason, without per-file detail (``No loader for '.png'``)."""
    count: int
    """How many files were skipped for it."""
    examples: tuple[FileIssue, ...]
    """The first ``SKIP_EXAMPLES`` of them."""


@dataclass(frozen=True, kw_only=True)
class IngestProgress:
    """How far a run has got; passed to ``ingest(on_progress=...)`` after each file and each commit."""

    files_total: int
    """Files found to read (skipped ones excluded)."""
    files_done: int
    """Files read and decided (written, unchanged, failed or without text)."""
    files_written: int
    """Files whose new chunks have all been committed."""
    chunks_written: int
    """Chunk records committed so far."""
    chunks_deleted: int
    """Stale chunk records removed so far."""


class SkipTally:
    """Skipped files counted per (code, reason), with a few examples each: memory stays bounded.

    Every issue is handed to ``on_skip`` first, so a caller that wants the
    whole list (``turnkit ingest --verbose``) streams it instead of keeping it.
    """

    def __init__(self, on_skip: Callable[[FileIssue], None] | None = None) -> None:
        self.on_skip = on_skip
        self.total = 0
        self._groups: dict[tuple[str, str], tuple[list[int], list[FileIssue]]] = {}

    def add(self, issue: FileIssue) -> None:
        if self.on_skip is not None:
            self.on_skip(issue)
        self.total += 1
        key = (issue.code, _DETAIL.sub("", issue.reason).rstrip(".") or issue.reason)
        if key not in self._groups and len(self._groups) >= _MAX_GROUPS:
            key = (issue.code, _OTHER)
        count, examples = self._groups.setdefault(key, ([0], []))
        count[0] += 1
        if len(examples) < SKIP_EXAMPLES:
            examples.append(issue)

    def groups(self) -> tuple[SkipGroup, ...]:
        """The groups, the largest first."""
        made = [
            SkipGroup(code=code, reason=reason, count=count[0], examples=tuple(examples))
            for (code, reason), (count, examples) in self._groups.items()
        ]
        return tuple(sorted(made, key=lambda g: (-g.count, g.code, g.reason)))


@dataclass(frozen=True, kw_only=True)
class IngestReport:
    """The summary of one :func:`~turnkit.ingest.ingest` run.

    ``str(report)`` is a short human summary; the fields are for programs.
    """

    collection: str
    """The collection written to."""
    files_seen: int
    """Files found: ``files_written + files_unchanged + files_skipped + len(errors)``."""
    files_written: int
    """Files whose chunks were written or whose stale chunks were removed."""
    files_unchanged: int
    """Files whose stored chunks were already complete and current: nothing written."""
    files_pruned: int
    """Files gone from disk whose chunks were removed (``prune=True``)."""
    files_ignored: int = 0
    """Walked files left out by ``include``/``exclude`` patterns or ``.gitignore`` (not in ``files_seen``)."""
    files_skipped: int = 0
    """Files not ingested on purpose (all of them, while `skipped` keeps only examples)."""
    chunks_written: int
    """Chunk records upserted."""
    chunks_deleted: int
    """Chunk records removed: stale chunks of changed files plus pruned files' chunks."""
    skip_groups: tuple[SkipGroup, ...] = ()
    """The skipped files grouped by code and reason, the largest group first."""
    skipped: tuple[FileIssue, ...] = ()
    """Examples of files not ingested on purpose: the first ``SKIP_EXAMPLES`` (3) of each skip group."""
    errors: tuple[FileIssue, ...] = ()
    """Files that could not be read or parsed (every one); the run went on without them."""
    elapsed_s: float = 0.0
    """Wall-clock seconds for the whole run."""
    settings: dict[str, Any] = field(default_factory=dict)
    """The chunking and batching settings used."""

    @property
    def ok(self) -> bool:
        """``True`` when no file failed."""
        return not self.errors

    @property
    def chunks_per_second(self) -> float:
        """Chunks written per second of the run (see `rate_is_meaningful`)."""
        return self.chunks_written / self.elapsed_s if self.elapsed_s > 0 else 0.0

    @property
    def rate_is_meaningful(self) -> bool:
        """Whether the run was long enough for `chunks_per_second` to say something.

        It takes ``RATE_MIN_CHUNKS`` (100) chunks over ``RATE_MIN_SECONDS`` (1 s);
        a shorter run's rate is mostly its start-up. The summary shows the rate only then.
        """
        return self.chunks_written >= RATE_MIN_CHUNKS and self.elapsed_s >= RATE_MIN_SECONDS

    def summary_line(self) -> str:
        """The one-line summary: counts of files and chunks, and the time taken."""
        rate = f" ({self.chunks_per_second:,.1f}/s)" if self.rate_is_meaningful else ""
        ignored = f", {self.files_ignored:,} ignored by patterns" if self.files_ignored else ""
        return (
            f"Ingested into {self.collection!r} in {self.elapsed_s:.2f} s: "
            f"{self.files_seen:,} files ({self.files_written:,} written, {self.files_unchanged:,} unchanged, "
            f"{self.files_skipped:,} skipped, {len(self.errors):,} errors, {self.files_pruned:,} pruned"
            f"{ignored}); {self.chunks_written:,} chunks written{rate}, {self.chunks_deleted:,} deleted."
        )

    def skip_lines(self, *, more: str = "") -> list[str]:
        """A line per skip group (count, reason, code, examples) for the largest `SKIP_LINES`, then one more.

        ``more`` ends the heading.
        """
        if not self.files_skipped:
            return []
        lines = [f"Skipped {self.files_skipped:,} file(s){more}:"]
        width = len(f"{self.skip_groups[0].count:,}") if self.skip_groups else 1
        for group in self.skip_groups[:SKIP_LINES]:
            shown = ", ".join(issue.path for issue in group.examples)
            rest = group.count - len(group.examples)
            tail = f", … {rest:,} more" if rest > 0 else ""
            lines.append(f"  {group.count:>{width},}  {group.reason} [{group.code}]: {shown}{tail}")
        if folded := self.skip_groups[SKIP_LINES:]:
            files, reasons = sum(g.count for g in folded), len(folded)
            lines.append(f"  {files:>{width},}  for {reasons:,} other reasons (--verbose lists every file)")
        return lines

    def error_lines(self) -> list[str]:
        """Every error, each with its hint (a hint several errors share is printed once, after the first)."""
        if not self.errors:
            return []
        lines = [f"{len(self.errors):,} file(s) could not be read:"]
        hinted: set[str] = set()
        for issue in self.errors:
            lines.append(f"  error: {issue}")
            if issue.hint and issue.hint not in hinted:
                hinted.add(issue.hint)
                lines.append(f"    Hint: {issue.hint}")
        return lines

    def __str__(self) -> str:
        return "\n".join([self.summary_line(), *self.skip_lines(), *self.error_lines()])
