"""``main``: parse, dispatch, and turn every failure into one line and a documented exit status."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Callable, Sequence

from ._config import ENV_DEBUG, env_flag
from ._errors import EXIT_FAILURE, EXIT_INTERRUPTED, EXIT_USAGE, exit_status, missing_extra
from ._output import emit_json, error_payload, print_error
from ._parser import build_parser

__all__ = ["main"]

# Each command's module, imported when it runs, so `turnkit --help` loads none of them.
_MODULES = {
    "_store_cmds": ("ingest", "query", "stats", "optimize"),
    "_rows_cmd": ("count", "delete", "export", "peek"),
    "_collections_cmd": ("collections",),
    "_serve": ("serve",),
    "_demo": ("demo",),
    "_parser": ("completion",),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``turnkit`` command line.

    Args:
        argv: The arguments after the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 success, 1 failure while running, 2 usage or
        configuration error, 3 ingest finished with unreadable files, 4 a
        missing optional extra, 130 interrupted. Errors are printed as one line
        (``turnkit: error: [CODE] message Hint: …``) unless ``--debug`` or
        ``TURNKIT_DEBUG=1`` asks for the traceback too.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    # Known before parsing, so that a parse error honours them too.
    debug = "--debug" in args_list or env_flag(ENV_DEBUG)
    as_json = "--json" in args_list
    parser = build_parser()
    try:
        args = parser.parse_args(args_list)
        if args.command is None:
            parser.print_help(sys.stderr)
            return EXIT_USAGE
        # The command's run_COMMAND function.
        module = next(m for m, commands in _MODULES.items() if args.command in commands)
        handler: Callable[[argparse.Namespace], int] = getattr(
            importlib.import_module(f".{module}", __package__), f"run_{args.command}"
        )
        return handler(args)
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else 0
    except BrokenPipeError:
        # The reader went away (`turnkit query … | head`); stop quietly, as Unix tools do.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("turnkit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if debug:
            traceback.print_exc()
        # A missing extra is what to fix, even when it surfaced as an encoder failure: say it once.
        shown = missing_extra(exc) or exc
        print_error(shown)
        if as_json:
            emit_json({"error": error_payload(shown)})
        return exit_status(exc)
