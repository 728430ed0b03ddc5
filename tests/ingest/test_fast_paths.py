"""Ingest's fast paths against the paths they replace: the same sections, the same rows."""

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from turnkit.ingest import source_uri_for
from turnkit.ingest._loaders import resolve_extensions
from turnkit.ingest._markdown import split_markdown
from turnkit.ingest._walk import walk

# Lines that move the scanner's state (headings, setext underlines, fences, front-matter marks) and
# lines that look close to them but do not, joined by every line break str.splitlines knows.
LINES = [
    "# Title",
    "## Sub ##",
    "###",
    "####### seven",
    "   # indented",
    "    # code",
    "#no space",
    "===",
    "---",
    "- item",
    "-",
    "=",
    " ---  ",
    "...",
    "```",
    "````",
    "```python",
    "~~~",
    "~~~~",
    "   ```",
    "    ```",
    "``` ```",
    "text",
    "more text here",
    "",
    "  ",
    "> quote",
    "| a | b |",
    "1. one",
    "<div>",
    "[link](x) **b** `c`",
    "Title",
    "é ü",
    "\t# tab",
]
BREAKS = ["\n", "\n", "\n", "\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"]

markdown = st.lists(st.tuples(st.sampled_from(LINES), st.sampled_from(BREAKS)), max_size=40).map(
    lambda parts: "".join(line + brk for line, brk in parts)
) | st.text(alphabet=st.sampled_from("#=-`~ \nab.\r"), max_size=80)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdown, st.booleans())
@example("# Title\n===\n", False)  # an ATX heading is never a setext heading's text
@example("para\n   ===\n    ---\n\t# tab\n", False)  # indented marks: up to three spaces count
def test_split_markdown_passing_over_plain_lines_changes_nothing(text, trailing):
    text = text + ("tail" if trailing else "")
    assert split_markdown(text) == split_markdown(text, skip_plain=False)


def test_split_markdown_on_front_matter_and_fences():
    text = "---\ntitle: x\n# not a heading\n---\n# A\n```\n# code\n```\nB\n===\n- c\n---\n"
    assert split_markdown(text) == split_markdown(text, skip_plain=False)
    assert [s.heading_path for s in split_markdown(text)] == [(), ("A",), ("B",)]


names = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\"),
    min_size=1,
    max_size=12,
).filter(lambda n: n not in (".", "..") and not n.startswith(".") and len(n.encode()) < 200)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(names, names), min_size=1, max_size=6, unique_by=lambda p: p[1]), st.booleans())
def test_walk_uris_match_source_uri_for(pairs, through_link):
    """The walk builds a file's URI from its folder's; resolving the file's own path gives the same."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "root dir %")
        for folder, name in pairs:
            (root / folder).mkdir(parents=True, exist_ok=True)
            (root / folder / f"{name}.md").write_text("# x\n")
        first = root / pairs[0][0]
        (first / "link.md").symlink_to(first / f"{pairs[0][1]}.md")  # a symlink resolves to its target
        start = root
        if through_link:
            start = Path(tmp, "via")
            start.symlink_to(root, target_is_directory=True)
        found = walk([start], resolve_extensions(None))
        assert found.candidates
        for candidate in found.candidates:
            assert candidate.uri == source_uri_for(candidate.path)
        assert len({c.uri for c in found.candidates}) == len(found.candidates)
