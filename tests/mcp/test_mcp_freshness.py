"""A running server sees other processes' writes: `turnkit serve` over stdio and HTTP, and in process.

Each write is made by a real second process while the server answers. The
polls wait far longer than the bound (1 s by default) so a slow machine
cannot fail them; they measure nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from typing import Any

import anyio
import mcp
import pytest
from mcp import StdioServerParameters

from turnkit.mcp import (
    DEFAULT_READ_CONSISTENCY_INTERVAL,
    MCPUsageError,
    create_mcp_server,
)

from .conftest import free_port, start_http, stop

pytestmark = pytest.mark.anyio

# add: one more record; recreate: drop the collection and create it again with other records;
# rebuild: delete the whole database folder and write it again.
_WRITER = """
import shutil, sys
from turnkit.batteries.vector import HashEncoder, create_vector_store
uri, mode = sys.argv[1], sys.argv[2]
if mode == "rebuild":
    shutil.rmtree(uri)
vs = create_vector_store(uri=uri, encoder=HashEncoder(64), auto_optimize=None, memory_cache=None)
if mode == "recreate":
    vs.drop_collection_sync("kb")
record = {
    "add": ("fresh", "Quarterly planning budget review"),
    "recreate": ("recreated", "Warehouse inventory audit checklist"),
    "rebuild": ("rebuilt", "Office relocation moving schedule"),
}[mode]
vs("kb").upsert_sync([{"id": record[0], "document": record[1], "metadata": {"kind": "faq"}}])
"""

_QUERIES = {
    "fresh": "quarterly planning budget review",
    "recreated": "warehouse inventory audit checklist",
    "rebuilt": "office relocation moving schedule",
}
_PATIENCE = 60.0  # seconds: a guard against a hang, far above the bound


def _env() -> dict[str, str]:
    return {**os.environ, "LANCEDB_LOG": "error"}


async def _write(uri: str, mode: str) -> None:
    """Another process writes (and has finished when this returns)."""
    await anyio.run_process([sys.executable, "-c", _WRITER, uri, mode], env=_env(), check=True)


async def _top(client: Any, text: str) -> str | None:
    result = await client.call_tool("vector_query", {"query_text": text, "top_k": 1})
    assert not result.is_error, result.structured_content
    sources = result.structured_content["sources"]
    return sources[0]["id"] if sources else None


async def _until_found(client: Any, record_id: str) -> None:
    """Ask until the record is the best match; fail only after `_PATIENCE` seconds."""
    deadline = time.monotonic() + _PATIENCE
    while await _top(client, _QUERIES[record_id]) != record_id:
        assert time.monotonic() < deadline, f"{record_id!r} never showed up"
        await anyio.sleep(0.1)


def _serve(uri: str, *args: str) -> list[str]:
    return [sys.executable, "-m", "turnkit.cli", "serve", "--uri", uri, "-c", "kb", *args]


async def test_turnkit_serve_over_stdio_sees_another_process_write_by_default(disk_store: Any) -> None:
    uri, _ = disk_store
    command = _serve(uri)
    params = StdioServerParameters(command=command[0], args=command[1:], env=_env())
    async with mcp.Client(params) as client:
        assert await _top(client, _QUERIES["fresh"]) != "fresh"
        await _write(uri, "add")
        await _until_found(client, "fresh")


@pytest.fixture
def http_serve(disk_store: Any) -> Iterator[tuple[str, str]]:
    """`turnkit serve --transport http` with the default bound: (database, endpoint)."""
    uri, _ = disk_store
    port = free_port()
    proc = start_http(_serve(uri, "--transport", "http", "--port", str(port)), port)
    yield uri, f"http://127.0.0.1:{port}/mcp"
    stop(proc)


async def test_turnkit_serve_over_http_sees_writes_and_a_recreated_collection(
    http_serve: tuple[str, str],
) -> None:
    uri, url = http_serve
    async with mcp.Client(url) as client:
        assert await _top(client, _QUERIES["fresh"]) != "fresh"
        await _write(uri, "add")
        await _until_found(client, "fresh")
        # Dropped and created again by another process: reopened, not failed on.
        await _write(uri, "recreate")
        await _until_found(client, "recreated")
        # The whole database folder deleted and written again: queries recover too.
        await _write(uri, "rebuild")
        await _until_found(client, "rebuilt")
        assert await _top(client, _QUERIES["fresh"]) == "rebuilt"  # the only record left


async def test_the_bound_is_an_option_of_create_mcp_server(disk_store: Any) -> None:
    """0 looks before every read, so the next call sees the write; None never looks."""
    uri, _ = disk_store
    every = create_mcp_server(uri=uri, collections="kb", read_consistency_interval=0)
    never = create_mcp_server(uri=uri, collections="kb", read_consistency_interval=None)
    async with mcp.Client(every) as seeing, mcp.Client(never) as blind:
        for client in (seeing, blind):
            assert await _top(client, _QUERIES["fresh"]) != "fresh"
        await _write(uri, "add")
        # The blind one first: once a store of this process has seen a commit, all of them move to it.
        assert await _top(blind, _QUERIES["fresh"]) != "fresh"
        assert await _top(seeing, _QUERIES["fresh"]) == "fresh"


def test_the_bound_is_checked(disk_store: Any) -> None:
    uri, vs = disk_store
    for bad in (-1, float("nan"), "soon", True):
        with pytest.raises(MCPUsageError) as raised:
            create_mcp_server(uri=uri, read_consistency_interval=bad)
        assert raised.value.code == "E_INVALID_MCP_SERVER_CONFIG"
        assert raised.value.option == "read_consistency_interval"
    with pytest.raises(MCPUsageError) as raised:  # a store brings its own
        create_mcp_server(vs, read_consistency_interval=5)
    assert raised.value.code == "E_INVALID_MCP_SERVER_CONFIG"
    assert "create_vector_store" in raised.value.hint
    assert create_mcp_server(vs, read_consistency_interval=DEFAULT_READ_CONSISTENCY_INTERVAL)
