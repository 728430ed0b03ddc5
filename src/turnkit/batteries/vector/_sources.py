"""Where a record came from, as people read it: one label for the retrieval glue and ``turnkit query``.

A module of its own, importing nothing heavy, so that ``turnkit query`` can
print the label without loading the retrieval glue.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["source_of"]


def source_of(meta: Mapping[str, Any]) -> str | None:
    """Where a record came from: the glue's ``source``, else an ingested file's name, section and pages.

    ```python
    from turnkit.batteries.vector import source_of

    print(source_of({"source_display_name": "guide.md", "section": "Install > Linux"}))
    print(source_of({"source_display_name": "manual.pdf", "page_span": {"first_page": 3, "last_page": 4}}))
    #> guide.md § Install › Linux
    #> manual.pdf (pp. 3–4)
    ```

    Args:
        meta: A record's metadata.

    Returns:
        The label, or ``None`` when the metadata names no source.
    """
    if isinstance(meta.get("source"), str):
        return str(meta["source"])
    name = meta.get("source_display_name") or meta.get("source_uri")
    if not isinstance(name, str) or not name:
        return None
    section = meta.get("section")
    if isinstance(section, str) and section:
        # "Guide > Install" would reach the prompt as "Guide &gt; Install" (attributes are escaped).
        name = f"{name} § {section.replace(' > ', ' › ')}"
    span = meta.get("page_span")
    if isinstance(span, Mapping):
        first, last = span.get("first_page"), span.get("last_page")
        if isinstance(first, int) and isinstance(last, int):
            name += f" (p. {first})" if first == last else f" (pp. {first}–{last})"
    return name
