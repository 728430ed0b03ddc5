"""A LangChain ``BaseRetriever`` over a turnkit vector query tool."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ... import TrustTier
from ..._aio import run_sync
from ...tools import VectorQuerySource, VectorQueryTool
from .._common import ToolBridge, source_metadata

__all__ = ["TurnkitRetriever"]


class TurnkitRetriever(BaseRetriever):
    """Documents from a turnkit vector query tool (its reranker, hybrid search and guard included).

    A document's ``id`` is the record id; its metadata is the record's, with ``score`` and the
    citation fields of `source_metadata`. A failed search raises ``E_TOOL_FAILED``, led by the original code.

    Attributes:
        tool: From `turnkit.tools.create_vector_query_tool`.
        k: Documents per query; ``None``: the tool's settings' ``top_k``; ``invoke(query, k=...)`` per call.
        guard: A Mongo dict ANDed with every query, its keys removed from the metadata (one retriever
            per tenant: ``retriever.model_copy(update={"guard": ...})``).
        request_context: Other request-context values (``collection``, ``reranker``, a tenant id…).
        trust_tier: When given, every document's metadata carries it as ``trust_tier``.
        hide_metadata_keys: Metadata keys removed besides the guard's.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tool: VectorQueryTool
    k: int | None = None
    guard: dict[str, Any] | None = None
    request_context: dict[str, Any] = Field(default_factory=dict)
    trust_tier: TrustTier | None = None
    hide_metadata_keys: list[str] = Field(default_factory=list)

    def _sources(self, query: str, k: int | None) -> Coroutine[Any, Any, list[VectorQuerySource]]:
        guard, context = self.guard, self.request_context
        bridge: ToolBridge[None] = ToolBridge(
            self.tool,
            trust_tier=None,
            guard=lambda _: guard,
            request_context=lambda _: context,
            hide_metadata_keys=self.hide_metadata_keys,
        )
        return bridge.sources(query, self.k if k is None else k, None)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self._documents(run_sync(self._sources(query, k)))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self._documents(await self._sources(query, k))

    def _documents(self, sources: list[VectorQuerySource]) -> list[Document]:
        return [
            Document(
                id=s.id,
                page_content=s.document or "",
                metadata=source_metadata(s, self.trust_tier) | {"score": s.score},
            )
            for s in sources
        ]
