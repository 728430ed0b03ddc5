"""A LlamaIndex ``BaseRetriever`` returning ``NodeWithScore`` from a turnkit vector query tool."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from llama_index.core.callbacks import CallbackManager
from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ... import TrustTier, validate_trust_tier
from ..._aio import run_sync
from ...tools import VectorQueryTool
from .._common import GuardFilter, ToolBridge, source_metadata

__all__ = ["TurnkitRetriever"]


class TurnkitRetriever(BaseRetriever):
    """Nodes from a turnkit vector query tool (its reranker, hybrid search and guard included).

    Args:
        tool: From `turnkit.tools.create_vector_query_tool`.
        k: Nodes per query; ``None`` (the default) is the tool's settings'
            ``top_k`` (`RetrievalSettings`, 5 unless the tool was created with another).
        guard: A guard for every query (a Mongo dict over metadata keys, or a
            filter node); its keys are removed from the nodes' metadata. Build
            one retriever per tenant; the tool is shared.
        request_context: Other request-context values (``collection``,
            ``reranker``, a tenant id for a store resolver…).
        trust_tier: When given, every node's metadata carries it as
            ``trust_tier``, for a prompt that renders tiers.
        hide_metadata_keys: Metadata keys removed besides the guard's.
        callback_manager: LlamaIndex's callback manager.

    With no options the nodes are those of `turnkit.batteries.vector.retrieve`
    with default settings: hybrid search, copies of one text collapsed.
    A node's ``id_`` is the record id, its ``text`` the chunk, its metadata
    the record's metadata (plus ``source_uri``, ``source_display_name``,
    ``page_span`` and ``duplicates``, where the collapsed copies of its text
    are, when known); ``NodeWithScore.score`` is the tool's score in [0, 1].
    A failed search raises `turnkit.tools.ToolRuntimeError` (``E_TOOL_FAILED``), its message
    led by the original code.
    """

    def __init__(
        self,
        tool: VectorQueryTool,
        *,
        k: int | None = None,
        guard: GuardFilter | None = None,
        request_context: Mapping[str, Any] | None = None,
        trust_tier: TrustTier | None = None,
        hide_metadata_keys: Iterable[str] = (),
        callback_manager: CallbackManager | None = None,
    ) -> None:
        super().__init__(callback_manager=callback_manager)
        context = dict(request_context or {})
        self._bridge: ToolBridge[None] = ToolBridge(
            tool,
            trust_tier=None,
            guard=lambda _: guard,
            request_context=lambda _: context,
            hide_metadata_keys=hide_metadata_keys,
        )
        self._k = k
        self._tier = validate_trust_tier(trust_tier) if trust_tier is not None else None

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return run_sync(self._aretrieve(query_bundle))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        sources = await self._bridge.sources(query_bundle.query_str, self._k, None)
        return [
            NodeWithScore(
                node=TextNode(id_=s.id, text=s.document or "", metadata=source_metadata(s, self._tier)),
                score=s.score,
            )
            for s in sources
        ]
