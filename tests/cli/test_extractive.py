"""The demo's extractive answer quotes whole prose sentences, never code.

Also when a chunk starts inside a code block, or a code block sits inside a list item.
"""

from __future__ import annotations

import re

from turnkit import Retrievable
from turnkit.batteries.vector import HashEncoder
from turnkit.cli._extractive import extract_answer, sentences_of
from turnkit.cli._shipped_docs import shipped_docs
from turnkit.ingest import chunk_document, load_document

CUT_INSIDE_CODE = """assert await ids_for(condition("metadata.year", ">=", 2020)) == ["new"]  # a filter node
assert await ids_for({"metadata.year": {"$lt": 2020}}) == ["old"]
```

The glue turns a filter into a where clause. It is checked when the glue is built.

```python
x = call(a, b)
```
Prose after the code block, long enough to be quoted.
"""


def test_code_is_never_quoted() -> None:
    assert sentences_of(CUT_INSIDE_CODE) == [
        "The glue turns a filter into a where clause.",
        "It is checked when the glue is built.",
        "Prose after the code block, long enough to be quoted.",
    ]


def test_unfenced_code_lines_and_markup_are_left_out() -> None:
    text = (
        "## Heading\n\n- A list item that reads as a full sentence here.\n"
        "import numpy as np\nvs = create_vector_store(uri='memory://', encoder=HashEncoder())\n"
        "| a | b |\n"
    )
    assert sentences_of(text) == ["A list item that reads as a full sentence here."]


def test_a_code_block_inside_a_list_item_is_code() -> None:
    text = (
        "- A guard narrows every query of the tool. It is set by the host for each request.\n\n"
        "  ```python\n"
        "  Pass the guard to the tool when you build it for each request.\n"
        "  tool = create_vector_query_tool(store=vs, collection='kb', guard={'tenant': 't1'})\n"
        "  ```\n\n"
        "  The model never sees the guard or its values in any result.\n"
    )
    assert sentences_of(text) == [
        "A guard narrows every query of the tool.",
        "It is set by the host for each request.",
        "The model never sees the guard or its values in any result.",
    ]


def test_only_whole_sentences_are_quoted() -> None:
    text = (
        "The parser reads a small grammar, which is described below in full:\n\n"
        "```\nexpr := term\n```\n\n"
        "Each term is a comparison (grammar in [Filters](filters.md)). Field names are metadata keys.\n"
        "A sentence that a line of code interrupts in the middle, before\n"
        "x = f(a[0], b[1]); y = {c: d}\n"
        "its end, is not quoted at all.\n"
    )
    assert sentences_of(text) == [
        "Each term is a comparison (grammar in [Filters](filters.md)).",
        "Field names are metadata keys.",
    ]


def _code_lines(page: str) -> set[str]:
    lines: set[str] = set()
    inside = False
    for line in page.splitlines():
        if line.strip().startswith("```"):
            inside = not inside
        elif inside and len(line.strip()) >= 12:
            lines.add(line.strip())
    return lines


def test_no_sentence_of_the_shipped_docs_quotes_code() -> None:
    """The demo's corpus, chunked as the demo ingests it: no quoted sentence holds a line of a code block."""
    checked = 0
    for path in sorted(shipped_docs().rglob("*.md")):
        code = _code_lines(path.read_text(encoding="utf-8"))
        for chunk in chunk_document(load_document(path)):
            for sentence in sentences_of(chunk.text):
                bare = re.sub(r"`[^`]*`", "", sentence)  # inline code in prose is prose
                assert not [line for line in code if line in bare or sentence in line], (path.name, sentence)
                assert re.search(r"[.!?][*_`\"')\]]*$", sentence), (path.name, sentence)
                checked += 1
    assert checked > 500


def test_a_section_whose_heading_matches_the_question_is_preferred() -> None:
    retrieved = [
        Retrievable(
            id=name,
            content=text,
            trust_tier="first-party",
            source=f"guide.md § Guide › {name}",
        )
        for name, text in (
            ("Performance", "Splitting runs at two thousand pages a second on one thread."),
            ("Chunking", "Splitting cuts each page at token boundaries of the encoding."),
        )
    ]
    quotes = extract_answer("How does chunking work?", retrieved, HashEncoder(64), sentences=1)
    assert [q.source for q in quotes] == ["guide.md § Guide › Chunking"]


def test_a_sentence_that_leans_on_the_one_before_is_not_quoted_alone() -> None:
    record = Retrievable(
        id="bench",
        content="The bench splits documents into chunks. It splits documents into chunks and counts them.",
        trust_tier="first-party",
        source="guide.md § Guide › Bench",
    )
    quotes = extract_answer("How are documents split into chunks?", [record], HashEncoder(64))
    assert [q.text for q in quotes] == ["The bench splits documents into chunks."]
