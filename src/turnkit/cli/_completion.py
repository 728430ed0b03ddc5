"""``turnkit completion SHELL``: a completion script generated from the parser itself (shtab)."""

from __future__ import annotations

import argparse

from ._errors import (
    EXIT_OK,
    CliUsageError,
)

__all__ = ["run_completion"]


def run_completion(args: argparse.Namespace) -> int:
    """Print the completion script for ``args.shell``.

    Raises:
        CliUsageError: ``E_CLI_DEPENDENCY_MISSING``: the ``cli`` extra (shtab) is not installed.
    """
    try:
        import shtab
    except ImportError as exc:
        raise CliUsageError(
            "`turnkit completion` needs shtab, which is not installed.",
            code="E_CLI_DEPENDENCY_MISSING",
            hint="pip install 'turnkit[cli]'",
            package="shtab",
        ) from exc
    from ._parser import build_parser

    print(shtab.complete(build_parser(), shell=args.shell), end="")
    return EXIT_OK
