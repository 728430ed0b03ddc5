"""Split Markdown into heading sections, each knowing its heading path.

A small line scanner, not a full CommonMark parser: it recognises what decides
where a section starts — ATX headings (``# Title``), setext headings (a line
underlined with ``===`` or ``---``), fenced code blocks (whose ``#`` lines are
code, not headings) and a leading YAML front-matter block. Everything else is
kept verbatim, so the sections concatenate back to the input exactly.
"""

from __future__ import annotations

import re

from ._model import Section

__all__ = ["split_markdown"]

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
# A line that cannot be the text of a setext heading: list items, quotes, tables, HTML, fences.
_NOT_SETEXT_TEXT = re.compile(r"^ {0,3}(?:[-*+>|<]|\d+[.)]\s|`{3}|~{3})")
# The first character (after at most three spaces) of every line a pattern above can match: any
# other line changes nothing, so it is passed over without running them (most lines of a document).
_MARKS = frozenset("#=-`~")


def _clean_title(raw: str) -> str:
    """Heading text as a reader sees it: links reduced to their text, code marks dropped."""
    title = raw.strip()
    if "[" in title:
        title = _LINK.sub(r"\1", title)
    return title.replace("`", "").replace("**", "").strip()


def split_markdown(text: str, *, skip_plain: bool = True) -> tuple[Section, ...]:
    """Split ``text`` at its headings; ``"".join(s.text for s in result) == text``.

    ``skip_plain=False`` runs every pattern on every line (what tests compare with).
    """
    lines = text.splitlines(keepends=True)
    # Each entry: (first line index, heading path). The text before the first heading has path ().
    starts: list[tuple[int, tuple[str, ...]]] = [(0, ())]
    stack: list[tuple[int, tuple[str, ...]]] = []  # (level, heading path down to that level)
    heading_lines: set[int] = set()

    def open_section(line_index: int, level: int, title: str) -> None:
        while stack and stack[-1][0] >= level:
            stack.pop()
        path = (*stack[-1][1], title) if stack else (title,)
        stack.append((level, path))
        heading_lines.add(line_index)
        if starts[-1][0] == line_index:
            starts[-1] = (line_index, path)  # nothing between: replace the empty section
        else:
            starts.append((line_index, path))

    i = 0
    if lines and lines[0].rstrip("\n") == "---":
        # Front matter: never headings inside, even if a line looks like a setext underline.
        for j in range(1, len(lines)):
            if lines[j].rstrip("\n") in ("---", "..."):
                i = j + 1
                break
    fence: str | None = None
    for n in range(i, len(lines)):
        line = lines[n]
        if skip_plain and line[:1] not in _MARKS and (line[:1] != " " or line.lstrip(" ")[:1] not in _MARKS):
            continue
        line = line.rstrip("\n")
        fence_match = _FENCE.match(line)
        if fence is not None:
            # A closing fence: the opening's mark, at least as long, and no info string.
            if fence_match and fence_match.group(1).startswith(fence) and not line.strip().lstrip(fence[0]):
                fence = None
            continue
        if fence_match:
            fence = fence_match.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            open_section(n, len(atx.group(1)), _clean_title(atx.group(2) or ""))
            continue
        setext = _SETEXT.match(line)
        if setext and n > i and n - 1 >= starts[-1][0] and n - 1 not in heading_lines:
            prev = lines[n - 1].rstrip("\n")
            if prev.strip() and not _NOT_SETEXT_TEXT.match(prev):
                open_section(n - 1, 1 if setext.group(1)[0] == "=" else 2, _clean_title(prev))
    bounds = [s for s, _ in starts] + [len(lines)]
    texts = (("".join(lines[first:end]), path) for (first, path), end in zip(starts, bounds[1:], strict=True))
    return tuple(Section(text=text, heading_path=path) for text, path in texts if text)
