"""A LlamaIndex ``BasePydanticVectorStore`` over one turnkit collection."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import replace
from typing import Any

from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode, MetadataMode, TextNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from ... import TrustTier, UsageError, validate_trust_tier
from ..._aio import run_sync
from ..._checks import STORE_HINT, expect
from ...batteries.vector import (
    MAX_IN_VALUES,
    And,
    CollectionNotFoundError,
    Condition,
    FilterKeyNotFoundError,
    FilterNode,
    HybridSpec,
    QueryBuilder,
    RetrievalSettings,
    SettingsInput,
    VectorMatch,
    condition,
    parse_mongo,
    retrieve,
)
from ...batteries.vector import VectorStore as TurnkitStore
from .._common import GuardFilter, batches, guard_keys, invalid_query, record_error, visible_metadata
from ._filters import to_filter_node

__all__ = ["TurnkitVectorStore"]

log = logging.getLogger("turnkit.integrations")

_FIELDS = ("id", "document", "metadata", "vector")
_VECTOR_MODES = (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.MMR)
_TEXT_MODES = (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE)
_MODES = "default, hybrid, text_search, sparse (full-text) and mmr"


class TurnkitVectorStore(BasePydanticVectorStore):
    """LlamaIndex's vector store contract over one collection of a turnkit store.

    Nodes are stored whole (the text as ``document``, the node in the metadata as
    ``node_to_metadata_dict`` writes it), so ``VectorStoreIndex.from_vector_store`` and the
    memory blocks rebuild them. Similarities are turnkit's scores, higher is closer.

    Args:
        store: The turnkit store (`turnkit.batteries.vector.create_vector_store`).
        collection: The collection; created by the first write.
        trust_tier: Stored on every record and set on every node read back (default ``"third-party"``).
        guard: A tenant's scope (a Mongo dict or a filter node): ANDed with every query, read and
            delete; writes go through it with its equality values stamped; its keys are hidden on reads.
        settings: `RetrievalSettings` for searches; the query sets ``top_k``, the mode and ``alpha``.
            Duplicate texts are kept unless these settings set ``collapse_duplicates``.
        flat_metadata: Refuse node metadata that is not flat (off: turnkit stores any JSON).
    """

    stores_text: bool = True
    flat_metadata: bool = False
    collection: str
    trust_tier: str = "third-party"

    _store: TurnkitStore = PrivateAttr()
    _guard: FilterNode | None = PrivateAttr(default=None)
    _stamp: dict[str, Any] = PrivateAttr(default_factory=dict)
    _hidden: frozenset[str] = PrivateAttr(default=frozenset())
    _settings: RetrievalSettings = PrivateAttr()

    def __init__(
        self,
        store: TurnkitStore,
        collection: str,
        *,
        trust_tier: TrustTier = "third-party",
        guard: GuardFilter | None = None,
        settings: SettingsInput = None,
        flat_metadata: bool = False,
    ) -> None:
        expect(store, TurnkitStore, "store", UsageError, STORE_HINT)
        # Declared fields of the pydantic model (its generated __init__ knows only the base's).
        fields: dict[str, Any] = {
            "collection": collection,
            "trust_tier": validate_trust_tier(trust_tier),
            "flat_metadata": flat_metadata,
        }
        super().__init__(**fields)
        self._store = store
        self._guard = parse_mongo(guard, field_prefix="metadata.") if isinstance(guard, Mapping) else guard
        self._stamp = _equalities(self._guard)
        self._hidden = guard_keys(guard)
        self._settings = RetrievalSettings.of(settings)

    @classmethod
    def class_name(cls) -> str:
        return "TurnkitVectorStore"

    @property
    def client(self) -> TurnkitStore:
        """The turnkit store."""
        return self._store

    # -- building blocks shared by the sync and async forms -----------------------------------
    def _scoped(self, filters: MetadataFilters | None = None) -> QueryBuilder:
        """The collection inside the guard, narrowed to ``filters`` when given."""
        builder = self._store(self.collection)
        for node in (self._guard, to_filter_node(filters)):
            builder = builder if node is None else builder.where(node)
        return builder

    def _records(self, nodes: Sequence[BaseNode]) -> list[dict[str, Any]]:
        by_id: dict[str, dict[str, Any]] = {}
        for node in nodes:
            try:
                metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=self.flat_metadata)
            except ValueError as exc:
                raise record_error(
                    f"Node {node.node_id!r}: {exc}.",
                    hint="Flatten the node's metadata, or create the store with flat_metadata=False.",
                    record_id=node.node_id,
                ) from None
            metadata.update(self._stamp)
            metadata["trust_tier"] = self.trust_tier
            record: dict[str, Any] = {
                "id": node.node_id,
                "document": node.get_content(metadata_mode=MetadataMode.NONE),
                "metadata": metadata,
            }
            if node.embedding is not None:
                record["vector"] = node.embedding
            by_id.pop(node.node_id, None)  # the last copy of an id wins, as in SimpleVectorStore
            by_id[node.node_id] = record
        return list(by_id.values())

    def _node(self, match: VectorMatch) -> BaseNode:
        metadata = dict(match.metadata or {})
        if "_node_content" in metadata:
            node = metadata_dict_to_node(metadata, text=match.document)
        else:  # written by another turnkit surface (ingest, a tool): a plain text node
            node = TextNode(id_=match.id, text=match.document or "", metadata=metadata)
        node.metadata = visible_metadata(node.metadata, self._hidden)
        if "trust_tier" in metadata:
            node.metadata["trust_tier"] = metadata["trust_tier"]
        if match.vector is not None:
            node.embedding = [float(x) for x in match.vector]
        return node

    def _search(
        self, query: VectorStoreQuery, kwargs: Mapping[str, Any]
    ) -> tuple[QueryBuilder, RetrievalSettings, str | None]:
        mode = VectorStoreQueryMode(query.mode)
        words = query.query_str if query.query_str and query.query_str.strip() else None
        base = self._settings
        changes: dict[str, Any] = {"top_k": query.similarity_top_k, "diversify": None}
        if "collapse_duplicates" not in base.model_fields_set:
            changes["collapse_duplicates"] = False  # a vector store returns every node it matched
        if mode in _VECTOR_MODES:
            changes["hybrid"] = None
            if mode == VectorStoreQueryMode.MMR:
                lam = query.mmr_threshold if query.mmr_threshold is not None else kwargs.get("mmr_threshold")
                changes["diversify"] = lam if lam is not None else base.diversify or True
        elif mode == VectorStoreQueryMode.HYBRID or mode in _TEXT_MODES:
            if words is None:
                raise invalid_query(
                    f"A {mode.value} query needs query_str.",
                    hint="Pass the question's words as query_str.",
                    collection=self.collection,
                )
            spec = base.hybrid or HybridSpec()
            if mode == VectorStoreQueryMode.HYBRID:
                changes["top_k"] = query.hybrid_top_k or query.similarity_top_k
                changes["hybrid"] = spec if query.alpha is None else replace(spec, alpha=float(query.alpha))
            else:  # full-text only: BM25 is turnkit's sparse (lexical) search
                changes["top_k"] = query.sparse_top_k or query.similarity_top_k
                changes["hybrid"] = replace(spec, alpha=0.0)
        else:
            raise invalid_query(
                f"Query mode {mode.value!r} is not supported by the turnkit vector store.",
                hint=f"Use one of: {_MODES}.",
                collection=self.collection,
            )
        if query.query_embedding is None and words is None:
            raise invalid_query(
                "The query has neither query_embedding nor query_str.",
                hint="Query through VectorStoreIndex.as_retriever(), or set query_embedding.",
                collection=self.collection,
            )
        builder = self._scoped(query.filters)
        if query.query_embedding is not None:
            builder = builder.near_vector(query.query_embedding)
        elif words is not None:
            builder = builder.near_text(words)  # encoded by the turnkit store's encoder (or full-text only)
        # Only a non-empty list restricts: VectorStoreIndex.from_vector_store sends node_ids=[].
        if query.node_ids:
            builder = builder.where_in("id", list(query.node_ids))
        if query.doc_ids:
            builder = builder.where_in("metadata.ref_doc_id", list(query.doc_ids))
        return builder, base.merge(**changes), words

    # -- writes (each sync form runs its async form, as turnkit's own sync forms do) ---------------
    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Upsert the nodes (a stored id is replaced; the store encodes those without embedding)."""
        return run_sync(self.async_add(nodes))

    async def async_add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> list[str]:
        """Async form of `add`."""
        records = self._records(nodes)
        if records:
            await self._store(self.collection).upsert(records, guard=self._guard)
        return [n.node_id for n in nodes]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node whose source document is ``ref_doc_id`` (``"None"``: the nodes without one)."""
        run_sync(self.adelete(ref_doc_id))

    async def adelete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Async form of `delete`."""
        with suppress(CollectionNotFoundError):  # nothing was ever written: nothing to delete
            await self._scoped().where(condition("metadata.ref_doc_id", "eq", ref_doc_id)).delete()

    def delete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Delete the nodes in ``node_ids`` (when given) that match ``filters`` (when given); neither: all."""
        run_sync(self.adelete_nodes(node_ids, filters))

    async def adelete_nodes(
        self,
        node_ids: list[str] | None = None,
        filters: MetadataFilters | None = None,
        **delete_kwargs: Any,
    ) -> None:
        """Async form of `delete_nodes`."""
        builder = self._scoped(filters)
        with suppress(CollectionNotFoundError):
            if node_ids is None:
                await builder.delete(all=True)
            for chunk in batches(dict.fromkeys(node_ids or ()), MAX_IN_VALUES):
                await builder.where_in("id", chunk).delete(all=True)

    def clear(self) -> None:
        """Delete every node (inside the guard)."""
        self.delete_nodes()

    async def aclear(self) -> None:
        """Async form of `clear`."""
        await self.adelete_nodes()

    # -- reads ------------------------------------------------------------------------------------
    def get_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """The nodes in ``node_ids`` (in that order; all when ``None``) that match ``filters``."""
        return run_sync(self.aget_nodes(node_ids, filters))

    async def aget_nodes(
        self, node_ids: list[str] | None = None, filters: MetadataFilters | None = None
    ) -> list[BaseNode]:
        """Async form of `get_nodes`."""
        with suppress(CollectionNotFoundError):
            return [self._node(m) for m in await self._scoped(filters).select(*_FIELDS).get(node_ids)]
        return []

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """The ``similarity_top_k`` nodes nearest the query that match its filters, best first."""
        return run_sync(self.aquery(query, **kwargs))

    async def aquery(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        """Async form of `query`."""
        builder, settings, words = self._search(query, kwargs)
        try:
            found = await retrieve(builder, settings, text=words, missing_ok=True)
        except FilterKeyNotFoundError as exc:
            # SimpleVectorStore answers a filter on a key no node holds with no nodes (the hint: logged).
            log.info("%s", exc)
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        return VectorStoreQueryResult(
            nodes=[self._node(m) for m in found.matches],
            similarities=[float(m.score) if m.score is not None else 0.0 for m in found.matches],
            ids=[m.id for m in found.matches],
        )


def _equalities(guard: FilterNode | None) -> dict[str, Any]:
    """The top-level ``metadata.<key> == value`` conditions of a guard, as metadata to stamp on writes."""
    if guard is None:
        return {}
    parts = guard.children if isinstance(guard, And) else (guard,)
    return {
        c.field.removeprefix("metadata."): c.value
        for c in parts
        if isinstance(c, Condition)
        and c.op == "eq"
        and c.field.startswith("metadata.")
        and "." not in c.field[9:]
    }
