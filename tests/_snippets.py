"""The one runner for Python snippets in docs pages and docstrings.

Every fenced ```python block runs. A line ``#> text`` (or several in a row)
after a statement says what that statement printed: the lines printed since
the previous ``#>`` group must end with exactly these lines, otherwise the
snippet fails. ``#>`` lines may be indented, inside a ``with`` or ``for``
block; they check at that point of the run.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

_BLOCK = re.compile(r"^[ \t]*```python\n(.*?)^[ \t]*```", re.S | re.M)
_OUTPUT = re.compile(r"^([ \t]*)#>(?: (.*))?$")


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a page or docstring, dedented."""
    return [textwrap.dedent(block) for block in _BLOCK.findall(text)]


def doc_pages() -> list[Path]:
    """README.md and every page under docs/, at any depth."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def page_snippets(pages: list[Path] | None = None) -> list[tuple[str, str]]:
    """``(id, code)`` for every block of the pages (all doc pages by default)."""
    return [
        (f"{page.relative_to(ROOT)}#{i}", code)
        for page in (doc_pages() if pages is None else pages)
        for i, code in enumerate(python_blocks(page.read_text()))
    ]


def expected_output(code: str) -> list[list[str]]:
    """The ``#>`` groups of a snippet, in order."""
    return _instrument(code)[1]


def _instrument(code: str) -> tuple[str, list[list[str]]]:
    # Each group of `#>` lines becomes one `__snippet_check__(n)` call at the
    # group's indentation (blank lines after it keep the line numbers).
    lines = code.splitlines()
    groups: list[list[str]] = []
    out: list[str] = []
    previous_indent: str | None = None
    for line in lines:
        m = _OUTPUT.match(line)
        if m is None:
            previous_indent = None
            out.append(line)
            continue
        indent, text = m.group(1), (m.group(2) or "").rstrip()
        if previous_indent == indent:
            groups[-1].append(text)
            out.append("")
        else:
            groups.append([text])
            out.append(f"{indent}__snippet_check__({len(groups) - 1})")
        previous_indent = indent
    return "\n".join(out) + "\n", groups


def run_snippet(code: str, *, name: str = "<snippet>", namespace: dict[str, Any] | None = None) -> str:
    """Run ``code``, check its ``#>`` lines, and return everything it printed.

    Raises:
        AssertionError: a ``#>`` group does not match what was printed before it.
    """
    source, groups = _instrument(code)
    buffer = io.StringIO()
    seen = 0

    def check(index: int) -> None:
        nonlocal seen
        text = buffer.getvalue()
        printed = [line.rstrip() for line in text[seen:].splitlines()]
        seen = len(text)
        expected = groups[index]
        got = printed[len(printed) - len(expected) :] if len(printed) >= len(expected) else printed
        assert got == expected, (
            f"{name}: the `#>` lines {expected!r} do not match what was printed: {printed!r}"
        )

    # A real module, so dataclasses (and pydantic models) defined in a snippet can resolve it.
    module = types.ModuleType("__snippet__")
    scope: dict[str, Any] = module.__dict__
    scope.update(namespace or {})
    scope["__snippet_check__"] = check
    previous = sys.modules.get(module.__name__)
    sys.modules[module.__name__] = module
    try:
        with contextlib.redirect_stdout(buffer):
            exec(compile(source, name, "exec"), scope)
    finally:
        if previous is None:
            sys.modules.pop(module.__name__, None)
        else:
            sys.modules[module.__name__] = previous
    return buffer.getvalue()


# Pages whose snippets need an optional framework; without it they are skipped, not failed.
REQUIRES = {
    "docs/integrations/pydantic-ai.md": "pydantic_ai",
    "docs/integrations/langchain.md": "langchain_core",
    "docs/integrations/llamaindex.md": "llama_index.core",
    "docs/integrations/langgraph.md": "langgraph.graph",
    "docs/integrations/openai-agents.md": "agents",
    # Not installable next to turnkit's pins (see the page): documented, skipped here.
    "docs/integrations/google-adk.md": "google.adk",
}
