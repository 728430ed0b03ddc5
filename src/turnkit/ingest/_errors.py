"""The ``E_INGEST_*`` errors of :mod:`turnkit.ingest`.

```
TurnkitError
├── UsageError
│   └── IngestUsageError                 E_INGEST_USAGE
│       ├── InvalidChunkingError         E_INGEST_INVALID_CHUNKING
│       ├── InvalidIngestOptionError     E_INGEST_INVALID_OPTION
│       ├── UnsupportedDocumentError     E_INGEST_UNSUPPORTED_FILE
│       ├── IngestDependencyMissingError E_INGEST_DEPENDENCY_MISSING
│       └── FileSkippedError             E_INGEST_FILE_SKIPPED
│           ├── SpecialFileError         E_INGEST_SPECIAL_FILE
│           ├── FileTooLargeError        E_INGEST_FILE_TOO_LARGE
│           └── ExternalSymlinkError     E_INGEST_EXTERNAL_SYMLINK
└── RuntimeFailure
    └── DocumentLoadError                E_INGEST_LOAD_FAILED
        ├── DocumentReadError            E_INGEST_READ_FAILED
        ├── DocumentDecodeError          E_INGEST_DECODE_FAILED
        └── DocumentParseError           E_INGEST_PARSE_FAILED
```

During :func:`turnkit.ingest.ingest` the per-file errors (every
:class:`DocumentLoadError`, :class:`UnsupportedDocumentError` and
:class:`FileSkippedError`) are not raised: they are recorded in the report with
the file's path and the run goes on. Called directly, :func:`turnkit.ingest.load_document` raises them.
"""

from __future__ import annotations

from .._errors import RuntimeFailure, UsageError

__all__ = [
    "DocumentDecodeError",
    "DocumentLoadError",
    "DocumentParseError",
    "DocumentReadError",
    "ExternalSymlinkError",
    "FileSkippedError",
    "FileTooLargeError",
    "IngestDependencyMissingError",
    "IngestUsageError",
    "InvalidChunkingError",
    "InvalidIngestOptionError",
    "SpecialFileError",
    "UnsupportedDocumentError",
]


class IngestUsageError(UsageError):
    """An ingestion call the caller must change."""

    code = "E_INGEST_USAGE"
    default_hint = "Check the arguments against docs/ingesting.md."


class InvalidChunkingError(IngestUsageError):
    """``chunk_size`` / ``chunk_overlap`` / ``encoding`` are not a valid combination."""

    code = "E_INGEST_INVALID_CHUNKING"
    default_hint = "Use chunk_size >= 1 and 0 <= chunk_overlap < chunk_size (the defaults are 1024 and 200)."


class InvalidIngestOptionError(IngestUsageError):
    """An ingestion option (batch size, extension map, paths…) is invalid."""

    code = "E_INGEST_INVALID_OPTION"
    default_hint = "Check the option against docs/ingesting.md; the message names the bad value."


class UnsupportedDocumentError(IngestUsageError):
    """The file's extension maps to no loader."""

    code = "E_INGEST_UNSUPPORTED_FILE"
    default_hint = "Rename the file, or map its extension to a loader, e.g. extensions={'.rst': 'text'}."


class IngestDependencyMissingError(IngestUsageError):
    """An optional dependency a loader needs is not installed."""

    code = "E_INGEST_DEPENDENCY_MISSING"
    default_hint = "Install the ingest extra: pip install 'turnkit[ingest]'."


class FileSkippedError(IngestUsageError):
    """A file turnkit does not read on purpose (listed in ``report.skipped``).

    Attributes:
        path: The file that was skipped.
        reason: A one-line reason, without the path.
    """

    code = "E_INGEST_FILE_SKIPPED"
    default_hint = "The reason names why; see docs/ingesting.md for what ingest reads."


class SpecialFileError(FileSkippedError):
    """Not a regular file: a FIFO, socket or device (which could block or never end)."""

    code = "E_INGEST_SPECIAL_FILE"
    default_hint = "Only regular files are read; copy the content into a regular file to ingest it."


class FileTooLargeError(FileSkippedError):
    """The file is larger than the ``max_file_size`` limit."""

    code = "E_INGEST_FILE_TOO_LARGE"
    default_hint = "Raise the limit (max_file_size=, or --max-file-size 200MB), or split the file."


class ExternalSymlinkError(FileSkippedError):
    """A symlink whose target lies outside every folder being ingested."""

    code = "E_INGEST_EXTERNAL_SYMLINK"
    default_hint = (
        "Ingest the target's folder too, or allow it: "
        "follow_external_symlinks=True (--follow-external-symlinks)."
    )


class DocumentLoadError(RuntimeFailure):
    """A file could not be turned into text.

    Attributes:
        path: The file that failed.
        reason: A one-line reason, without the path.
    """

    code = "E_INGEST_LOAD_FAILED"
    default_hint = "The message names the file and the reason; fix or skip that file and run ingest again."


class DocumentReadError(DocumentLoadError):
    """The file could not be read (missing, permissions, I/O error)."""

    code = "E_INGEST_READ_FAILED"
    default_hint = "Check that the file exists and is readable by this process."


class DocumentDecodeError(DocumentLoadError):
    """The file's bytes are not text in a supported encoding (or look binary)."""

    code = "E_INGEST_DECODE_FAILED"
    default_hint = (
        "Read it with a fallback: --fallback-encoding auto detects the encoding, or name it "
        "(--fallback-encoding cp1252; fallback_encodings=['auto'] in Python). Or save the file as UTF-8."
    )


class DocumentParseError(DocumentLoadError):
    """The file is text-bearing but its format is damaged (a corrupt PDF, for example)."""

    code = "E_INGEST_PARSE_FAILED"
    default_hint = "Open the file in a viewer to check it; re-export it if it is damaged."
