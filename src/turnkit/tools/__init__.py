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

from ._config import ToolLimits, VectorQueryRequestContext
from ._errors import ToolRuntimeError, ToolUsageError
from ._filters import describe_metadata_fields
from ._results import ToolErrorInfo, VectorQueryResult, VectorQuerySource
from ._retrieve import retrieve_contexts, retrieve_contexts_sync
from ._vertex_models import RetrieveContextsRequest, RetrieveContextsResponse
from .vector_query._create import create_vector_query_tool
from .vector_query._options import VectorQueryOptions
from .vector_query._tool import VectorQueryTool

__all__ = [
    "RetrieveContextsRequest",
    "RetrieveContextsResponse",
    "ToolErrorInfo",
    "ToolLimits",
    "ToolRuntimeError",
    "ToolUsageError",
    "VectorQueryOptions",
    "VectorQueryRequestContext",
    "VectorQueryResult",
    "VectorQuerySource",
    "VectorQueryTool",
    "create_vector_query_tool",
    "describe_metadata_fields",
    "retrieve_contexts",
    "retrieve_contexts_sync",
]
