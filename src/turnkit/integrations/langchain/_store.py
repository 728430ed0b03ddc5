"""A LangChain ``VectorStore`` over one turnkit collection."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from typing import Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore as LangChainVectorStore

from ... import UsageError
from ..._aio import run_sync
from ..._checks import STORE_HINT, expect
from ...batteries.vector import (
    MAX_IN_VALUES,
    CollectionNotFoundError,
    FilterKeyNotFoundError,
    QueryBuilder,
    VectorMatch,
    create_vector_store,
    parse_mongo,
)
from ...batteries.vector import VectorStore as TurnkitStore
from .._common import GuardFilter, batches, guard_keys, visible_metadata

__all__ = ["TurnkitVectorStore"]

_FIELDS = ("id", "document", "metadata")


class TurnkitVectorStore(LangChainVectorStore):
    """A LangChain ``VectorStore`` over one collection of a turnkit store.

    Scores are turnkit's similarity in [0, 1], higher is closer, for every metric (so the
    relevance scores are the same numbers); ``filter=`` is a Mongo-style dict over metadata keys.

    Args:
        store: The turnkit store (`turnkit.batteries.vector.create_vector_store`).
        collection: The collection; created by the first write.
        embedding: A LangChain ``Embeddings``; ``None`` uses the turnkit store's own encoder.
        guard: A filter (Mongo dict or filter node) ANDed with every search, ``get_by_ids`` and
            ``delete``, its keys removed from returned metadata; writes are not checked against it.
    """

    def __init__(
        self,
        store: TurnkitStore,
        collection: str,
        *,
        embedding: Embeddings | None = None,
        guard: GuardFilter | None = None,
    ) -> None:
        expect(store, TurnkitStore, "store", UsageError, STORE_HINT)
        self.store = store
        self.collection = collection
        self._embedding = embedding
        self._guard = parse_mongo(guard, field_prefix="metadata.") if isinstance(guard, Mapping) else guard
        self._hidden = guard_keys(guard)

    @property
    def embeddings(self) -> Embeddings | None:
        """The LangChain embeddings, or ``None`` when the turnkit store's encoder is used."""
        return self._embedding

    # -- building blocks shared by the sync and async forms -----------------------------------
    def _scoped(self) -> QueryBuilder:
        builder = self.store(self.collection)
        return builder.where(self._guard) if self._guard is not None else builder

    def _document(self, match: VectorMatch) -> Document:
        return Document(
            id=match.id,
            page_content=match.document or "",
            metadata=visible_metadata(match.metadata, self._hidden),
        )

    async def _upsert(
        self,
        texts: list[str],
        metadatas: list[dict[Any, Any]] | None,
        ids: Sequence[str | None] | None,
        vectors: list[list[float]] | None,
    ) -> list[str]:
        for name, given in (("metadatas", metadatas), ("ids", ids)):
            if given is not None and len(given) != len(texts):
                raise UsageError(f"Got {len(given)} {name} for {len(texts)} texts.")
        made = [i or str(uuid.uuid4()) for i in (ids or [None] * len(texts))]
        records = [
            {"id": rid, "document": text, "metadata": dict(metadatas[n] if metadatas else {})}
            | ({"vector": vectors[n]} if vectors is not None else {})
            for n, (rid, text) in enumerate(zip(made, texts, strict=True))
        ]
        if records:
            await self.store(self.collection).upsert(records)
        return made

    async def _scored_search(
        self, near: str | list[float], k: int, filter: dict[str, Any] | None
    ) -> list[tuple[Document, float]]:
        builder = self._scoped()
        if filter:
            builder = builder.where(parse_mongo(filter, field_prefix="metadata."))
        builder = builder.near_text(near) if isinstance(near, str) else builder.near_vector(near)
        try:
            matches = await builder.select(*_FIELDS).limit(k).search()
        except CollectionNotFoundError:
            return []
        except FilterKeyNotFoundError:
            if self._guard is None:
                raise
            return []  # its hint would name keys of records outside the guard
        return [(self._document(m), float(m.score if m.score is not None else 0.0)) for m in matches]

    # -- writes: the embeddings run in the caller's thread, the store's work as its async form ---------
    def add_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Upsert texts (same id: replaced); ids are generated where missing. Returns the ids."""
        texts = list(texts)
        vectors = self._embedding.embed_documents(texts) if self._embedding and texts else None
        return run_sync(self._upsert(texts, metadatas, ids, vectors))

    async def aadd_texts(
        self,
        texts: Iterable[str],
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Async form of `add_texts`."""
        texts = list(texts)
        vectors = await self._embedding.aembed_documents(texts) if self._embedding and texts else None
        return await self._upsert(texts, metadatas, ids, vectors)

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Delete these ids (inside the guard); missing ids are not an error."""
        return run_sync(self.adelete(ids))

    async def adelete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Async form of `delete`."""
        if ids is None:
            raise UsageError("delete() needs the ids to delete.", hint="Pass ids=[...].")
        with suppress(CollectionNotFoundError):  # nothing was ever written: nothing to delete
            for chunk in batches(dict.fromkeys(ids), MAX_IN_VALUES):
                await self._scoped().where_in("id", chunk).delete()
        return True

    # -- reads ------------------------------------------------------------------------------------
    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The documents with these ids (inside the guard), in the order asked; missing ids left out."""
        return run_sync(self.aget_by_ids(ids))

    async def aget_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """Async form of `get_by_ids`."""
        with suppress(CollectionNotFoundError):
            return [self._document(m) for m in await self._scoped().select(*_FIELDS).get(list(ids))]
        return []

    def similarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """The ``k`` nearest documents with their similarity in [0, 1]."""
        near: str | list[float] = self._embedding.embed_query(query) if self._embedding else query
        return self.similarity_search_with_score_by_vector(near, k, filter)

    async def asimilarity_search_with_score(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[tuple[Document, float]]:
        """Async form of `similarity_search_with_score`."""
        near: str | list[float] = await self._embedding.aembed_query(query) if self._embedding else query
        return await self._scored_search(near, k, filter)

    def similarity_search_with_score_by_vector(
        self, embedding: str | list[float], k: int = 4, filter: dict[str, Any] | None = None
    ) -> list[tuple[Document, float]]:
        """The ``k`` documents nearest a vector (or a text the store encodes), with their similarity."""
        return run_sync(self._scored_search(embedding, k, filter))

    def similarity_search(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest ``query``."""
        return [d for d, _ in self.similarity_search_with_score(query, k, filter)]

    async def asimilarity_search(
        self, query: str, k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        """Async form of `similarity_search`."""
        return [d for d, _ in await self.asimilarity_search_with_score(query, k, filter)]

    def similarity_search_by_vector(
        self, embedding: list[float], k: int = 4, filter: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Document]:
        """The ``k`` documents nearest a vector."""
        return [d for d, _ in self.similarity_search_with_score_by_vector(list(embedding), k, filter)]

    def _select_relevance_score_fn(self) -> Callable[[float], float]:
        # turnkit's scores are already similarities in [0, 1] for every metric.
        return lambda score: score

    @classmethod
    def from_texts(
        cls,
        texts: list[str],
        embedding: Embeddings,
        metadatas: list[dict[Any, Any]] | None = None,
        *,
        ids: list[str] | None = None,
        store: TurnkitStore | None = None,
        collection: str = "langchain",
        **kwargs: Any,
    ) -> TurnkitVectorStore:
        """A store holding ``texts``; without ``store``, an in-memory turnkit store."""
        made = cls(store or create_vector_store(uri="memory://"), collection, embedding=embedding, **kwargs)
        made.add_texts(texts, metadatas, ids=ids)
        return made
