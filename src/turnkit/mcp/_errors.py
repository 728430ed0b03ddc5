"""The ``E_MCP_*`` errors of the MCP server.

```
TurnkitError
├── UsageError
│   └── InvalidMCPServerConfigError   E_INVALID_MCP_SERVER_CONFIG
└── RuntimeFailure
    └── MCPUnavailableError           E_MCP_UNAVAILABLE
```
"""

from __future__ import annotations

from .._errors import RuntimeFailure, UsageError

__all__ = ["InvalidMCPServerConfigError", "MCPUnavailableError"]


class InvalidMCPServerConfigError(UsageError):
    """The MCP server was configured with values it cannot use."""

    code = "E_INVALID_MCP_SERVER_CONFIG"
    option: str


class MCPUnavailableError(RuntimeFailure, ImportError):
    """The ``mcp`` package (the ``turnkit[mcp]`` extra) is not installed.

    Also an `ImportError`, so ``except ImportError`` around ``import turnkit.mcp`` catches it.
    """

    code = "E_MCP_UNAVAILABLE"
    default_hint = "pip install 'turnkit[mcp]'"
