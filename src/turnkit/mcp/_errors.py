"""The ``E_MCP_*`` errors of the MCP server.

```
TurnkitError
├── UsageError
│   ├── InvalidMCPServerConfigError   E_INVALID_MCP_SERVER_CONFIG
│   │   └── MCPInsecureBindError      E_MCP_INSECURE_BIND
│   └── MCPUnknownPrincipalError      E_MCP_UNKNOWN_PRINCIPAL
└── RuntimeFailure
    └── MCPUnavailableError           E_MCP_UNAVAILABLE
```
"""

from __future__ import annotations

from .._errors import RuntimeFailure, UsageError

__all__ = [
    "InvalidMCPServerConfigError",
    "MCPInsecureBindError",
    "MCPUnavailableError",
    "MCPUnknownPrincipalError",
]


class InvalidMCPServerConfigError(UsageError):
    """The MCP server was configured with values it cannot use."""

    code = "E_INVALID_MCP_SERVER_CONFIG"
    option: str


class MCPInsecureBindError(InvalidMCPServerConfigError):
    """An HTTP server would listen beyond loopback with no authentication."""

    code = "E_MCP_INSECURE_BIND"
    default_hint = (
        "Give a token (--token, the TURNKIT_MCP_TOKEN variable, or --tokens-file), bind 127.0.0.1, "
        "or pass --insecure-no-auth when something in front of the server authenticates clients."
    )


class MCPUnknownPrincipalError(UsageError):
    """A tool call on a server with per-principal guards came from no known principal."""

    code = "E_MCP_UNKNOWN_PRINCIPAL"
    default_hint = "Connect with a token the server's tokens file lists."


class MCPUnavailableError(RuntimeFailure, ImportError):
    """The ``mcp`` package (the ``turnkit[mcp]`` extra) is not installed.

    Also an `ImportError`, so ``except ImportError`` around ``import turnkit.mcp`` catches it.
    """

    code = "E_MCP_UNAVAILABLE"
    default_hint = "pip install 'turnkit[mcp]'"
