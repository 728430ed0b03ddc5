"""LlamaIndex adapter: a vector store and a retriever over turnkit.

Needs ``turnkit[llamaindex]`` (``llama-index-core``). See docs/integrations/llamaindex.md.

- `TurnkitVectorStore`: a ``BasePydanticVectorStore`` over one turnkit
  collection, for ``VectorStoreIndex`` and LlamaIndex's memory blocks.
- `TurnkitRetriever`: ``NodeWithScore`` from a turnkit vector query tool.
"""

from ._retriever import TurnkitRetriever
from ._store import TurnkitVectorStore

__all__ = ["TurnkitRetriever", "TurnkitVectorStore"]
