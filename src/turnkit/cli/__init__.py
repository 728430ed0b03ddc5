"""The ``turnkit`` command: ingest, query, look at, export, maintain and serve a collection.

Run ``turnkit --help`` or see the "Command line" docs page. `main` is the
entry point (``turnkit = "turnkit.cli:main"``); call it with a list of
arguments to run a command from Python:

```python
from turnkit.cli import main

status = main(["--version"])
assert status == 0
```
"""

from ._errors import (
    EXIT_DEPENDENCY,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EXIT_USAGE,
    CliRuntimeError,
    CliUsageError,
)
from ._main import main
from ._shipped_docs import shipped_docs

__all__ = [
    "CliRuntimeError",
    "CliUsageError",
    "EXIT_DEPENDENCY",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_PARTIAL",
    "EXIT_USAGE",
    "main",
    "shipped_docs",
]
