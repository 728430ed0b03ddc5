"""Agent-facing tools over a turnkit vector store.

Both take one `RetrievalSettings` (``settings=``) for every retrieval knob;
with none they run turnkit's measured default (hybrid search, duplicate
texts collapsed, 5 results). A request's own options merge into it.

- `create_vector_query_tool`: a Mastra-shaped semantic-search tool with a JSON
  Schema, an OpenAI function-tool export, guard filters and structured errors.
- `retrieve_contexts`: Vertex AI RAG Engine's ``RetrieveContexts`` call, with
  its request and response models.

```python
from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.tools import create_vector_query_tool

vs = create_vector_store(uri="memory://", encoder=HashEncoder())
vs("kb").upsert_sync([{"id": "r1", "document": "Refunds take 5 business days."}])
tool = create_vector_query_tool(store=vs, collection="kb")
result = tool.execute_sync({"query_text": "how long do refunds take", "top_k": 1})
print(result.status, result.relevant_context)
#> ok ['Refunds take 5 business days.']
```
"""

from ._config import (
    ModelResolver,
    RerankWeights,
    StoreResolver,
    ToolLimits,
    VectorQueryRequestContext,
)
from ._errors import (
    CollectionNotAllowedError,
    InvalidToolConfigError,
    InvalidToolInputError,
    StoreResolverError,
    ToolFailedError,
    ToolOptionMissingError,
    ToolRuntimeError,
    ToolUsageError,
    UnknownModelError,
)
from ._filters import FILTER_OPERATORS, describe_metadata_fields
from ._results import CollapsedCopy, ErrorKind, PageSpan, ToolErrorInfo, VectorQueryResult, VectorQuerySource
from ._retrieve import (
    RETRIEVE_CONTEXTS_DESCRIPTION,
    retrieve_contexts,
    retrieve_contexts_input_schema,
    retrieve_contexts_sync,
)
from ._vector_query import DEFAULT_DESCRIPTION, VectorQueryTool
from ._vertex_models import (
    HybridSearch,
    LlmRanker,
    RagChunk,
    RagContext,
    RagContexts,
    RagFilter,
    RagQuery,
    RagResource,
    RagRetrievalConfig,
    Ranking,
    RankService,
    RetrieveContextsRequest,
    RetrieveContextsResponse,
    VertexRagStore,
)
from ._vq_create import create_vector_query_tool
from ._vq_input import VectorQueryInput, filter_description
from ._vq_options import VectorQueryOptions

__all__ = [
    "CollapsedCopy",
    "CollectionNotAllowedError",
    "DEFAULT_DESCRIPTION",
    "ErrorKind",
    "FILTER_OPERATORS",
    "HybridSearch",
    "InvalidToolConfigError",
    "InvalidToolInputError",
    "LlmRanker",
    "ModelResolver",
    "PageSpan",
    "RETRIEVE_CONTEXTS_DESCRIPTION",
    "RagChunk",
    "RagContext",
    "RagContexts",
    "RagFilter",
    "RagQuery",
    "RagResource",
    "RagRetrievalConfig",
    "RankService",
    "Ranking",
    "RerankWeights",
    "RetrieveContextsRequest",
    "RetrieveContextsResponse",
    "StoreResolver",
    "StoreResolverError",
    "ToolErrorInfo",
    "ToolFailedError",
    "ToolLimits",
    "ToolOptionMissingError",
    "ToolRuntimeError",
    "ToolUsageError",
    "UnknownModelError",
    "VectorQueryInput",
    "VectorQueryOptions",
    "VectorQueryRequestContext",
    "VectorQueryResult",
    "VectorQuerySource",
    "VectorQueryTool",
    "VertexRagStore",
    "create_vector_query_tool",
    "describe_metadata_fields",
    "filter_description",
    "retrieve_contexts",
    "retrieve_contexts_input_schema",
    "retrieve_contexts_sync",
]
