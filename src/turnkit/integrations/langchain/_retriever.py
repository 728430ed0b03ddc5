"""A LangChain ``BaseRetriever`` over a turnkit vector query tool."""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ... import TrustTier
from ...tools import VectorQueryResult, VectorQueryTool
from .._common import ToolBridge, raise_error, source_metadata

__all__ = ["TurnkitRetriever"]


class TurnkitRetriever(BaseRetriever):
    """Documents from a turnkit vector query tool (its reranker, hybrid search and guard included).

    Attributes:
        tool: From `turnkit.tools.create_vector_query_tool`.
        k: Documents per query; ``None`` (the default) is the tool's
            settings' ``top_k`` (`RetrievalSettings`, 5 unless the tool was
            created with another); ``invoke(query, k=...)`` overrides it per call.
        guard: A guard for every query (a Mongo dict over metadata keys); its
            keys are removed from the documents' metadata. Build one retriever
            per tenant (``retriever.model_copy(update={"guard": ...})``); the
            tool is shared.
        request_context: Other request-context values (``collection``,
            ``reranker``, a tenant id for a store resolver…).
        trust_tier: When given, every document's metadata carries it as
            ``trust_tier``, for a prompt that renders tiers.
        hide_metadata_keys: Metadata keys removed besides the guard's (a
            creation-time ``guard``'s keys, say).

    With no options the documents are those of `turnkit.batteries.vector.retrieve`
    with default settings: hybrid search, copies of one text collapsed.
    A document's ``id`` is the record id; its metadata is the record's
    metadata plus ``score`` (the tool's score in [0, 1]) and, when known,
    ``source_uri``, ``source_display_name``, ``page_span`` and ``duplicates``
    (where the collapsed copies of its text are). A failed search
    raises `turnkit.tools.ToolRuntimeError` (``E_TOOL_FAILED``) whose message starts with the
    original stable code and whose hint is the tool's.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tool: VectorQueryTool
    k: int | None = None
    guard: dict[str, Any] | None = None
    request_context: dict[str, Any] = Field(default_factory=dict)
    trust_tier: TrustTier | None = None
    hide_metadata_keys: list[str] = Field(default_factory=list)

    def _bridge(self) -> ToolBridge[None]:
        guard = self.guard
        return ToolBridge(
            self.tool,
            trust_tier=None,
            guard=(lambda _: guard) if guard is not None else None,
            request_context=lambda _: self.request_context,
            hide_metadata_keys=self.hide_metadata_keys,
        )

    def _arguments(self, query: str, k: int | None) -> dict[str, Any]:
        top_k = self.k if k is None else k
        # No top_k: the tool's own default, its settings' top_k.
        return {"query_text": query} | ({"top_k": top_k} if top_k is not None else {})

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return _documents(self._bridge().run_sync(self._arguments(query, k), None), self.trust_tier)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return _documents(await self._bridge().run(self._arguments(query, k), None), self.trust_tier)


def _documents(result: VectorQueryResult, trust_tier: TrustTier | None) -> list[Document]:
    if result.error is not None:
        raise_error(result.error)
    documents = []
    for source in result.sources:
        metadata = source_metadata(source, trust_tier)
        metadata["score"] = source.score
        documents.append(Document(id=source.id, page_content=source.document or "", metadata=metadata))
    return documents
