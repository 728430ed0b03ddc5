"""The ``E_INGEST_*`` errors of :mod:`turnkit.ingest`.

```
TurnkitError
├── UsageError
│   └── IngestUsageError       E_INGEST_USAGE, E_INGEST_INVALID_CHUNKING, E_INGEST_INVALID_OPTION,
│       │                      E_INGEST_UNSUPPORTED_FILE, E_INGEST_DEPENDENCY_MISSING
│       └── FileSkippedError   E_INGEST_FILE_SKIPPED, E_INGEST_SPECIAL_FILE, E_INGEST_FILE_TOO_LARGE,
│                              E_INGEST_EXTERNAL_SYMLINK
└── RuntimeFailure
    └── DocumentLoadError      E_INGEST_LOAD_FAILED, E_INGEST_READ_FAILED, E_INGEST_DECODE_FAILED,
                               E_INGEST_PARSE_FAILED
```

During :func:`turnkit.ingest.ingest` the per-file errors (every
:class:`DocumentLoadError` and :class:`FileSkippedError`, and ``E_INGEST_UNSUPPORTED_FILE``) are not
raised: they are recorded in the report with the file's path and the run goes on. Called directly,
:func:`turnkit.ingest.load_document` raises them.
"""

from __future__ import annotations

from .._errors import RuntimeFailure, UsageError

__all__ = ["DocumentLoadError", "FileSkippedError", "IngestUsageError"]


class IngestUsageError(UsageError):
    """An ingestion call the caller must change."""

    hints = {
        "E_INGEST_USAGE": "Check the arguments against docs/ingesting.md.",
        "E_INGEST_INVALID_CHUNKING": (
            "Use chunk_size >= 1 and 0 <= chunk_overlap < chunk_size (the defaults are 1024 and 200)."
        ),
        "E_INGEST_INVALID_OPTION": (
            "Check the option against docs/ingesting.md; the message names the bad value."
        ),
        "E_INGEST_UNSUPPORTED_FILE": (
            "Rename the file, or map its extension to a loader, e.g. extensions={'.rst': 'text'}."
        ),
        "E_INGEST_DEPENDENCY_MISSING": "Install the ingest extra: pip install 'turnkit[ingest]'.",
    }


class FileSkippedError(IngestUsageError):
    """A file turnkit does not read on purpose (listed in ``report.skipped``).

    Attributes:
        path: The file that was skipped.
        reason: A one-line reason, without the path.
    """

    hints = {
        "E_INGEST_FILE_SKIPPED": "The reason names why; see docs/ingesting.md for what ingest reads.",
        # Not a regular file: a FIFO, socket or device (which could block or never end).
        "E_INGEST_SPECIAL_FILE": (
            "Only regular files are read; copy the content into a regular file to ingest it."
        ),
        "E_INGEST_FILE_TOO_LARGE": (
            "Raise the limit (max_file_size=, or --max-file-size 200MB), or split the file."
        ),
        # A symlink whose target lies outside every folder being ingested.
        "E_INGEST_EXTERNAL_SYMLINK": (
            "Ingest the target's folder too, or allow it: "
            "follow_external_symlinks=True (--follow-external-symlinks)."
        ),
    }


class DocumentLoadError(RuntimeFailure):
    """A file could not be turned into text.

    Attributes:
        path: The file that failed.
        reason: A one-line reason, without the path.
    """

    hints = {
        "E_INGEST_LOAD_FAILED": (
            "The message names the file and the reason; fix or skip that file and run ingest again."
        ),
        "E_INGEST_READ_FAILED": "Check that the file exists and is readable by this process.",
        "E_INGEST_DECODE_FAILED": (
            "Read it with a fallback: --fallback-encoding auto detects the encoding, or name it "
            "(--fallback-encoding cp1252; fallback_encodings=['auto'] in Python). Or save the file as UTF-8."
        ),
        "E_INGEST_PARSE_FAILED": "Open the file in a viewer to check it; re-export it if it is damaged.",
    }


class TooBig(Exception):
    """Front matter with more values, or deeper nesting, than ingest reads (private)."""
