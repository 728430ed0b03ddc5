"""What the vector query tool returns: text for the model, sources for citations, or an error."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from .._errors import RuntimeFailure, TurnkitError
from ..batteries.vector import PageSpan

if TYPE_CHECKING:
    from ..batteries.vector import VectorMatch

__all__ = [
    "Citation",
    "CollapsedCopy",
    "ErrorKind",
    "ToolErrorInfo",
    "VectorQueryResult",
    "VectorQuerySource",
]

ErrorKind = Literal["invalid_input", "configuration", "failed"]


class Citation(NamedTuple):
    """What both tools cite for a match: its text and where it came from."""

    text: str
    source_uri: str | None
    source_display_name: str | None
    page_span: PageSpan | None

    @classmethod
    def of(cls, match: VectorMatch) -> Citation:
        """The citation of ``match`` (text from ``document``, else ``metadata.text``)."""
        meta = match.metadata or {}
        # Records written without a document may keep their text in metadata (a common ingest habit).
        text = match.document or meta.get("text")
        uri, name = meta.get("source_uri"), meta.get("source_display_name")
        return cls(
            text if isinstance(text, str) else "",
            uri if isinstance(uri, str) else None,
            name if isinstance(name, str) else None,
            PageSpan.from_metadata(meta.get("page_span")),
        )


class CollapsedCopy(BaseModel):
    """Where another copy of a result's text is: a match collapsed into it (same text, another file).

    ``model_dump(by_alias=True)`` gives Vertex's REST spelling (``sourceUri``, ``sourceDisplayName``).

    Attributes:
        id: The copy's record id.
        source_uri: Its ``metadata.source_uri``, when present.
        source_display_name: Its ``metadata.source_display_name``, when present.
    """

    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, validate_by_name=True, validate_by_alias=True
    )

    id: str
    source_uri: str | None = None
    source_display_name: str | None = None

    @classmethod
    def list_of(cls, match: VectorMatch) -> list[CollapsedCopy] | None:
        """The copies collapsed into ``match`` (``None`` when there are none)."""
        return [
            cls(id=copy.id, source_uri=cited.source_uri, source_display_name=cited.source_display_name)
            for copy, cited in ((c, Citation.of(c)) for c in match.duplicates)
        ] or None


class ToolErrorInfo(BaseModel):
    """A structured error a model can read and act on.

    Attributes:
        code: Stable ``E_…`` code.
        message: What went wrong.
        hint: What to do next.
        kind: ``invalid_input`` (the model should correct its arguments),
            ``configuration`` (the host must fix something) or ``failed``
            (the backend failed; retrying may help).
    """

    model_config = ConfigDict(frozen=True)

    code: str
    message: str
    hint: str = ""
    kind: ErrorKind

    @classmethod
    def from_error(cls, exc: TurnkitError, kind: ErrorKind | None = None) -> ToolErrorInfo:
        """Describe a turnkit error; ``kind`` defaults from its class."""
        if kind is None:
            kind = "failed" if isinstance(exc, RuntimeFailure) else "configuration"
        return cls(code=exc.code, message=exc.message, hint=exc.hint, kind=kind)


class VectorQuerySource(BaseModel):
    """One retrieved chunk with everything needed to cite it.

    Attributes:
        id: Record id.
        score: Similarity in [0, 1], higher is closer (the same for every metric).
        distance: The raw LanceDB distance (lower is closer).
        document: The chunk text.
        metadata: The record's metadata.
        vector: The embedding, only when ``include_vectors`` is on.
        source_uri: ``metadata.source_uri`` when present (ingested files).
        source_display_name: ``metadata.source_display_name`` when present.
        page_span: ``metadata.page_span`` when present (paged input such as PDF).
        duplicates: Other records holding the same text (an ``.md`` page and
            its ``.html`` rendering), collapsed into this one: where they are,
            so nothing is hidden. Absent when there are none.
    """

    model_config = ConfigDict(frozen=True)

    id: str
    score: float | None = None
    distance: float | None = None
    document: str | None = None
    metadata: dict[str, Any] | None = None
    vector: list[float] | None = None
    source_uri: str | None = None
    source_display_name: str | None = None
    page_span: PageSpan | None = None
    duplicates: list[CollapsedCopy] | None = None

    @classmethod
    def of(cls, match: VectorMatch, *, with_vector: bool = False) -> VectorQuerySource:
        """The source of ``match`` (its vector only ``with_vector``)."""
        cited = Citation.of(match)
        return cls(
            id=match.id,
            score=match.score,
            distance=match.distance,
            document=cited.text or None,
            metadata=match.metadata,
            vector=match.vector if with_vector else None,
            source_uri=cited.source_uri,
            source_display_name=cited.source_display_name,
            page_span=cited.page_span,
            duplicates=CollapsedCopy.list_of(match),
        )


class VectorQueryResult(BaseModel):
    """The answer of a vector query tool call.

    ``status`` separates the three outcomes a model must tell apart:
    ``ok`` (matches found), ``no_results`` (the search ran and nothing matched)
    and ``error`` (the search did not run or failed; see ``error``).

    Attributes:
        status: ``ok``, ``no_results`` or ``error``.
        relevant_context: The matched chunks' text, one string per chunk in
            the order of ``sources`` (Mastra's ``relevantContext`` is a list too).
            A list keeps the boundaries unforgeable: no chunk text can end its
            entry or pose as another source; citations are in ``sources``.
        sources: The matches (empty when ``include_sources`` is off).
        top_k: The number of results asked of the store after clamping.
        notes: What the tool changed or ignored (a clamped ``top_k``, a
            reranker that is not applied yet…).
        error: Set when ``status == "error"``.
    """

    model_config = ConfigDict(frozen=True)

    status: Literal["ok", "no_results", "error"]
    relevant_context: list[str] = []
    sources: list[VectorQuerySource] = []
    top_k: int | None = None
    notes: list[str] = []
    error: ToolErrorInfo | None = None

    @property
    def ok(self) -> bool:
        """True unless the call failed (``no_results`` is a successful search)."""
        return self.status != "error"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict without empty fields, for tool messages."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self) -> str:
        """`to_dict` as compact JSON text (what a tool-call message carries)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))
