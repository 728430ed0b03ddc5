"""The argument parser: every subcommand, its flags, and the help text that documents them.

``turnkit completion`` runs here too: its script is generated from the parser itself (shtab).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, NoReturn

from ._arg_types import alpha, file_size, positive_int, read_consistency, text_out_of_optional_values
from ._config import (
    AUTO_ALPHA,
    DEFAULT_COLLECTION,
    DEFAULT_URI,
    DEMO_URI,
    ENV_COLLECTION,
    ENV_ENCODER,
    ENV_URI,
)
from ._connect import ENV_API_KEY, ENV_REGION
from ._errors import EXIT_OK, CliUsageError
from ._query_flags import add_query_flags

__all__ = ["add_serve_arguments", "build_parser", "retrieval_settings", "run_completion", "serve_options"]

# Every environment variable the command line reads; each subcommand's help lists only its own.
_ENV_HELP = {
    ENV_URI: f"database location (default: {DEFAULT_URI}, relative to the working directory)",
    ENV_COLLECTION: f"collection name (default: {DEFAULT_COLLECTION})",
    ENV_ENCODER: "encoder name, e.g. wordllama, hash:64 (default: the collection's own)",
    ENV_API_KEY: "LanceDB Cloud API key, for db:// URIs (same as --api-key)",
    ENV_REGION: "LanceDB Cloud region, for db:// URIs (same as --region)",
    "TURNKIT_OPENAI_MODEL": "model name; setting it turns the endpoint on (or TURNKIT_MODEL)",
    "TURNKIT_OPENAI_BASE_URL": "API root, e.g. http://127.0.0.1:8000/v1 (or OPENAI_BASE_URL)",
    "TURNKIT_OPENAI_API_KEY": "bearer token, if the endpoint needs one (or OPENAI_API_KEY)",
    "TURNKIT_MCP_TOKEN": "bearer token HTTP clients must send (same as --token)",
    "RAY_ADDRESS": "with --engine ray: the Ray cluster to join (same as --ray-address)",
    "TURNKIT_DEBUG": "1 to print tracebacks (same as --debug)",
}
_STORAGE_NOTE = (
    "  Object stores (s3://, gs://, az://) also read their own AWS_*, GOOGLE_* and AZURE_*\n"
    "  variables (credentials, region, endpoint); see docs/cli.md.\n"
)
_EXIT = """
exit status:
  0 success, 1 failure while running, 2 usage or configuration error,
  3 ingest finished but some files could not be read, 4 an optional extra is missing,
  130 interrupted.

Flags win over environment variables. Docs: docs/cli.md.
"""
_STORE_ENV = (ENV_URI, ENV_API_KEY, ENV_REGION)


def _epilog(*names: str, storage: bool = True) -> str:
    width = max(len(n) for n in names)
    lines = [f"  {name.ljust(width)}  {_ENV_HELP[name]}" for name in names]
    return "environment:\n" + "\n".join(lines) + "\n" + (_STORAGE_NOTE if storage else "") + _EXIT


# Each subcommand's summary (in `turnkit --help`) and description (in its own --help).
_HELP = {
    "ingest": (
        "load files into a collection (only what changed is written)",
        "Load text, Markdown, HTML and PDF files (folders are walked), cut them into token-sized\n"
        "chunks and upsert them. Re-running writes only what changed; a killed run is finished by\n"
        "the next one.",
    ),
    "query": (
        "search a collection by meaning",
        "Search a collection with a text query, optionally filtered, e.g.\n"
        '  turnkit query "how do I resume a killed ingest?" --filter \'kind = "markdown"\'\n'
        "By default it is the retrieval every turnkit surface shares (docs/settings.md): hybrid\n"
        "search, copies of one text collapsed into one result; each flag changes one setting.",
    ),
    "stats": (
        "collections, rows, dimension, encoder, versions, unindexed rows",
        "Describe the collections of a database (all of them, or those named with --collection).",
    ),
    "optimize": (
        "compact a collection and build or update its vector index",
        "Compact small fragments, fold new rows into the indexes, and build a vector index once a\n"
        "collection is large enough that a flat search gets slow.",
    ),
    "serve": (
        "serve collections to agents over MCP (needs the `mcp` extra)",
        "Run an MCP server whose tools search (and, with --enable-writes, write) the collections:\n"
        "the one named with --collection, or every collection of the database.",
    ),
    "demo": (
        "ingest turnkit's own docs and answer questions from them",
        "Ingest the documentation shipped with turnkit into an embedded LanceDB (WordLlama, offline),\n"
        "then run questions through a TurnRunner built from create_vector_retrievable_callbacks.\n"
        "With a model endpoint configured (any OpenAI-compatible /chat/completions API, see the\n"
        "variables below) it prints the model's answers with their sources; without one, an\n"
        "extractive answer: the retrieved sentences that best match the question, each with its source.",
    ),
    "collections": (
        "list, locate, inspect or drop collections",
        "  turnkit collections list         every collection, with its row count\n"
        "  turnkit collections path NAME    where a collection's data lives\n"
        "  turnkit collections files NAME   the files ingested into it, with their chunk counts\n"
        "  turnkit collections drop NAME    delete a collection and all its rows (asks for --yes)",
    ),
    "completion": (
        "print a shell completion script (bash, zsh or tcsh)",
        "Print a completion script for your shell, e.g.\n"
        "  turnkit completion bash > ~/.local/share/bash-completion/completions/turnkit\n"
        "  turnkit completion zsh > ~/.zfunc/_turnkit   # with fpath+=~/.zfunc in ~/.zshrc\n"
        "Needs the `cli` extra (pip install 'turnkit[cli]').",
    ),
    "count": (
        "count a collection's rows (all, or those --filter matches)",
        "Print how many rows a collection holds, or how many a filter matches.",
    ),
    "delete": (
        "delete the rows --filter matches (asks first unless --yes)",
        "Delete a collection's rows that a filter matches (or --all of them). On a terminal it asks\n"
        "first; elsewhere (scripts, CI) it refuses unless --yes is given.",
    ),
    "export": (
        "write every row as JSON Lines (stdout) or Parquet",
        "Write every row of a collection (or those a filter matches) in id order: JSON Lines on\n"
        "stdout by default, one object per row (id, document, metadata, created_at, updated_at,\n"
        "vector). It reads page by page, so memory stays small whatever the collection's size.",
    ),
    "peek": (
        "show a collection's first few rows",
        "Show the first rows of a collection (in id order) with their source and an excerpt.",
    ),
}


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose mistakes become `CliUsageError` (one line, exit status 2)."""

    def error(self, message: str) -> NoReturn:
        where = "" if self.prog == "turnkit" else f"{self.prog}: "
        hint = f"Run `{self.prog} --help` for the options."
        flag = message.removeprefix("argument ").partition(":")[0]
        action = self._option_string_actions.get(flag) if message.startswith("argument ") else None
        positional = next((a for a in self._actions if not a.option_strings), None)
        if action is not None and action.nargs == "?" and positional is not None:
            text = positional.metavar or positional.dest
            hint = f"A number after {flag} is its value; a {text} that is a number goes before it "
            hint += "or after --."
        raise CliUsageError(f"{where}{message}.", hint=hint)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        # Subcommands parse through here too, so `query --hybrid "question"` keeps its question.
        if args is not None:
            args = text_out_of_optional_values(args, self._actions, allow_abbrev=self.allow_abbrev)
        return super().parse_known_args(args, namespace)


def _common(
    *, uri: bool = True, collection: bool = True, json: bool = True, encoder: bool = False
) -> argparse.ArgumentParser:
    # SUPPRESS keeps a flag given before the subcommand from being reset by the subparser.
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("common options")
    if uri:
        group.add_argument(
            "--uri", metavar="URI", help=f"database location [${ENV_URI}, default {DEFAULT_URI}]"
        )
        add_connection_arguments(group)
    if collection:
        group.add_argument(
            "-c",
            "--collection",
            metavar="NAME",
            help=f"collection name [${ENV_COLLECTION}, default {DEFAULT_COLLECTION}]",
        )
    if encoder:
        group.add_argument(
            "--encoder",
            metavar="NAME",
            help=f"wordllama[:64|128|256], hash[:DIM], minilm, sentence-transformers:MODEL or "
            f"openai:MODEL@DIM [${ENV_ENCODER}, default: the one the "
            "collection was built with, else wordllama]",
        )
    if json:
        group.add_argument("--json", action="store_true", help="print JSON on stdout (for scripts)")
    group.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="print tracebacks on errors"
    )
    return parent


def add_connection_arguments(group: Any) -> None:
    """``--storage-option``, ``--api-key`` and ``--region``: how to reach an object store or LanceDB Cloud."""
    group.add_argument(
        "--storage-option",
        action="append",
        metavar="KEY=VALUE",
        help="object-store option passed to LanceDB, repeatable (e.g. endpoint=http://127.0.0.1:9000, "
        "allow_http=true, region=us-east-1, aws_access_key_id=…)",
    )
    group.add_argument(
        "--api-key", metavar="KEY", help=f"LanceDB Cloud API key for db:// URIs [${ENV_API_KEY}]"
    )
    group.add_argument(
        "--region", metavar="REGION", help=f"LanceDB Cloud region for db:// URIs [${ENV_REGION}]"
    )


def _add(subs: Any, name: str, env: tuple[str, ...], *parents: argparse.ArgumentParser) -> Any:
    """The subcommand ``name``, its help from `_HELP`; object stores are noted where it opens a database."""
    summary, description = _HELP[name]
    return subs.add_parser(
        name,
        help=summary,
        description=description,
        parents=list(parents),
        epilog=_epilog(*env, "TURNKIT_DEBUG", storage=ENV_URI in env),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def retrieval_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The `RetrievalSettings` fields the retrieval flags of `add_serve_arguments` set (only those given)."""
    settings: dict[str, Any] = {}
    if args.hybrid is not None:
        settings["hybrid"] = True if args.hybrid == AUTO_ALPHA else args.hybrid
    if args.top_k is not None:
        settings["top_k"] = args.top_k
    if args.rerank:
        settings["rerank"] = True
    return settings


def add_serve_arguments(p: argparse.ArgumentParser) -> None:
    """The flags `serve_options` reads: ``turnkit serve`` and ``python -m turnkit.mcp`` share them.

    Each retrieval flag sets one `RetrievalSettings` field (see `retrieval_settings`); a flag
    not given keeps turnkit's default (hybrid search, duplicate texts collapsed, 5 results).
    """
    p.add_argument("--transport", choices=["stdio", "http"], default="stdio", help="default stdio")
    p.add_argument("--host", default="127.0.0.1", help="HTTP interface (default 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8000, help="HTTP port (default 8000)")
    p.add_argument("--path", default="/mcp", help="HTTP endpoint path (default /mcp)")
    p.add_argument(
        "--enable-writes", action="store_true", help="also expose the destructive store/delete tools"
    )
    p.add_argument(
        "--hybrid",
        type=alpha,
        nargs="?",
        const=AUTO_ALPHA,
        metavar="ALPHA",
        help="hybrid search (the default) with this alpha: 0 full-text only, 1 vector only; bare or "
        "'auto': 0.2 for queries up to 40 words, 0.5 above",
    )
    p.add_argument("--no-hybrid", dest="hybrid", action="store_const", const=False, help="vector search only")
    p.add_argument(
        "-k", "--top-k", type=positive_int, metavar="N", help="results when a call gives no top_k (default 5)"
    )
    p.add_argument(
        "--rerank",
        action="store_true",
        help="over-fetch and rerank with the offline scorer (weights 0.4/0.4/0.2)",
    )
    p.add_argument(
        "--read-consistency",
        type=read_consistency,
        default=argparse.SUPPRESS,  # not given: turnkit.mcp.DEFAULT_READ_CONSISTENCY_INTERVAL
        metavar="SECONDS",
        help="see other processes' writes within this many seconds (default 1; 0: check before every "
        "read; off: never, until a restart)",
    )
    p.add_argument(
        "--guard",
        metavar="EXPR",
        help='a filter ANDed with every search and write, never shown to clients, e.g. tenant = "acme"',
    )
    p.add_argument(
        "--filter-fields",
        default="auto",
        metavar="KEYS",
        help="keys vector_query may filter on: auto (default; read inside the guard), any, or key1,key2",
    )
    p.add_argument(
        "--enable-filter",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="let vector_query take a metadata filter (default on)",
    )
    g = p.add_argument_group("serving over a network (--transport http)")
    g.add_argument(
        "--token",
        metavar="TOKEN",
        help="bearer token clients must send [$TURNKIT_MCP_TOKEN; prefer the variable: arguments show in ps]",
    )
    g.add_argument(
        "--tokens-file",
        metavar="PATH",
        help="JSON or TOML file of principals, each with a token (or its sha256) and a guard",
    )
    g.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST",
        help="a Host name clients use (repeatable); loopback names and --host are always allowed",
    )
    g.add_argument(
        "--insecure-no-auth",
        action="store_true",
        help="serve a non-loopback --host without a token (only behind your own authentication)",
    )
    for flag, metavar, does in (
        ("--max-body-size", "BYTES", "request body cap (default 4 MiB)"),
        ("--max-sessions", "N", "open sessions in all (default 1000)"),
        ("--max-sessions-per-client", "N", "per token or address (default 32)"),
        ("--session-idle-timeout", "SECONDS", "default 1800"),
        ("--max-message-size", "BYTES", "stdio: longer messages are dropped (default 4 MiB)"),
    ):
        g.add_argument(flag, type=positive_int, metavar=metavar, help=does)


def serve_options(args: argparse.Namespace) -> dict[str, Any]:
    """The `turnkit.mcp.serve` keywords of the flags `turnkit serve` and ``python -m turnkit.mcp`` share.

    Transport, writes, retrieval, filter and HTTP flags, and ``--read-consistency``;
    the store, its connection, the collections and the encoder are each entry point's.
    """
    from ..mcp import HttpLimits

    given = {
        "max_body_bytes": args.max_body_size,
        "max_sessions": args.max_sessions,
        "max_sessions_per_client": args.max_sessions_per_client,
        "idle_timeout": args.session_idle_timeout,
    }
    limits = {k: v for k, v in given.items() if v is not None}
    if "max_sessions" in limits and "max_sessions_per_client" not in limits:
        limits["max_sessions_per_client"] = min(limits["max_sessions"], HttpLimits().max_sessions_per_client)
    # Flags whose value is the keyword's as given.
    same = ("transport", "host", "port", "path", "enable_writes", "guard", "filter_fields", "enable_filter")
    options: dict[str, Any] = {
        n: getattr(args, n) for n in (*same, "token", "tokens_file", "insecure_no_auth")
    }
    options.update(
        settings=retrieval_settings(args), allow_hosts=args.allow_host, limits=HttpLimits(**limits)
    )
    if args.max_message_size is not None:
        options["max_message_bytes"] = args.max_message_size
    if "read_consistency" in args:
        options["read_consistency_interval"] = args.read_consistency
    return options


def build_parser() -> argparse.ArgumentParser:
    """The ``turnkit`` parser; each subcommand sets ``command``."""
    from .. import __version__

    parser = _Parser(
        prog="turnkit",
        description="turnkit: a LanceDB vector index as an agent's retrieval memory.",
        epilog=_epilog(*_ENV_HELP),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"turnkit {__version__}")
    parser.add_argument("--debug", action="store_true", help="print tracebacks on errors")
    subs = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = _add(subs, "ingest", (*_STORE_ENV, ENV_COLLECTION, ENV_ENCODER, "RAY_ADDRESS"), _common(encoder=True))
    p.add_argument("paths", nargs="+", metavar="PATH", help="files or folders to ingest")
    p.add_argument(
        "--prune", action="store_true", help="also remove the chunks of files that no longer exist"
    )
    p.add_argument("--chunk-size", type=positive_int, default=1024, metavar="TOKENS", help="default 1024")
    p.add_argument(
        "--chunk-overlap", type=int, default=200, metavar="TOKENS", help="default 200 (< chunk size)"
    )
    p.add_argument("--batch-size", type=positive_int, default=512, metavar="N", help="chunks per upsert")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--max-file-size",
        type=file_size,
        default=50 * 1024 * 1024,
        metavar="SIZE",
        help="skip larger files (default 50MiB; e.g. 10MB, 512KiB, none)",
    )
    p.add_argument(
        "--follow-external-symlinks",
        action="store_true",
        help="also read symlinked files whose targets are outside the given paths",
    )
    for flag, does in (
        ("--include", "read only walked files matching GLOB (git's syntax, e.g. '*.md' or 'docs/**')"),
        ("--exclude", "leave out walked files and folders matching GLOB (e.g. 'drafts/')"),
    ):
        p.add_argument(flag, action="append", default=[], metavar="GLOB", help=f"{does}; repeatable")
    p.add_argument(
        "--no-gitignore", action="store_true", help="read files the walked folders' .gitignore files exclude"
    )
    p.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local (default): this process; ray: Ray workers load, chunk, encode and write, one commit "
        "(pip install 'turnkit[ray]')",
    )
    p.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="with --engine ray: the cluster to join ('auto', 'ray://host:10001') [$RAY_ADDRESS, "
        "default: start Ray here]",
    )
    p.add_argument(
        "--html-extractor",
        choices=["turnkit", "trafilatura"],
        default="turnkit",
        help="how HTML becomes text: turnkit's reader (default) or trafilatura's main-content "
        "extraction (pip install 'turnkit[html]')",
    )
    p.add_argument(
        "--fallback-encoding",
        action="append",
        default=[],
        metavar="NAME",
        help="on text that is not UTF-8, try this encoding (e.g. cp1252), kept only if the result reads "
        "as text, or auto to detect it; repeatable, tried in order",
    )
    p.add_argument(
        "--extension",
        "--ext",
        action="append",
        default=[],
        metavar=".EXT[=KIND]",
        help="read files ending in .EXT as KIND: text (the default), markdown, html or pdf; none skips "
        "them (e.g. --ext .adoc, --ext .rst=markdown); repeatable",
    )
    p.add_argument(
        "--verbose", action="store_true", help="list every skipped file (by default: a count per reason)"
    )

    p = _add(subs, "query", (*_STORE_ENV, ENV_COLLECTION, ENV_ENCODER), _common(encoder=True))
    p.add_argument("text", metavar="TEXT", help="what to search for")
    add_query_flags(p)
    p.add_argument("--full", action="store_true", help="print whole documents, not a one-line excerpt")

    p = _add(subs, "stats", _STORE_ENV, _common(collection=False))
    p.add_argument(
        "-c", "--collection", action="append", metavar="NAME", help="only this collection (repeatable)"
    )

    p = _add(subs, "optimize", (*_STORE_ENV, ENV_COLLECTION), _common())
    p.add_argument("--all", action="store_true", help="every collection of the database")
    p.add_argument(
        "--index",
        choices=["auto", "none", "ivf_flat", "ivf_pq", "hnsw_sq"],
        default="auto",
        help="auto (default): build one when there is none and the collection has --index-min-rows rows; "
        "none: never; a type: (re)build that index now",
    )
    p.add_argument("--index-min-rows", type=positive_int, default=10_000, metavar="N", help="default 10000")

    p = _add(
        subs,
        "serve",
        (*_STORE_ENV, ENV_COLLECTION, ENV_ENCODER, "TURNKIT_MCP_TOKEN"),
        _common(collection=False, json=False, encoder=True),
    )
    p.add_argument(
        "-c", "--collection", metavar="NAME", help=f"only this collection [${ENV_COLLECTION}, default: all]"
    )
    add_serve_arguments(p)

    p = _add(
        subs,
        "demo",
        ("TURNKIT_OPENAI_MODEL", "TURNKIT_OPENAI_BASE_URL", "TURNKIT_OPENAI_API_KEY"),
        _common(uri=False, collection=False),
    )
    p.add_argument(
        "--uri", default=DEMO_URI, metavar="URI", help=f"the demo's own database (default {DEMO_URI})"
    )
    p.add_argument("-q", "--question", action="append", metavar="TEXT", help="ask this instead (repeatable)")
    p.add_argument("-k", "--top-k", type=positive_int, default=3, metavar="N", help="chunks per question")
    p.add_argument("--model", metavar="NAME", help="model name (overrides TURNKIT_OPENAI_MODEL)")
    p.add_argument("--base-url", metavar="URL", help="API root (overrides TURNKIT_OPENAI_BASE_URL)")
    p.add_argument("--show-prompt", action="store_true", help="also print the whole prompt of each turn")

    p = _add(subs, "collections", _STORE_ENV, _common(collection=False))
    p.add_argument("action", choices=["list", "path", "files", "drop"], help="what to do")
    p.add_argument("name", nargs="?", metavar="NAME", help="the collection (for path, files and drop)")
    p.add_argument("--yes", action="store_true", help="drop without asking (required when not on a terminal)")

    # count, delete, export and peek: a collection's rows, all or those a filter matches.
    p = {
        name: _add(subs, name, (*_STORE_ENV, ENV_COLLECTION), _common(json=name != "export"))
        for name in ("count", "delete", "export", "peek")
    }
    for sub in p.values():
        sub.add_argument(
            "-f",
            "--filter",
            metavar="EXPR",
            help="only rows this metadata filter matches, e.g. 'kind = \"faq\"'",
        )
    p["delete"].add_argument("--all", action="store_true", help="delete every row (instead of --filter)")
    p["delete"].add_argument("--yes", action="store_true", help="do not ask (needed when not on a terminal)")
    p["export"].add_argument("--format", choices=["jsonl", "parquet"], default="jsonl", help="default jsonl")
    p["export"].add_argument(
        "-o", "--output", metavar="FILE", help="write here, not stdout (Parquet needs it)"
    )
    p["export"].add_argument("--no-vectors", action="store_true", help="leave the vectors out")
    p["export"].add_argument("--json", action="store_true", help="with -o: print a JSON summary on stdout")
    p["peek"].add_argument("-n", "--rows", type=positive_int, default=5, metavar="N", help="default 5")

    p = _add(subs, "completion", ())
    p.add_argument("shell", choices=["bash", "zsh", "tcsh"], help="the shell")
    return parser


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
    print(shtab.complete(build_parser(), shell=args.shell), end="")
    return EXIT_OK
