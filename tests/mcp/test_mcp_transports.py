"""`python -m turnkit.mcp` (what `turnkit serve` runs) over a stdio subprocess and streamable HTTP."""

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import mcp
import pytest
from mcp import StdioServerParameters

from .conftest import free_port, start_http, stop

pytestmark = pytest.mark.anyio


def _env():
    return {**os.environ, "LANCEDB_LOG": "error"}


async def test_stdio_subprocess(disk_store):
    uri, _ = disk_store
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "turnkit.mcp", "--uri", uri, "--collection", "kb"], env=_env()
    )
    async with mcp.Client(params) as client:
        assert client.server_info.name == "turnkit"
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"vector_query", "retrieve_contexts"}
        assert tools["vector_query"].annotations.read_only_hint is True
        hit = await client.call_tool("vector_query", {"query_text": "orders ship", "top_k": 1})
        assert hit.structured_content["sources"][0]["id"] == "acme-ship"
        bad = await client.call_tool("vector_query", {"query_text": "x", "top_k": "lots"})
        assert bad.is_error and bad.structured_content["error"]["code"] == "E_TOOL_INVALID_INPUT"
        ctx = await client.call_tool(
            "retrieve_contexts", {"query": {"text": "refunds paid", "ragRetrievalConfig": {"topK": 1}}}
        )
        # The answer is in the seed's REST spelling.
        assert ctx.structured_content["contexts"]["contexts"][0]["chunk"]["pageSpan"] == {
            "firstPage": 2,
            "lastPage": 2,
        }


def test_stdio_survives_malformed_lines(disk_store):
    uri, _ = disk_store
    proc = subprocess.Popen(
        [sys.executable, "-m", "turnkit.mcp", "--uri", uri, "--collection", "kb"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=_env(),
    )

    def send(message):
        proc.stdin.write((message if isinstance(message, str) else json.dumps(message)) + "\n")
        proc.stdin.flush()

    def receive():
        return json.loads(proc.stdout.readline())

    try:
        send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"},
                },
            }
        )
        assert receive()["result"]["serverInfo"]["name"] == "turnkit"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send("{this is not json")  # dropped by the SDK's stdio transport; the server keeps reading
        send(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "vector_query", "arguments": "x"},
            }
        )
        assert receive() == {
            "jsonrpc": "2.0",
            "id": 2,
            "error": {"code": -32602, "message": "Invalid request parameters", "data": ""},
        }
        send({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"})
        assert receive()["error"]["code"] == -32601
        send(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "vector_query", "arguments": {"query_text": "refunds"}},
            }
        )
        result = receive()["result"]
        assert result["isError"] is False and result["structuredContent"]["status"] == "ok"
    finally:
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
    assert proc.returncode == 0


@pytest.fixture
def http_server(disk_store):
    uri, _ = disk_store
    port = free_port()
    command = [sys.executable, "-m", "turnkit.mcp", "--uri", uri, "--transport", "http", "--port", str(port)]
    proc = start_http([*command, "--enable-writes"], port)
    yield f"http://127.0.0.1:{port}/mcp"
    stop(proc)


def _post(url, body, headers=None):
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_streamable_http_on_loopback(http_server):
    async with mcp.Client(http_server) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == {"vector_query", "retrieve_contexts", "store_documents", "delete_documents"}
        assert tools["delete_documents"].annotations.destructive_hint is True
        assert tools["vector_query"].input_schema["properties"]["collection"]["enum"] == ["kb", "notes"]
        hit = await client.call_tool(
            "vector_query", {"collection": "kb", "query_text": "refunds paid", "top_k": 1}
        )
        assert hit.structured_content["sources"][0]["source_uri"] == "file:///kb/policy.pdf"
    # Malformed HTTP requests get JSON-RPC errors...
    status, body = _post(http_server, b"{not json")
    assert status == 400 and json.loads(body)["error"]["code"] == -32700
    status, body = _post(http_server, b'{"jsonrpc": "2.0", "id": 1, "method": 42}')
    assert status >= 400
    # ...and the server keeps serving.
    async with mcp.Client(http_server) as client:
        stored = await client.call_tool(
            "store_documents",
            {"collection": "notes", "records": [{"id": "n2", "text": "Quarterly planning"}]},
        )
        assert stored.structured_content == {"inserted": 1, "updated": 0}
        again = await client.call_tool(
            "vector_query", {"collection": "notes", "query_text": "quarterly planning", "top_k": 1}
        )
        assert again.structured_content["sources"][0]["id"] == "n2"
