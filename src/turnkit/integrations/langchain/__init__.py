"""LangChain adapter: a ``VectorStore``, a ``BaseRetriever`` and a ``StructuredTool``, sync and async.

Needs ``turnkit[langchain]`` (``langchain-core``). See docs/integrations/langchain.md.

- `TurnkitVectorStore`: a LangChain vector store over one turnkit collection
  (LangChain embeddings, or the turnkit store's encoder).
- `TurnkitRetriever`: documents from a turnkit vector query tool.
- `vector_query_structured_tool`: the vector query tool for LangChain agents,
  with a per-run guard from ``config["configurable"]``.
"""

from ._retriever import TurnkitRetriever
from ._store import TurnkitVectorStore
from ._tool import vector_query_structured_tool

__all__ = ["TurnkitRetriever", "TurnkitVectorStore", "vector_query_structured_tool"]
