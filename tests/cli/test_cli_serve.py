"""`turnkit serve`: a real MCP session over stdio with the console script, and the missing-extra error."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import mcp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp.client.stdio import StdioServerParameters

from turnkit.cli import EXIT_DEPENDENCY, EXIT_OK
from turnkit.cli._arg_types import read_consistency

from .conftest import TURNKIT, Run, clean_env


def test_serve_over_stdio_answers_a_tool_call(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("ingest", str(corpus), "--uri", db, "-c", "kb", "--encoder", "hash").code == EXIT_OK
    params = StdioServerParameters(
        command=str(TURNKIT),
        args=["serve", "--uri", db, "-c", "kb", "--hybrid", "0.5", "--rerank"],
        env=clean_env(),
        cwd=str(tmp_path),
    )

    async def session() -> tuple[list[str], str]:
        async with mcp.Client(params) as client:
            tools = await client.list_tools()
            result = await client.call_tool("vector_query", {"query_text": "pip install on Linux"})
            assert result.structured_content is not None
            return sorted(t.name for t in tools.tools), str(result.structured_content)

    names, content = asyncio.run(asyncio.wait_for(session(), timeout=60))
    assert "vector_query" in names
    assert not {"store_documents", "delete_documents"} & set(names)  # read-only unless --enable-writes
    assert "Run pip install turnkit on Linux." in content
    assert "Reranked" in content  # --rerank reached the tool


def test_serve_rejects_a_bad_hybrid_alpha(run: Run) -> None:
    result = run("serve", "--hybrid", "2")
    assert result.code == 2 and "expected a number from 0 to 1" in result.err


def test_serve_rejects_a_bad_read_consistency(run: Run) -> None:
    for bad in ("-1", "soon", "inf", "nan"):
        result = run("serve", "--read-consistency", bad)
        assert result.code == 2 and "expected seconds (0 or more) or off" in result.err, bad


@given(st.floats(min_value=0, max_value=1e12))
def test_read_consistency_reads_seconds_back_exactly(seconds: float) -> None:
    assert read_consistency(repr(seconds)) == seconds
    assert read_consistency(" OFF ") is None


def test_serve_without_the_mcp_extra_says_what_to_install() -> None:
    # `mcp` made unimportable, as in an install without the extra.
    code = "import sys\nsys.modules['mcp'] = None\nfrom turnkit.cli import main\nsys.exit(main(['serve']))\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean_env())
    assert proc.returncode == EXIT_DEPENDENCY, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "turnkit: error: [E_CLI_DEPENDENCY_MISSING] `turnkit serve` needs the MCP SDK (the `mcp` package), "
        "which is not installed. Hint: pip install 'turnkit[mcp]'"
    ]


def test_serve_rejects_a_bad_transport(run: Run) -> None:
    result = run("serve", "--transport", "carrier-pigeon")
    assert result.code == 2
    assert "invalid choice: 'carrier-pigeon'" in result.err


def test_serve_refuses_a_missing_database_without_creating_it(run: Run, tmp_path: Path) -> None:
    result = run("serve", "--uri", "nodb")
    assert result.code == 2 and "No database at" in result.err
    assert not (tmp_path / "nodb").exists()


def test_serve_refuses_a_missing_collection(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("ingest", str(corpus), "--uri", db, "-c", "kb", "--encoder", "hash").code == EXIT_OK
    result = run("serve", "--uri", db, "-c", "zz")
    assert result.code == 2 and "No collection 'zz'" in result.err


def test_serve_applies_a_guard_from_the_command_line(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("ingest", str(corpus), "--uri", db, "-c", "kb", "--encoder", "hash").code == EXIT_OK
    guard = 'source_display_name = "no-such-file.md"'
    params = StdioServerParameters(
        command=str(TURNKIT),
        args=["serve", "--uri", db, "-c", "kb", "--guard", guard, "--filter-fields", "any"],
        env=clean_env(),
        cwd=str(tmp_path),
    )

    async def session() -> tuple[str, dict]:
        async with mcp.Client(params) as client:
            listing = str((await client.list_tools()).tools)
            result = await client.call_tool("vector_query", {"query_text": "pip install on Linux"})
            assert result.structured_content is not None
            return listing, result.structured_content

    listing, content = asyncio.run(asyncio.wait_for(session(), timeout=60))
    assert "no-such-file" not in listing and "Any metadata key" in listing
    assert content["status"] == "no_results"  # the guard excludes every ingested chunk


def test_serve_refuses_a_network_bind_without_a_token(run: Run, corpus: Path, tmp_path: Path) -> None:
    db = str(tmp_path / "db")
    assert run("ingest", str(corpus), "--uri", db, "-c", "kb", "--encoder", "hash").code == EXIT_OK
    result = run("serve", "--uri", db, "--transport", "http", "--host", "0.0.0.0")
    assert result.code == 2
    assert "[E_MCP_INSECURE_BIND]" in result.err and "--insecure-no-auth" in result.err
    result = run("serve", "--uri", db, "--transport", "http", "--host", "0.0.0.0", "--token", "short")
    assert (
        result.code == 2 and "[E_INVALID_MCP_SERVER_CONFIG]" in result.err and "16 characters" in result.err
    )
    result = run("serve", "--uri", db, "--transport", "http", "--tokens-file", str(tmp_path / "none.toml"))
    assert result.code == 2 and "cannot be read" in result.err


def test_serve_http_flags_are_validated(run: Run) -> None:
    result = run("serve", "--transport", "http", "--max-sessions", "0")
    assert result.code == 2 and "expected a positive integer" in result.err


def _kb(tmp_path: Path) -> str:
    from turnkit.batteries.vector import HashEncoder, create_vector_store

    db = str(tmp_path / "db")
    vs = create_vector_store(uri=db, encoder=HashEncoder(64), auto_optimize=None)
    vs("kb").upsert_sync([{"id": "r1", "document": "Refunds are paid within five business days."}])
    return db


@contextlib.contextmanager
def _http_server(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> Iterator[list[str]]:
    """`turnkit serve --transport http --port 0 ARGS` running; yields the lines it printed at start."""
    proc = subprocess.Popen(
        [str(TURNKIT), "serve", "--transport", "http", "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(env),
        cwd=str(tmp_path),
    )
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stderr is not None
    stderr = proc.stderr
    reader = threading.Thread(target=lambda: [lines.put(line) for line in stderr], daemon=True)
    reader.start()
    try:
        start = [lines.get(timeout=120).rstrip("\n") for _ in range(3)]
        yield start
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        reader.join(10)
        stderr.close()


def _port(line: str) -> int:
    found = re.search(r"at http://[^ ]+:(\d+)/mcp$", line)
    assert found, line
    return int(found.group(1))


def test_http_serve_says_where_it_listens_who_may_connect_and_which_hosts(tmp_path: Path) -> None:
    db = _kb(tmp_path)
    with _http_server(tmp_path, "--uri", db, "-c", "kb", "--allow-host", "kb.example.com") as start:
        port = _port(start[0])
        assert start == [
            f"turnkit: serving MCP over HTTP at http://127.0.0.1:{port}/mcp",
            "turnkit: auth: none (loopback only; give a token to serve other machines)",
            "turnkit: allowed hosts: 127.0.0.1, localhost, [::1], kb.example.com (any port)",
        ]

        async def call() -> object:
            async with mcp.Client(f"http://127.0.0.1:{port}/mcp") as client:  # the printed address works
                result = await client.call_tool("vector_query", {"query_text": "refunds"})
                return result.structured_content

        assert "Refunds are paid" in str(asyncio.run(asyncio.wait_for(call(), timeout=60)))


def test_http_serve_names_where_its_tokens_came_from(tmp_path: Path) -> None:
    db = _kb(tmp_path)
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[principals.acme]\ntoken = "acme-token-0123456789"\nguard = \'tenant = "acme"\'\n')
    env = {"TURNKIT_MCP_TOKEN": "env-token-0123456789"}
    args = ("--uri", db, "--host", "0.0.0.0", "--tokens-file", str(tokens))
    with _http_server(tmp_path, *args, env=env) as start:
        port = _port(start[0])
        assert start == [
            f"turnkit: serving MCP over HTTP at http://0.0.0.0:{port}/mcp",
            f"turnkit: auth: bearer token from TURNKIT_MCP_TOKEN; bearer tokens from {tokens} "
            "(principals: acme)",
            "turnkit: allowed hosts: 127.0.0.1, localhost, [::1] (any port); "
            "clients that use another name need --allow-host NAME",
        ]
        assert "env-token" not in "".join(start) and "acme-token" not in "".join(start)
        request = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b"{}", method="POST")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=30)
        refused.value.close()
        assert refused.value.code == 401


def test_token_errors_name_the_flag_or_the_variable(run: Run, tmp_path: Path) -> None:
    db = _kb(tmp_path)
    from_env = run("serve", "--uri", db, "--transport", "http", env={"TURNKIT_MCP_TOKEN": "short"})
    assert from_env.code == 2 and "] TURNKIT_MCP_TOKEN: a token must be" in from_env.err
    assert "--token" not in from_env.err
    from_flag = run("serve", "--uri", db, "--transport", "http", "--token", "short")
    assert from_flag.code == 2 and "] --token: a token must be" in from_flag.err


def test_a_taken_port_is_a_clear_error(run: Run, tmp_path: Path) -> None:
    db = _kb(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("serve", "--uri", db, "--transport", "http", "--port", str(port))
    assert result.code == 2
    assert f"[E_INVALID_MCP_SERVER_CONFIG] Cannot listen on 127.0.0.1:{port}: " in result.err
    assert "--port 0 picks a free one" in result.err


def test_serve_retrieval_flags_set_only_the_settings_they_name() -> None:
    from turnkit.batteries.vector import RetrievalSettings
    from turnkit.cli._parser import build_parser, retrieval_settings

    def settings(*flags: str) -> dict[str, object]:
        return retrieval_settings(build_parser().parse_args(["serve", *flags]))

    assert settings() == {}  # turnkit's default: hybrid search, duplicates collapsed, 5 results
    assert settings("--no-hybrid") == {"hybrid": False}
    assert settings("--hybrid") == {"hybrid": True}
    assert settings("--hybrid", "0.3", "--top-k", "7", "--rerank") == {
        "hybrid": 0.3,
        "top_k": 7,
        "rerank": True,
    }
    assert RetrievalSettings.of(settings("--no-hybrid")).hybrid is None
