"""``turnkit serve``: the MCP server of `turnkit.mcp`, configured from the command line."""

from __future__ import annotations

import argparse

from .._errors import TurnkitError
from ._config import ENV_COLLECTION, ENV_ENCODER, flag_or_env, store_uri
from ._connect import connection_of
from ._errors import EXIT_OK, CliUsageError

__all__ = ["run_serve"]


def run_serve(args: argparse.Namespace) -> int:
    """Serve the collection (default: every collection) over MCP until interrupted.

    Raises:
        CliUsageError: ``E_CLI_DEPENDENCY_MISSING``: the ``mcp`` extra is not installed.
    """
    conn = connection_of(args)
    conn.check()
    try:
        # Imported here: the MCP SDK is an optional extra and slow to import.
        from ..mcp import serve
    except ImportError as exc:
        # turnkit.mcp raises its own ImportError subclass when the SDK is missing.
        missing = exc.name or ""
        if not (isinstance(exc, TurnkitError) or missing == "mcp" or missing.startswith("mcp.")):
            raise
        raise CliUsageError(
            "`turnkit serve` needs the MCP SDK (the `mcp` package), which is not installed.",
            code="E_CLI_DEPENDENCY_MISSING",
            hint="pip install 'turnkit[mcp]'",
            package="mcp",
        ) from exc
    from ._parser import serve_options

    serve(
        uri=store_uri(conn.uri),
        connect=conn.connect_options(),
        collection=flag_or_env(args.collection, ENV_COLLECTION),
        encoder=flag_or_env(args.encoder, ENV_ENCODER),
        **serve_options(args),
    )
    return EXIT_OK
