"""``python -m turnkit.mcp --uri DIR [--collection NAME]… [--transport stdio|http]``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .._errors import TurnkitError

# The flag set is the CLI's, so `turnkit serve` and this entry point cannot drift apart.
from ..cli._connect import connection_of
from ..cli._parser import add_connection_arguments, add_serve_arguments, serve_options
from ._serve import serve


def main(argv: Sequence[str] | None = None) -> int:
    """Parse arguments and serve; returns the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m turnkit.mcp", description="Serve turnkit collections over MCP."
    )
    parser.add_argument("--uri", required=True, help="the store (a directory, s3://..., db://...)")
    parser.add_argument(
        "--collection", action="append", help="a collection to serve (repeatable; default all)"
    )
    parser.add_argument("--encoder", default=None, help="hash[:dim] or wordllama[:dim]; default: as recorded")
    add_connection_arguments(parser)
    add_serve_arguments(parser)
    args = parser.parse_args(argv)
    try:
        conn = connection_of(args)
        conn.check()
        serve(
            args.uri,
            connect=conn.connect_options(),
            collections=args.collection,
            encoder=args.encoder,
            **serve_options(args),
        )
    except TurnkitError as exc:
        print(f"turnkit: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
