"""What an ingestion run did: :class:`IngestReport` and its per-file :class:`FileIssue` entries."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["FileIssue", "IngestReport", "RATE_MIN_CHUNKS", "RATE_MIN_SECONDS"]

# Below these a run's rate mostly measures its start-up (opening the store, loading the model).
RATE_MIN_CHUNKS = 100
RATE_MIN_SECONDS = 1.0


@dataclass(frozen=True, kw_only=True)
class FileIssue:
    """A file that was skipped or failed, and why."""

    path: str
    """The file, as found (the path given or walked)."""
    reason: str
    """One line saying what happened."""
    code: str
    """The stable error code (``E_INGEST_*``); ``E_INGEST_NO_TEXT`` for files with no extractable text."""

    def __str__(self) -> str:
        return f"{self.path}: {self.reason} [{self.code}]"


@dataclass(frozen=True, kw_only=True)
class IngestReport:
    """The summary of one :func:`~turnkit.ingest.ingest` run.

    ``str(report)`` is a short human summary; the fields are for programs.
    """

    collection: str
    """The collection written to."""
    files_seen: int
    """Files found: ``files_written + files_unchanged + len(skipped) + len(errors)``."""
    files_written: int
    """Files whose chunks were written or whose stale chunks were removed."""
    files_unchanged: int
    """Files whose stored chunks were already complete and current: nothing written."""
    files_pruned: int
    """Files gone from disk whose chunks were removed (``prune=True``)."""
    files_ignored: int = 0
    """Walked files left out by ``include``/``exclude`` patterns or ``.gitignore`` (not in ``files_seen``)."""
    chunks_written: int
    """Chunk records upserted."""
    chunks_deleted: int
    """Chunk records removed: stale chunks of changed files plus pruned files' chunks."""
    skipped: tuple[FileIssue, ...] = ()
    """Files not ingested on purpose: no loader for the extension, or no text to index."""
    errors: tuple[FileIssue, ...] = ()
    """Files that could not be read or parsed; the run went on without them."""
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

    def __str__(self) -> str:
        rate = f" ({self.chunks_per_second:.1f}/s)" if self.rate_is_meaningful else ""
        ignored = f", {self.files_ignored} ignored by patterns" if self.files_ignored else ""
        lines = [
            f"Ingested into {self.collection!r} in {self.elapsed_s:.2f} s: "
            f"{self.files_seen} files ({self.files_written} written, {self.files_unchanged} unchanged, "
            f"{len(self.skipped)} skipped, {len(self.errors)} errors, {self.files_pruned} pruned{ignored}); "
            f"{self.chunks_written} chunks written{rate}, {self.chunks_deleted} deleted."
        ]
        for issue in self.errors[:20]:
            lines.append(f"  error: {issue}")
        if len(self.errors) > 20:
            lines.append(f"  … and {len(self.errors) - 20} more errors")
        return "\n".join(lines)
