"""Print docs/errors.md from the error registry: `python scripts/errors_doc.py > docs/errors.md`.

tests/test_docs.py fails when the page and the registry disagree.
"""

from __future__ import annotations

import importlib

PACKAGES = [
    "turnkit",
    "turnkit.batteries.vector",
    "turnkit.ingest",
    "turnkit.tools",
    "turnkit.mcp",
    "turnkit.cli",
]


def render() -> str:
    """The text of the page, from every registered error code and the class that carries it."""
    for name in PACKAGES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue
        for public in module.__all__:  # lazy packages import a name's module on first use
            getattr(module, public)
    from turnkit import ERROR_CODES

    lines = [
        "# Error codes",
        "",
        "Every error turnkit raises is a `TurnkitError` with a stable `code`, a message,",
        "a `hint` (what to do next) and context attributes. Match on `code`; it never",
        "changes meaning. `error.to_dict()` gives the same fields as JSON-ready data.",
        "The class is the one to catch: several codes share a class where callers need not",
        "tell them apart by type (`except VectorStoreUsageError as exc:` then `exc.code`).",
        "The table is generated from the registry (`python scripts/errors_doc.py`).",
        "",
        "| Code | Class | Raised from | Default hint |",
        "| --- | --- | --- | --- |",
    ]
    for code, cls in sorted(ERROR_CODES.items()):
        package = cls.__module__.rsplit("._", 1)[0]
        hint = cls.hints[code].replace("|", "\\|")
        lines.append(f"| `{code}` | `{cls.__name__}` | `{package}` | {hint} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
