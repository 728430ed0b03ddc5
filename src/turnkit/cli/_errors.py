"""The ``E_CLI_*`` errors and the exit status each error maps to.

```
TurnkitError
├── UsageError
│   └── CliUsageError        E_CLI_USAGE, E_CLI_UNKNOWN_ENCODER, E_CLI_DEPENDENCY_MISSING
└── RuntimeFailure
    └── CliRuntimeError      E_CLI_DOCS_NOT_FOUND
```
"""

from __future__ import annotations

from .._errors import RuntimeFailure, TurnkitError, UsageError

EXIT_OK = 0
"""The command did what it was asked."""
EXIT_FAILURE = 1
"""Something failed while running (storage, encoder, model endpoint, an unexpected error)."""
EXIT_USAGE = 2
"""The command line or configuration must change: bad flag, bad filter, unknown collection."""
EXIT_PARTIAL = 3
"""``turnkit ingest`` finished, but some files could not be read (listed in the output)."""
EXIT_DEPENDENCY = 4
"""An optional extra the command needs is not installed (``mcp``, ``wordllama``, ``pypdf``)."""
EXIT_INTERRUPTED = 130
"""Interrupted with Ctrl-C (128 + SIGINT, the shell convention)."""

# "Install an extra" errors of every layer (E_CLI_DEPENDENCY_MISSING, E_INGEST_DEPENDENCY_MISSING,
# E_VECTOR_STORE_DRIVER_UNAVAILABLE…) share these endings.
DEPENDENCY_SUFFIXES = ("_DEPENDENCY_MISSING", "_DRIVER_UNAVAILABLE")


class CliUsageError(UsageError):
    """The command line is invalid: a missing argument, an unknown flag, a bad value, an unknown encoder."""

    hints = {
        "E_CLI_USAGE": "Run `turnkit --help`, or `turnkit COMMAND --help` for the command's options.",
        "E_CLI_UNKNOWN_ENCODER": "Use --encoder wordllama, wordllama:128, wordllama:64, hash or hash:DIM.",
        "E_CLI_DEPENDENCY_MISSING": "Install the extra the message names, e.g. pip install 'turnkit[mcp]'.",
    }


class CliRuntimeError(RuntimeFailure):
    """A command failed while running in a way no other layer reports (shipped docs missing)."""

    hints = {
        "E_CLI_DOCS_NOT_FOUND": "Reinstall turnkit; in a checkout, `src/turnkit/_docs` must link to `docs/`."
    }


def missing_extra(exc: BaseException) -> TurnkitError | None:
    """The "install an extra" error behind ``exc``, if any (an encoder's failure may chain one)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, TurnkitError) and current.code.endswith(DEPENDENCY_SUFFIXES):
            return current
        current = current.__cause__
    return None


def exit_status(exc: BaseException) -> int:
    """The documented exit status for an error that ended a command."""
    if missing_extra(exc) is not None:
        return EXIT_DEPENDENCY
    return EXIT_USAGE if isinstance(exc, UsageError) else EXIT_FAILURE
