"""HTML headings as documentation sites write them: permalink marks and buttons are not heading text."""

from __future__ import annotations

import html
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.ingest import load_document

# Abridged from the pages these generators write, markup kept as it is.
SPHINX = """<!DOCTYPE html><html><head><title>json — Python 3 docs</title></head><body>
<div class="body" role="main">
<section id="module-json">
<h1><code class="xref py py-mod docutils literal notranslate"><span class="pre">json</span></code>
— JSON encoder and decoder<a class="headerlink" href="#module-json" title="Link to this heading">¶</a></h1>
<p><strong>Source code:</strong> <a class="reference external" href="https://example.org/json">Lib/json</a></p>
<section id="basic-usage">
<h2>Basic Usage<a class="headerlink" href="#basic-usage" title="Link to this heading">¶</a></h2>
<dl class="py function">
<dt class="sig sig-object py" id="json.dump"><span class="sig-name descname">dump</span>(<em>obj</em>)
<a class="headerlink" href="#json.dump" title="Link to this definition">¶</a></dt>
<dd><p>Serialize <em>obj</em> as a JSON formatted stream, see <a class="reference internal"
href="#py-to-json-table">this table</a>.</p></dd></dl>
</section></section></div></body></html>
"""

NODE = """<!DOCTYPE html><html><body><div id="content"><main>
<section><h2>Async hooks<span><a class="mark" href="#async-hooks" id="async-hooks">#</a></span><a
aria-hidden="true" class="legacy" id="async_hooks_async_hooks"></a></h2>
<p><strong>Stability: 1</strong> - Experimental.</p>
<section><h3>Class: <code>AsyncHook</code><span><a class="mark" href="#class-asynchook"
id="class-asynchook">#</a></span><a aria-hidden="true" class="legacy"
id="async_hooks_class_asynchook"></a></h3>
<p>The class <code>AsyncHook</code> exposes an interface for tracking lifetime events.</p>
</section></section></main></div></body></html>
"""

RUSTDOC = """<!DOCTYPE html><html><body><main><section id="main-content" class="content">
<div class="main-heading"><h1>Struct <span class="struct">HashMap</span><button id="copy-path"
title="Copy item path to clipboard">Copy item path</button></h1></div>
<details class="toggle top-doc" open><summary class="hideme"><span>Expand description</span></summary>
<div class="docblock"><p>A hash map implemented with quadratic probing.</p>
<h2 id="examples"><a class="doc-anchor" href="#examples">§</a>Examples</h2>
<div class="example-wrap"><pre class="rust"><code>let mut book_reviews = HashMap::new();</code></pre></div>
</div></details></section></main></body></html>
"""


def _sections(tmp_path: Path, markup: str) -> list[tuple[tuple[str, ...], str]]:
    path = tmp_path / "page.html"
    path.write_text(markup)
    return [(s.heading_path, s.text) for s in load_document(path).sections]


@pytest.mark.parametrize(
    ("markup", "paths", "gone"),
    [
        (
            SPHINX,
            [("json — JSON encoder and decoder",), ("json — JSON encoder and decoder", "Basic Usage")],
            "¶",
        ),
        (NODE, [("Async hooks",), ("Async hooks", "Class: AsyncHook")], "#"),
        (RUSTDOC, [("Struct HashMap",), ("Struct HashMap", "Examples")], "§"),
    ],
    ids=["sphinx", "node", "rustdoc"],
)
def test_headings_of_documentation_sites_keep_only_their_words(
    tmp_path: Path, markup: str, paths: list[tuple[str, ...]], gone: str
) -> None:
    sections = _sections(tmp_path, markup)
    assert [path for path, _ in sections] == paths
    text = "".join(body for _, body in sections)
    assert gone not in text and "Copy item path" not in text
    assert text.startswith(paths[0][0] + "\n\n")


def test_links_with_words_are_content(tmp_path: Path) -> None:
    sections = _sections(tmp_path, SPHINX + RUSTDOC)
    text = "".join(body for _, body in sections)
    assert "see this table." in text  # an in-page link with words is kept
    assert "Lib/json" in text and "dump(obj)" in text  # the definition's permalink went, not its name
    markup = '<h1>Issue <a href="#n">#42</a></h1><p>Fixed in <a href="#v"><code>v2</code></a>.</p>'
    assert _sections(tmp_path, markup) == [(("Issue #42",), "Issue #42\n\nFixed in v2.")]


def test_skip_links_still_go(tmp_path: Path) -> None:
    markup = '<a href="#main">Skip to <b>content</b></a><h1>Title<a href="#t">🔗</a></h1><p>Body.</p>'
    assert _sections(tmp_path, markup) == [(("Title",), "Title\n\nBody.")]


def test_a_link_left_open_ends_with_its_heading(tmp_path: Path) -> None:
    markup = '<h1>First<a href="#a">#</h1><p>One.</p><h2>Second <a href="#b">part</h2><p>Two.</p>'
    assert [p for p, _ in _sections(tmp_path, markup)] == [("First",), ("First", "Second part")]


_MARK = st.sampled_from(["#", "¶", "§", "🔗", " # ", "\u200b", "🔗\ufe0f", "¶\n"])
_WORDS = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(
    lambda t: any(not c.isspace() and c not in "#¶§🔗\u200b\ufe0f" for c in t)
)


@st.composite
def _permalink(draw: st.DrawFn) -> str:
    mark = html.escape(draw(_MARK))
    shape = draw(st.sampled_from(["mark", "headerlink", "wrapped"]))
    if shape == "headerlink":
        word = html.escape(draw(st.sampled_from(["¶", "Permalink", ""])))
        return f'<a class="headerlink" href="#{draw(st.integers(0, 99))}" title="Link">{word}</a>'
    link = f'<a class="anchor" href="#h{draw(st.integers(0, 99))}">{mark}</a>'
    return f"<span>{link}</span>" if shape == "wrapped" else link


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture], deadline=None)
@given(heading=_WORDS, anchor=_permalink(), before=st.booleans(), button=st.booleans())
def test_any_heading_plus_a_permalink_is_the_heading(
    tmp_path: Path, heading: str, anchor: str, before: bool, button: bool
) -> None:
    words = html.escape(heading)
    inner = anchor + words if before else words + anchor
    if button:
        inner += '<button title="Copy">Copy item path</button>'
    sections = _sections(tmp_path, f"<h2>{inner}</h2><p>Body.</p>")
    expected = " ".join(heading.split())
    assert sections == [((expected,), f"{expected}\n\nBody.")]
