"""HTML main-text extraction: turnkit's loader against trafilatura, on pages with site chrome.

    pip install -e . trafilatura       # trafilatura only for this comparison
    python bench/html_extract.py

The pages are built here from text that ships offline: each of the Python
reference's topics (``pydoc_data.topics``) becomes an article, wrapped in the
site chrome of three page templates:

- ``landmarks``: HTML5 ``header``/``nav``/``main``/``aside``/``footer``;
- ``roles``: ``div``s with ARIA roles (``banner``, ``navigation``, ``main``,
  ``complementary``, ``contentinfo``) and a skip link;
- ``div soup``: ``div``s whose only hint is a class name (``navbar``,
  ``sidebar``, ``site-footer``), as older sites are written.

Content kept: the share of the article's sentences found in the extracted
text. Chrome dropped: the share of the chrome's strings (menu items, footer
lines, sidebar links) not found in it. Time: per page, as a ratio to
trafilatura in the same run.
"""

from __future__ import annotations

import html
import pydoc_data.topics
import re
import statistics
import sys
import time
from collections.abc import Callable

from turnkit.ingest._html import split_html

MENU = ["Home", "Downloads", "Documentation", "Community Forum", "Success Stories", "Events Calendar"]
SIDEBAR = ["Popular posts this week", "Subscribe to our newsletter", "Related: shipping rates explained"]
FOOTER = ["Copyright 2001-2024 Example Foundation", "Privacy policy and cookie settings", "Report a bug here"]
CHROME = [*MENU, *SIDEBAR, *FOOTER, "Skip to main content"]


def _article(title: str, text: str) -> str:
    paras = "".join(f"<p>{html.escape(p.strip())}</p>\n" for p in text.split("\n\n") if p.strip())
    return f"<h1>{html.escape(title)}</h1>\n{paras}"


def _menu() -> str:
    return "<ul>" + "".join(f'<li><a href="/{i}">{m}</a></li>' for i, m in enumerate(MENU)) + "</ul>"


def _side() -> str:
    return "<ul>" + "".join(f'<li><a href="/s{i}">{s}</a></li>' for i, s in enumerate(SIDEBAR)) + "</ul>"


def _foot() -> str:
    return "".join(f"<p>{f}</p>" for f in FOOTER)


TEMPLATES: dict[str, Callable[[str], str]] = {
    "landmarks": lambda body: (
        f"<header><div>Example</div><nav>{_menu()}</nav></header><main><article>{body}</article></main>"
        f"<aside>{_side()}</aside><footer>{_foot()}</footer>"
    ),
    "roles": lambda body: (
        '<a class="skip" href="#content">Skip to main content</a>'
        f'<div role="banner"><div role="navigation">{_menu()}</div></div>'
        f'<div role="main" id="content"><div class="post">{body}</div></div>'
        f'<div role="complementary">{_side()}</div><div role="contentinfo">{_foot()}</div>'
    ),
    "div soup": lambda body: (
        f'<div class="navbar">{_menu()}</div><div class="content"><div class="post">{body}</div></div>'
        f'<div class="sidebar">{_side()}</div><div class="site-footer">{_foot()}</div>'
    ),
}


def _page(template: str, title: str, text: str) -> str:
    body = TEMPLATES[template](_article(title, text))
    return f"<!doctype html><html><head><title>{title}</title></head><body>{body}</body></html>"


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+", _norm(text))
    return [s for s in parts if len(s) > 40]


def turnkit(markup: str) -> str:
    return "".join(s.text for s in split_html(markup))


def main() -> None:
    try:
        import trafilatura
    except ImportError:
        sys.exit("bench/html_extract.py compares against trafilatura: pip install trafilatura")

    def traf(markup: str) -> str:
        return (
            trafilatura.extract(markup, include_comments=False, include_tables=True, favor_recall=True) or ""
        )

    topics = sorted(pydoc_data.topics.topics.items())[:60]
    systems = {"turnkit": turnkit, "trafilatura": traf}
    rows = []
    for template in TEMPLATES:
        pages = [(_page(template, name, text), text) for name, text in topics]
        for label, extract in systems.items():
            kept, dropped, seconds = [], [], []
            for markup, text in pages:
                started = time.perf_counter()
                out = _norm(extract(markup))
                seconds.append(time.perf_counter() - started)
                wanted = _sentences(text)
                if wanted:
                    kept.append(sum(s in out for s in wanted) / len(wanted))
                dropped.append(sum(c not in out for c in CHROME) / len(CHROME))
            rows.append(
                (template, label, statistics.mean(kept), statistics.mean(dropped), statistics.median(seconds))
            )
    base = {t: s for t, label, _, _, s in rows if label == "trafilatura"}
    print(f"{len(topics)} pages per template (pydoc_data topics)\n")
    print("| template | system | content kept | chrome dropped | time per page vs trafilatura |")
    print("| --- | --- | --- | --- | --- |")
    for template, label, kept_share, dropped_share, sec in rows:
        print(
            f"| {template} | {label} | {kept_share:.3f} | {dropped_share:.3f} | {sec / base[template]:.2f}x |"
        )


if __name__ == "__main__":
    main()
