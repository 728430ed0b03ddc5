"""LangChain's own standard suites (langchain-tests), run unmodified against the turnkit adapters."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("langchain_core")
pytest.importorskip("langchain_tests")

from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from langchain_tests.integration_tests import RetrieversIntegrationTests, VectorStoreIntegrationTests

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.integrations.langchain import TurnkitRetriever, TurnkitVectorStore
from turnkit.tools import create_vector_query_tool


@pytest.mark.anyio
class TestTurnkitVectorStore(VectorStoreIntegrationTests):
    """Every sync and async test of the suite, with LangChain's deterministic fake embeddings."""

    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:  # type: ignore[override]
        store = create_vector_store(uri="memory://")
        yield TurnkitVectorStore(store, "standard", embedding=self.get_embeddings())
        store.drop_collection_sync("standard", missing_ok=True)


@pytest.mark.anyio
class TestTurnkitVectorStoreWithTurnkitEncoder(VectorStoreIntegrationTests):
    """The same suite with the turnkit store's own encoder instead of LangChain embeddings."""

    @pytest.fixture
    def vectorstore(self) -> Iterator[VectorStore]:  # type: ignore[override]
        store = create_vector_store(uri="memory://", encoder=HashEncoder(64))
        yield TurnkitVectorStore(store, "standard")
        store.drop_collection_sync("standard", missing_ok=True)


@pytest.mark.anyio
class TestTurnkitRetriever(RetrieversIntegrationTests):
    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return TurnkitRetriever

    @property
    def retriever_constructor_params(self) -> dict[str, Any]:
        store = create_vector_store(uri="memory://", encoder=HashEncoder(64))
        store("kb").upsert_sync([{"id": f"d{i}", "document": f"refund policy, part {i}"} for i in range(6)])
        return {"tool": create_vector_query_tool(store=store, collection="kb")}

    @property
    def retriever_query_example(self) -> str:
        return "refund policy"
