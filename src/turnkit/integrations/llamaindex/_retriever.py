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

    A node's ``id_`` is the record id, its metadata the record's with the citation fields of
    `source_metadata`; the score is the tool's, in [0, 1]. A failed search raises ``E_TOOL_FAILED``.

    Args:
        tool: From `turnkit.tools.create_vector_query_tool`.
        k: Nodes per query; ``None``: the tool's settings' ``top_k``.
        guard: A Mongo dict or filter node ANDed with every query, its keys removed from the metadata.
        request_context: Other request-context values (``collection``, ``reranker``, a tenant id…).
        trust_tier: When given, every node's metadata carries it as ``trust_tier``.
        hide_metadata_keys: Metadata keys removed besides the guard's.
        callback_manager: LlamaIndex's callback manager.
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
