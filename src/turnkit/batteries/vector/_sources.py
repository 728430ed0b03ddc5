"""Where a record came from: its pages, and one label for the retrieval glue and ``turnkit query``.

A module of its own, importing nothing heavy, so that ``turnkit query`` can
print the label, and ``turnkit.ingest`` write page spans, without loading
pydantic or the retrieval glue.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnkit._checks import is_int

__all__ = ["PageSpan", "source_of"]


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


@dataclass(frozen=True, kw_only=True)
class PageSpan:
    """The pages a chunk was taken from: 1-indexed and inclusive, as in Vertex AI RAG Engine.

    Ingest writes it (as ``metadata["page_span"]``) and both tools cite it; in a
    pydantic model, ``model_dump(by_alias=True)`` gives Vertex's REST spelling
    (``firstPage``, ``lastPage``), and either spelling validates.
    """

    # Read by pydantic when a model holds a PageSpan; a plain dict keeps pydantic out of this module.
    __pydantic_config__ = {"alias_generator": _camel, "validate_by_name": True, "validate_by_alias": True}

    first_page: int
    """The first page of the chunk's text."""
    last_page: int
    """The last page of the chunk's text."""

    def to_dict(self) -> dict[str, int]:
        """``{"first_page": …, "last_page": …}``, the form stored in metadata."""
        return {"first_page": self.first_page, "last_page": self.last_page}

    @classmethod
    def from_metadata(cls, value: Any) -> PageSpan | None:
        """The span stored in a chunk's ``page_span`` metadata, if it is a well-formed one."""
        if isinstance(value, Mapping):
            first, last = value.get("first_page"), value.get("last_page")
            if is_int(first) and is_int(last):
                return cls(first_page=first, last_page=last)
        return None


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
    span = PageSpan.from_metadata(meta.get("page_span"))
    if span is not None:
        first, last = span.first_page, span.last_page
        name += f" (p. {first})" if first == last else f" (pp. {first}–{last})"
    return name
