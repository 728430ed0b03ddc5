"""turnkit's tools over MCP, with the official ``mcp`` SDK (the ``turnkit[mcp]`` extra).

- `create_mcp_server`: an ``MCPServer`` with ``vector_query`` and
  ``retrieve_contexts`` (plus destructive write tools when enabled).
- `serve`: run it over stdio or streamable HTTP; ``turnkit serve`` calls it,
  and so does ``python -m turnkit.mcp``.

```python
import asyncio

import mcp

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.mcp import create_mcp_server

vs = create_vector_store(uri="memory://", encoder=HashEncoder())
vs("kb").upsert_sync([{"id": "r1", "document": "Refunds take 5 business days."}])
server = create_mcp_server(vs, collections="kb")


async def main() -> None:
    async with mcp.Client(server) as client:
        result = await client.call_tool("vector_query", {"query_text": "refunds"})
        print(result.structured_content["relevant_context"])


asyncio.run(main())
#> ['Refunds take 5 business days.']
```
"""

from ._errors import MCPUnavailableError, MCPUsageError

try:
    import mcp as _mcp  # noqa: F401 - fail early with an install hint
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MCPUnavailableError("turnkit.mcp needs the `mcp` package.") from exc

from ._auth import load_principals
from ._http import HttpLimits
from ._serve import serve
from ._server import DEFAULT_READ_CONSISTENCY_INTERVAL, create_mcp_server

__all__ = [
    "DEFAULT_READ_CONSISTENCY_INTERVAL",
    "HttpLimits",
    "MCPUnavailableError",
    "MCPUsageError",
    "create_mcp_server",
    "load_principals",
    "serve",
]
