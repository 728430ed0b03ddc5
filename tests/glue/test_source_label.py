"""`source_of`: the one label for where a record came from (glue, `turnkit query`)."""

from __future__ import annotations

import inspect

from turnkit.batteries import vector

from .._snippets import python_blocks, run_snippet


def test_the_docstring_example_runs() -> None:
    [block] = python_blocks(inspect.getdoc(vector.source_of) or "")
    run_snippet(block, name="source_of")


def test_pages_sections_and_fallbacks() -> None:
    span = {"first_page": 12, "last_page": 13}
    assert vector.source_of({"source_display_name": "a.pdf", "page_span": span}) == "a.pdf (pp. 12–13)"
    assert vector.source_of({"source_uri": "file:///a.pdf", "page_span": {**span, "last_page": 12}}) == (
        "file:///a.pdf (p. 12)"
    )
    assert vector.source_of({"source": "chat", "section": "ignored"}) == "chat"
    assert vector.source_of({"section": "no file"}) is None
    assert vector.source_of({"source_display_name": "a.pdf", "page_span": {"first_page": "1"}}) == "a.pdf"
