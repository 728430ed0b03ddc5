"""What every framework adapter shares: the request context, what the model sees, and errors.

Nothing here imports a framework. An adapter turns a framework's per-run
values (pydantic-ai ``deps``, a LangChain config…) into a request context,
calls the tool through `ToolBridge`, and hands the model the text or error
this module renders.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any, Generic, NoReturn, TypeAlias, TypeVar

from .. import Retrievable, TrustTier, render_prompt, validate_trust_tier
from .._checks import STORE_HINT, expect
from ..batteries.vector import FilterNode, VectorStore, VectorStoreUsageError, parse_mongo
from ..tools import ToolErrorInfo, ToolRuntimeError, VectorQueryResult, VectorQuerySource, VectorQueryTool
from ..tools._errors import config_error as tool_config_error
from ..tools._filters import metadata_keys as filter_keys

__all__ = [
    "GuardFilter",
    "TierRule",
    "ToolBridge",
    "ToolOutcome",
    "batches",
    "config_error",
    "error_text",
    "expect_store",
    "guard_keys",
    "invalid_query",
    "raise_error",
    "record_error",
    "render_sources",
    "source_metadata",
    "visible_metadata",
]

DepsT = TypeVar("DepsT")
T = TypeVar("T")
GuardFilter: TypeAlias = "Mapping[str, Any] | FilterNode"
"""A host's guard: a Mongo dict over metadata keys, or a filter node."""
TierRule: TypeAlias = "TrustTier | Callable[[VectorQuerySource], TrustTier]"
"""A trust tier for every result, or a function of one result that the deployer wrote."""


def guard_keys(guard: GuardFilter | None) -> frozenset[str]:
    """The top-level metadata keys a guard names (what must never be shown back to the model).

    A ``Raw`` SQL guard names no keys this function can see: pass the keys as
    ``hide_metadata_keys`` to the adapter instead.
    """
    if guard is None:
        return frozenset()
    if isinstance(guard, Mapping):
        try:
            guard = parse_mongo(guard, field_prefix="metadata.")
        except Exception:  # the tool refuses an invalid guard itself, without echoing it
            return frozenset()
    return frozenset(key.split(".", 1)[0] for key in filter_keys(guard))


def visible_metadata(metadata: Mapping[str, Any] | None, hidden: Iterable[str]) -> dict[str, Any]:
    """``metadata`` without the hidden (guard) keys."""
    hidden = set(hidden)
    return {k: v for k, v in (metadata or {}).items() if k not in hidden}


def source_metadata(source: VectorQuerySource, trust_tier: TrustTier | None = None) -> dict[str, Any]:
    """A source's metadata (already scrubbed) plus its citation fields and, when given, its tier.

    For retrievers that hand documents to a framework: ``source_uri``,
    ``source_display_name`` and ``page_span`` when known, ``trust_tier`` when
    stated, and ``duplicates`` when copies of the text were collapsed into the
    source: where they are (their file names, else their ids), as the
    retrieval callbacks list them.
    """
    metadata = dict(source.metadata or {})
    for key in ("source_uri", "source_display_name"):
        if getattr(source, key) is not None:
            metadata[key] = getattr(source, key)
    if source.page_span is not None:
        metadata["page_span"] = source.page_span.to_dict()
    if source.duplicates:
        metadata["duplicates"] = [c.source_display_name or c.source_uri or c.id for c in source.duplicates]
    if trust_tier is not None:
        metadata["trust_tier"] = trust_tier
    return metadata


config_error = partial(VectorStoreUsageError, code="E_INVALID_VECTOR_STORE_CONFIG")
"""An adapter's store, index or option that cannot work: ``E_INVALID_VECTOR_STORE_CONFIG``."""
invalid_query = partial(VectorStoreUsageError, code="E_VECTOR_STORE_INVALID_QUERY")
"""An operation a framework's contract, or a tenant's scope, refuses: ``E_VECTOR_STORE_INVALID_QUERY``."""
record_error = partial(VectorStoreUsageError, code="E_INVALID_VECTOR_RECORD")
"""A value, node or entry that cannot be stored as a record: ``E_INVALID_VECTOR_RECORD``."""


def expect_store(store: object) -> None:
    """Refuse anything but a turnkit `VectorStore`: ``E_INVALID_VECTOR_STORE_CONFIG``."""
    expect(store, VectorStore, "store", config_error, STORE_HINT)


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter): keeps each ``in`` list and commit small."""
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def error_text(info: ToolErrorInfo) -> str:
    """One line a model can act on: the stable code, the message and the hint."""
    return f"{info.code}: {info.message} {info.hint}".strip()


def raise_error(info: ToolErrorInfo) -> NoReturn:
    """Raise a failed call as ``E_TOOL_FAILED``: the original code leads the message, the hint is kept."""
    raise ToolRuntimeError(f"{info.code}: {info.message}", code="E_TOOL_FAILED", hint=info.hint)


def _source_label(source: VectorQuerySource) -> str | None:
    label = source.source_display_name or source.source_uri
    if label and source.page_span is not None:
        first, last = source.page_span.first_page, source.page_span.last_page
        label += f", p. {first}" if first == last else f", pp. {first}-{last}"
    return label


def render_sources(result: VectorQueryResult, trust_tier: TierRule) -> str:
    """The results as turnkit renders retrieved records: first-party corpus, third-party fences.

    Uses `turnkit.render_prompt`, so bodies are escaped and each untrusted
    record gets its own nonce fence; metadata is not rendered (only ``id``,
    ``source`` and ``score``), so no guard value can appear.
    """
    sources = result.sources or [  # include_sources=False: the text alone, numbered
        VectorQuerySource(id=str(i), document=text) for i, text in enumerate(result.relevant_context, 1)
    ]
    records = [
        Retrievable(
            id=s.id,
            content=s.document or "",
            trust_tier=validate_trust_tier(trust_tier(s) if callable(trust_tier) else trust_tier),
            source=_source_label(s),
            score=s.score,
        )
        for s in sources
        if s.document and s.document.strip()  # no text: nothing to show (and no valid Retrievable)
    ]
    # One block: the directive and corpus, then the fenced untrusted records (a tool result or
    # instructions text is a single message, so the core's user-role split does not apply here).
    prompt = render_prompt(retrievables=records)
    return "\n\n".join(part for part in (prompt.context, prompt.untrusted_context) if part)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """One tool call, ready for a framework.

    Attributes:
        result: The tool's result with the guard's keys removed from every source's metadata.
        text: What the model reads on success (rendered records and notes), or `error_text`.
        error: The structured error when the call failed.
    """

    result: VectorQueryResult
    text: str
    error: ToolErrorInfo | None


class ToolBridge(Generic[DepsT]):
    """A vector query tool with a per-request guard taken from a framework's run values.

    Args:
        tool: The turnkit tool.
        trust_tier: The tier of every result, or a function of one result;
            ``None`` only where results are returned as data, never rendered.
        guard: ``fn(deps) -> guard`` (a Mongo dict, a filter node or ``None``),
            ANDed with every query; never shown to the model.
        request_context: ``fn(deps) -> mapping`` of other request-context
            values (a tenant id for a store resolver, ``top_k``…).
        hide_metadata_keys: Metadata keys never returned to the model, besides
            the guard's own keys (use it for a creation-time or raw SQL guard).
    """

    def __init__(
        self,
        tool: VectorQueryTool,
        trust_tier: TierRule | None,
        guard: Callable[[DepsT], GuardFilter | None] | None = None,
        request_context: Callable[[DepsT], Mapping[str, Any]] | None = None,
        hide_metadata_keys: Iterable[str] = (),
    ) -> None:
        hint = "Create it with turnkit.tools.create_vector_query_tool(...)."
        expect(tool, VectorQueryTool, "tool", tool_config_error, hint, option="tool")
        if trust_tier is not None and not callable(trust_tier):
            validate_trust_tier(trust_tier)
        for option, fn in (("guard", guard), ("request_context", request_context)):
            if fn is not None and not callable(fn):
                raise tool_config_error(f"{option} must be a function of the run's deps.", option=option)
        self.tool = tool
        self.trust_tier = trust_tier
        self._guard = guard
        self._context = request_context
        self._hidden = frozenset(hide_metadata_keys)

    def context_for(self, deps: DepsT) -> tuple[dict[str, Any], frozenset[str]]:
        """The request context for one run and the metadata keys to hide from its model."""
        context = dict(self._context(deps)) if self._context is not None else {}
        hidden = set(self._hidden)
        if "filter" in context:
            hidden |= guard_keys(context["filter"])
        if self._guard is not None:
            guard = self._guard(deps)
            if guard is not None:
                if "filter" in context:
                    raise tool_config_error(
                        "The guard is given twice: by guard= and by the request context's 'filter'.",
                        option="guard",
                    )
                context["filter"] = guard
                hidden |= guard_keys(guard)
        return context, frozenset(hidden)

    async def schema(self, deps: DepsT) -> dict[str, Any]:
        """The arguments' JSON Schema for this run (keys read inside its guard)."""
        context, _ = self.context_for(deps)
        return await self.tool.input_schema_for(context)

    async def run(self, arguments: Mapping[str, Any] | str, deps: DepsT) -> VectorQueryResult:
        """The tool's result for one call, the guard's keys removed from its sources' metadata."""
        context, hidden = self.context_for(deps)
        return scrub(await self.tool.execute(arguments, request_context=context), hidden)

    async def sources(self, query: str, top_k: int | None, deps: DepsT) -> list[VectorQuerySource]:
        """A retriever's search: the sources for ``query``; a failed search raises ``E_TOOL_FAILED``."""
        result = await self.run({"query_text": query} | ({"top_k": top_k} if top_k is not None else {}), deps)
        if result.error is not None:
            raise_error(result.error)
        return result.sources

    async def call(self, arguments: Mapping[str, Any] | str, deps: DepsT) -> ToolOutcome:
        """Run the tool for one model call; never raises for the model's mistakes or a failing backend."""
        return self.outcome(await self.run(arguments, deps))

    def call_sync(self, arguments: Mapping[str, Any] | str, deps: DepsT) -> ToolOutcome:
        """Sync form of `call` (the run's callbacks are read in the caller's thread)."""
        context, hidden = self.context_for(deps)
        return self.outcome(scrub(self.tool.execute_sync(arguments, request_context=context), hidden))

    def outcome(self, result: VectorQueryResult) -> ToolOutcome:
        """The text a model reads for this result: rendered records (and notes), or the error line."""
        if result.error is not None:
            return ToolOutcome(result, error_text(result.error), result.error)
        notes = "\n".join(f"Note: {n}" for n in result.notes)
        if result.status == "no_results":
            return ToolOutcome(result, notes or "No records matched.", None)
        if self.trust_tier is None:
            raise tool_config_error("A trust tier is required to render results.", option="trust_tier")
        body = render_sources(result, self.trust_tier) or "The matching records have no text."
        return ToolOutcome(result, f"{body}\n\n{notes}" if notes else body, None)


def scrub(result: VectorQueryResult, hidden: Iterable[str]) -> VectorQueryResult:
    """The result with the hidden keys removed from every source's metadata."""
    hidden = frozenset(hidden)
    if not hidden or not result.sources:
        return result
    sources = [
        s.model_copy(update={"metadata": visible_metadata(s.metadata, hidden)}) if s.metadata else s
        for s in result.sources
    ]
    return result.model_copy(update={"sources": sources})
