"""Visible text of an HTML page, cut into heading sections (stdlib ``html.parser``).

What a browser does not render as text, elements hidden by their own attributes,
permalink marks, buttons and site chrome (``nav``, and the page's own header,
footer and aside) are dropped; block elements become line or paragraph breaks;
``h1``–``h6`` start sections, as in Markdown. docs/ingesting.md ("What gets
loaded") lists the rules.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any, Literal, cast, get_args

from ._errors import IngestUsageError
from ._markdown import split_markdown
from ._model import Section

__all__ = ["HTML_EXTRACTORS", "HtmlExtractor", "check_html_extractor", "split_html", "split_html_main"]

_SKIP = frozenset(
    "head title script style noscript template svg math iframe object canvas select datalist button".split()
)
_PARAGRAPH = frozenset(
    "address article aside blockquote body details dialog div dl fieldset figcaption figure footer form "
    "header hr html main nav ol p pre section summary table ul h1 h2 h3 h4 h5 h6".split()
)
_LINE = frozenset({"br", "li", "tr", "dt", "dd", "caption", "thead", "tbody", "tfoot"})
_CELL = frozenset({"td", "th"})
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_ENDS_LINK = frozenset({"a", *_HEADINGS, *_PARAGRAPH, *_LINE, *_CELL})  # a new link or a block
_SPACE = re.compile(r"\s+")
# Elements without an end tag: a hidden one hides nothing, so it must not open a hidden range.
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
# A start tag that implicitly closes an open element of the given kind (the HTML parsing rules, simplified).
_SIBLINGS = {t: frozenset({t}) for t in ("li", "dt", "dd", "tr", "td", "th", "option")}
_SIBLINGS.update(dt=frozenset({"dt", "dd"}), dd=frozenset({"dt", "dd"}), td=frozenset({"td", "th"}))
_SIBLINGS.update(th=frozenset({"td", "th"}), p=_PARAGRAPH - {"body", "html"} | {"li", "dd", "dt"})
_CONTENT = frozenset({"main", "article", "section"})  # a header or footer inside one is content
_PAGE_CHROME = frozenset({"header", "footer", "aside"})
_CHROME_ROLES = frozenset({"banner", "contentinfo", "complementary"})
_NAV_ROLES = frozenset({"navigation", "search"})
_SKIP_LINK = re.compile(r"^\s*skip\s+(?:to|navigation)\b", re.I)
# Text of a permalink: marks only, once whitespace and invisible characters are left out.
_PLACE_MARKS = frozenset("#¶§🔗")
_INVISIBLE = re.compile(r"[\s\u200b-\u200d\u2060\ufe0e\ufe0f]+")
_HIDING_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))\b", re.I)


def _hidden(attrs: list[tuple[str, str | None]]) -> bool:
    """Whether an element's own attributes hide it from readers."""
    for name, value in attrs:
        value = (value or "").strip().lower()
        # hidden="until-found" content is revealed by find-in-page, so a reader can reach it.
        if name == "hidden" and value != "until-found":
            return True
        if (name == "aria-hidden" and value == "true") or (name == "style" and _HIDING_STYLE.search(value)):
            return True
    return False


@dataclass(slots=True, kw_only=True)
class _Anchor:
    """An open in-page link whose text is held back until its end says whether it is content."""

    headerlink: bool
    parts: list[tuple[str, bool]] = field(default_factory=list)  # (text, inside pre)

    def is_content(self) -> bool:
        text = "".join(t for t, _ in self.parts)
        if self.headerlink or _SKIP_LINK.match(text):
            return False
        return not all(c in _PLACE_MARKS for c in _INVISIBLE.sub("", text))


@dataclass(slots=True)
class _Section:
    path: tuple[str, ...]
    out: list[str] = field(default_factory=list)
    pending: int = 0  # newlines owed before the next text (1 = line break, 2 = paragraph)

    def brk(self, n: int) -> None:
        if self.out:
            self.pending = max(self.pending, n)
            self.out[-1] = self.out[-1].rstrip(" ")

    def add(self, text: str, *, pre: bool) -> None:
        if not pre:
            text = _SPACE.sub(" ", text)
            if self.pending or not self.out or self.out[-1].endswith((" ", "\n")):
                text = text.lstrip(" ")
        if not text:
            return
        if self.pending:
            self.out.append("\n" * self.pending)
            self.pending = 0
        self.out.append(text)

    def text(self) -> str:
        return "".join(self.out).rstrip()


class _VisibleText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.sections = [_Section(())]
        self.skip: list[str] = []
        self.pre = 0
        self.stack: list[tuple[int, str]] = []
        self.heading: tuple[int, list[str]] | None = None
        self.hidden: list[str] = []  # the open elements from the outermost hidden one in
        # Open main/article/section (or role="main") elements, as (tag, how many such tags were open).
        self.content: list[tuple[str, int]] = []
        self.depth: dict[str, int] = {}
        self.anchor: _Anchor | None = None  # an open <a href="#…">: a permalink or skip link, or content

    def _chrome(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        """Whether the element is site chrome: navigation, or the page's header, footer or sidebar."""
        role = next(((v or "").strip().lower() for k, v in attrs if k == "role"), "")
        if tag == "nav" or role in _NAV_ROLES:
            return True
        return not self.content and (tag in _PAGE_CHROME or role in _CHROME_ROLES)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.hidden:
            if len(self.hidden) == 1 and tag in _SIBLINGS.get(self.hidden[0], ()):
                self.hidden = []  # e.g. <p hidden>…<p>: the new element closes the hidden one
            else:
                if tag not in _VOID:
                    self.hidden.append(tag)
                return
        if tag == "body":  # an unclosed <head> ends where the body starts
            self.skip = [t for t in self.skip if t not in ("head", "title")]
        if tag in _SKIP:
            self.skip.append(tag)
            return
        if self.skip:
            return
        if tag not in _VOID and (_hidden(attrs) or self._chrome(tag, attrs)):
            self.hidden = [tag]
            return
        if tag not in _VOID:
            self.depth[tag] = self.depth.get(tag, 0) + 1
        if tag in _CONTENT or any(k == "role" and (v or "").strip().lower() == "main" for k, v in attrs):
            self.content.append((tag, self.depth[tag]))
        if tag in _ENDS_LINK:
            self._end_anchor()  # an open link's held text ends here
        if tag == "a":
            href = next((v or "" for k, v in attrs if k == "href"), "")
            classes = next((v or "" for k, v in attrs if k == "class"), "").split()
            if href.startswith("#") or "headerlink" in classes:
                self.anchor = _Anchor(headerlink="headerlink" in classes)
        current = self.sections[-1]
        if tag in _HEADINGS:
            current.brk(2)
            self.sections.append(_Section(tuple(t for _, t in self.stack)))
            self.heading = (_HEADINGS[tag], [])
        elif tag in _PARAGRAPH:
            current.brk(2)
        elif tag in _LINE:
            current.brk(1)
        elif tag in _CELL and current.out and not current.pending:
            current.add(" ", pre=True)  # cells of a row read as words on one line
        if tag == "pre":
            self.pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:  # a self-closed <svg/> has no content to skip
            return
        self.handle_starttag(tag, attrs)
        self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.hidden:
            if tag in self.hidden:
                del self.hidden[len(self.hidden) - 1 - self.hidden[::-1].index(tag) :]
                return
            if self.hidden[0] not in _SIBLINGS:
                return  # a stray end tag, ignored as a browser ignores it
            self.hidden = []  # an unclosed <p hidden>, <li hidden>…: its enclosing element ends it
        if tag in _SKIP:
            if tag in self.skip:
                while self.skip and self.skip.pop() != tag:
                    pass
            return
        if self.skip:
            return
        if self.depth.get(tag):
            if self.content and self.content[-1] == (tag, self.depth[tag]):
                self.content.pop()
            self.depth[tag] -= 1
        if tag in _ENDS_LINK:
            self._end_anchor()
        current = self.sections[-1]
        if tag in _HEADINGS and self.heading is not None:
            level, parts = self.heading
            self.heading = None
            title = _SPACE.sub(" ", "".join(parts)).strip()
            while self.stack and self.stack[-1][0] >= level:
                self.stack.pop()
            if title:
                self.stack.append((level, title))
            current.path = tuple(t for _, t in self.stack)
            current.brk(2)
        elif tag in _PARAGRAPH:
            current.brk(2)
        elif tag in _LINE and tag != "br":
            current.brk(1)
        if tag == "pre" and self.pre:
            self.pre -= 1

    def handle_data(self, data: str) -> None:
        if self.skip or self.hidden:
            return
        if self.anchor is not None:
            self.anchor.parts.append((data, self.pre > 0))
        else:
            self._emit(data, pre=self.pre > 0)

    def _emit(self, data: str, *, pre: bool) -> None:
        self.sections[-1].add(data, pre=pre)
        if self.heading is not None:
            self.heading[1].append(data)

    def _end_anchor(self) -> None:
        """Write an open link's held text, unless it is a permalink mark or a skip link."""
        anchor, self.anchor = self.anchor, None
        if anchor is not None and anchor.is_content():
            for data, pre in anchor.parts:
                self._emit(data, pre=pre)

    def close(self) -> None:
        super().close()
        self._end_anchor()  # a link left open at the end of the page


def split_html(markup: str) -> tuple[Section, ...]:
    """Visible text of ``markup`` as heading sections (each but the last ends with a blank line)."""
    parser = _VisibleText()
    parser.feed(markup)
    parser.close()
    texts = [(s.path, text) for s in parser.sections if (text := s.text())]
    return tuple(
        Section(text=text + ("\n\n" if i < len(texts) - 1 else ""), heading_path=path)
        for i, (path, text) in enumerate(texts)
    )


HtmlExtractor = Literal["turnkit", "trafilatura"]
"""How HTML becomes text: turnkit's visible-text reader, or trafilatura's main-content extraction."""

HTML_EXTRACTORS: tuple[str, ...] = get_args(HtmlExtractor)


def check_html_extractor(name: Any) -> HtmlExtractor:
    """``name`` when it is a known extractor whose dependency is installed.

    Raises:
        IngestUsageError: ``E_INGEST_INVALID_OPTION``: an unknown name.
        IngestUsageError: ``E_INGEST_DEPENDENCY_MISSING``: ``"trafilatura"`` without the ``html`` extra.
    """
    if name not in HTML_EXTRACTORS:
        raise IngestUsageError(
            f"Unknown HTML extractor {name!r}.",
            code="E_INGEST_INVALID_OPTION",
            hint=f"Use one of {', '.join(HTML_EXTRACTORS)}.",
        )
    if name == "trafilatura":
        try:
            importlib.import_module("trafilatura")
        except ImportError as exc:
            raise IngestUsageError(
                f"The trafilatura HTML extractor is not installed ({exc}).",
                code="E_INGEST_DEPENDENCY_MISSING",
                hint="Install it: pip install 'turnkit[html]'.",
            ) from None
    return cast("HtmlExtractor", name)


def split_html_main(markup: str) -> tuple[Section, ...]:
    """The page's main content by trafilatura's heuristics, as Markdown heading sections.

    It drops site chrome that only class names mark (``<div class="navbar">``),
    which `split_html` keeps; see docs/performance.md for both on the same pages.
    """
    trafilatura: Any = importlib.import_module("trafilatura")
    text = trafilatura.extract(
        markup, output_format="markdown", include_tables=True, include_comments=False, favor_recall=True
    )
    return split_markdown(text.strip() + "\n") if text and text.strip() else ()
