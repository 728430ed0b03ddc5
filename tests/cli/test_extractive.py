"""The demo's extractive answer quotes prose, never code (also when a chunk starts inside a code block)."""

from __future__ import annotations

from turnkit.cli._extractive import sentences_of

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
