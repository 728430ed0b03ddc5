"""The ``E_MCP_*`` errors of the MCP server.

```
TurnkitError
├── UsageError
│   └── MCPUsageError          E_INVALID_MCP_SERVER_CONFIG, E_MCP_INSECURE_BIND, E_MCP_UNKNOWN_PRINCIPAL
└── RuntimeFailure
    └── MCPUnavailableError    E_MCP_UNAVAILABLE (also an ImportError)
```
"""

from __future__ import annotations

from functools import partial

from .._errors import RuntimeFailure, UsageError

__all__ = ["MCPUnavailableError", "MCPUsageError", "config_error"]


class MCPUsageError(UsageError):
    """The MCP server was configured with values it cannot use, or a call came from no known principal."""

    hints = {
        "E_INVALID_MCP_SERVER_CONFIG": "Change the call; the message says what was wrong.",
        "E_MCP_INSECURE_BIND": (
            "Give a token (--token, the TURNKIT_MCP_TOKEN variable, or --tokens-file), bind 127.0.0.1, "
            "or pass --insecure-no-auth when something in front of the server authenticates clients."
        ),
        "E_MCP_UNKNOWN_PRINCIPAL": "Connect with a token the server's tokens file lists.",
    }


class MCPUnavailableError(RuntimeFailure, ImportError):
    """The ``mcp`` package (the ``turnkit[mcp]`` extra) is not installed.

    Also an `ImportError`, so ``except ImportError`` around ``import turnkit.mcp`` catches it.
    """

    hints = {"E_MCP_UNAVAILABLE": "pip install 'turnkit[mcp]'"}


config_error = partial(MCPUsageError, code="E_INVALID_MCP_SERVER_CONFIG")
