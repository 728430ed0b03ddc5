"""Write the generated tables of docs/settings.md and docs/cli.md: `python scripts/settings_doc.py`.

The options table comes from `RetrievalSettings.model_fields` and the
``Attributes:`` section of its docstring; the ``turnkit query`` flag table from
the command's one flag-to-field table. tests/test_docs.py fails when a page and
the code disagree.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
import sys
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PAGES = {"fields": ROOT / "docs" / "settings.md", "query-flags": ROOT / "docs" / "cli.md"}


def _begin(name: str) -> str:
    return f"<!-- generated: {name} (python scripts/settings_doc.py) -->"


def _end(name: str) -> str:
    return f"<!-- end: {name} -->"


def _cell(text: str) -> str:
    """Docstring text as one Markdown table cell: ``code`` as `code`, pipes escaped."""
    text = re.sub(r"``([^`]+)``", r"`\1`", " ".join(text.split()))
    return text.replace("|", "\\|")


def attributes(cls: type) -> dict[str, str]:
    """The ``Attributes:`` section of a Google-style class docstring, by name."""
    doc = inspect.getdoc(cls) or ""
    section = doc.split("Attributes:", 1)[1] if "Attributes:" in doc else ""
    found: dict[str, str] = {}
    name = None
    for line in section.splitlines():
        if line and not line.startswith(" "):
            break  # the next section (Raises:)
        item = re.match(r"^    (\w+): (.*)$", line)
        if item:
            name = item.group(1)
            found[name] = item.group(2)
        elif name is not None and line.strip():
            found[name] += " " + line.strip()
    return found


def _type_name(annotation: Any) -> str:
    if annotation is Any:
        return "any"
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return "None"
    return getattr(annotation, "__name__", str(annotation))


def _default(value: Any) -> str:
    if dataclasses.is_dataclass(value) and not isinstance(value, type) and value == type(value)():
        return f"`{type(value).__name__}()`"
    return f"`{value!r}`"


def render_fields() -> str:
    """The options table: every `RetrievalSettings` field, its type, default and meaning."""
    from turnkit.batteries.vector import RetrievalSettings

    meaning = attributes(RetrievalSettings)
    rows = ["| Field | Type | Default | Meaning |", "| --- | --- | --- | --- |"]
    for name, info in RetrievalSettings.model_fields.items():
        kind = "`" + _cell(_type_name(info.annotation)) + "`"
        rows.append(f"| `{name}` | {kind} | {_default(info.default)} | {_cell(meaning[name])} |")
    return "\n".join(rows)


def render_query_flags() -> str:
    """The flags of ``turnkit query`` and the settings field each one sets."""
    from turnkit.cli._query_flags import QUERY_FLAGS

    rows = ["| Flag | Settings field | Meaning |", "| --- | --- | --- |"]
    for flag in QUERY_FLAGS:
        metavar = flag.argparse.get("metavar")
        value = f" [{metavar}]" if flag.argparse.get("nargs") == "?" else f" {metavar}" if metavar else ""
        if "choices" in flag.argparse:
            value = " " + "\\|".join(flag.argparse["choices"])
        spelled = ", ".join(f"`{f}{value}`" for f in flag.flags)
        target = f"`{flag.field}`" + (f" (`{flag.key}`)" if flag.key else "")
        rows.append(f"| {spelled} | {target} | {_cell(str(flag.argparse['help']))} |")
    return "\n".join(rows)


RENDER = {"fields": render_fields, "query-flags": render_query_flags}


def block(text: str, name: str) -> str:
    """The generated block ``name`` of a page's text (between its markers)."""
    begin, end = _begin(name), _end(name)
    if begin not in text or end not in text:
        raise SystemExit(f"the page has no {begin!r} ... {end!r} block")
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n")


def write() -> None:
    """Rewrite each page's generated block from the code."""
    for name, page in PAGES.items():
        text = page.read_text()
        block(text, name)  # both markers are there
        head, rest = text.split(_begin(name), 1)
        tail = rest.split(_end(name), 1)[1]
        page.write_text(f"{head}{_begin(name)}\n{RENDER[name]()}\n{_end(name)}{tail}")


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    write()
