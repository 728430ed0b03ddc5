"""`python -m turnkit.mcp --transport http` facing a network: tokens, hosts, limits, tenants; stdio's cap."""

import contextlib
import hashlib
import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from .conftest import free_port, start_http, stop

pytestmark = pytest.mark.anyio

TOKEN_A = "token-for-acme-0123456789"
TOKEN_B = "token-for-globex-0123456789"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k != "TURNKIT_MCP_TOKEN"}
    return {**env, "LANCEDB_LOG": "error", **extra}


def _start(uri, *args, env=None):
    port = free_port()
    command = [sys.executable, "-m", "turnkit.mcp", "--uri", uri, "--transport", "http", "--port", str(port)]
    return start_http([*command, *args], port, env=env or _env()), f"http://127.0.0.1:{port}/mcp"


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
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


@contextlib.asynccontextmanager
async def _client(url, token):
    async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
        async with mcp.Client(streamable_http_client(url, http_client=http)) as client:
            yield client


@pytest.fixture
def token_server(disk_store):
    uri, _ = disk_store
    proc, url = _start(
        uri, "--max-sessions", "40", "--max-sessions-per-client", "8", env=_env(TURNKIT_MCP_TOKEN=TOKEN_A)
    )
    yield url
    stop(proc)


async def test_tokens_are_required_and_checked(token_server):
    body = json.dumps(INIT).encode()
    status, headers, _ = _post(token_server, body)
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    status, headers, _ = _post(token_server, body, {"Authorization": "Bearer " + TOKEN_B})
    assert status == 401 and headers["www-authenticate"].startswith("Bearer")
    status, _, _ = _post(token_server, body, {"Authorization": "Basic " + TOKEN_A})
    assert status == 401
    async with _client(token_server, TOKEN_A) as client:
        hit = await client.call_tool(
            "vector_query", {"collection": "kb", "query_text": "refunds", "top_k": 1}
        )
        assert hit.structured_content["status"] == "ok"


def test_host_and_origin_are_checked_on_every_bind(token_server):
    body = json.dumps(INIT).encode()
    auth = {"Authorization": f"Bearer {TOKEN_A}"}
    status, _, _ = _post(token_server, body, {**auth, "Host": "evil.example"})
    assert status == 421
    status, _, _ = _post(token_server, body, {**auth, "Origin": "http://evil.example"})
    assert status == 403
    status, _, _ = _post(token_server, body, auth)
    assert status == 200


def test_a_body_over_the_cap_is_refused_with_413(disk_store):
    uri, _ = disk_store
    proc, url = _start(uri, "--max-body-size", "2000", env=_env(TURNKIT_MCP_TOKEN=TOKEN_A))
    try:
        big = json.dumps({**INIT, "params": {**INIT["params"], "pad": "x" * 5000}}).encode()
        status, _, _ = _post(url, big, {"Authorization": f"Bearer {TOKEN_A}"})
        assert status == 413
        status, _, _ = _post(url, json.dumps(INIT).encode(), {"Authorization": f"Bearer {TOKEN_A}"})
        assert status == 200
    finally:
        stop(proc)


async def test_a_flood_of_initialize_calls_does_not_lock_out_a_client(token_server):
    auth = {"Authorization": f"Bearer {TOKEN_A}"}
    body = json.dumps(INIT).encode()
    statuses = [_post(token_server, body, auth)[0] for _ in range(200)]  # never closed
    assert set(statuses) == {200}  # room was made each time, by ending the idle ones
    statuses = {_post(token_server, body)[0] for _ in range(50)}
    assert statuses == {401}
    async with _client(token_server, TOKEN_A) as client:
        hit = await client.call_tool(
            "vector_query", {"collection": "kb", "query_text": "orders ship", "top_k": 1}
        )
        assert hit.structured_content["sources"][0]["id"] == "acme-ship"


def test_a_non_loopback_bind_without_a_token_refuses_to_start(disk_store):
    uri, _ = disk_store
    for host in ("0.0.0.0", "192.0.2.7"):
        proc = subprocess.run(
            [sys.executable, "-m", "turnkit.mcp", "--uri", uri, "--transport", "http", "--host", host],
            capture_output=True,
            text=True,
            env=_env(),
            timeout=60,
        )
        assert proc.returncode == 2
        assert "E_MCP_INSECURE_BIND" in proc.stderr and "--insecure-no-auth" in proc.stderr


def test_loopback_addresses_are_recognised():
    from turnkit.mcp._auth import is_loopback

    assert all(map(is_loopback, ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "10.0.0.1", "example.com"]))


async def test_each_token_sees_only_its_own_rows(disk_store, tmp_path):
    uri, _ = disk_store
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(
        "[principals.acme]\n"
        f'token_sha256 = "{hashlib.sha256(TOKEN_A.encode()).hexdigest()}"\n'
        'guard = { tenant = "acme" }\n'
        "[principals.globex]\n"
        f'token = "{TOKEN_B}"\n'
        "guard = 'tenant = \"globex\"'\n"
    )
    proc, url = _start(uri, "--collection", "kb", "--tokens-file", str(tokens), "--enable-writes")
    try:
        seen = {}
        for name, token in (("acme", TOKEN_A), ("globex", TOKEN_B)):
            async with _client(url, token) as client:
                listing = json.dumps([t.input_schema for t in (await client.list_tools()).tools])
                hit = await client.call_tool("vector_query", {"query_text": "refunds paid", "top_k": 10})
                ctx = await client.call_tool("retrieve_contexts", {"query": {"text": "refunds"}})
                bad = await client.call_tool("delete_documents", {"ids": ["acme-refund", "globex-refund"]})
                seen[name] = (listing, hit.structured_content, ctx.structured_content, bad.structured_content)
        acme, globex = seen["acme"], seen["globex"]
        assert {s["id"] for s in acme[1]["sources"]} == {"acme-refund", "acme-ship"}
        assert {s["id"] for s in globex[1]["sources"]} == {"globex-refund"}
        assert "Lyon" not in json.dumps(globex) and "30 business days" not in json.dumps(acme)
        # Guard values and keys never reach the model.
        assert all("tenant" not in json.dumps(v) for v in (acme, globex))
        assert "'howto'" in acme[0] and "'howto'" not in globex[0]  # each listing shows its own values
        assert acme[3] == {"deleted": 1} and globex[3] == {"deleted": 1}
        # A session belongs to the token that opened it.
        _, headers, _ = _post(url, json.dumps(INIT).encode(), {"Authorization": f"Bearer {TOKEN_A}"})
        listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode()
        other = {"Authorization": f"Bearer {TOKEN_B}", "Mcp-Session-Id": headers["mcp-session-id"]}
        assert _post(url, listing, other)[0] == 404
    finally:
        stop(proc)


def test_stdio_drops_an_oversized_message_and_keeps_serving(disk_store):
    uri, _ = disk_store
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "turnkit.mcp",
            "--uri",
            uri,
            "--collection",
            "kb",
            "--max-message-size",
            "10000",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=_env(),
    )

    def send(message):
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    try:
        send(INIT)
        assert json.loads(proc.stdout.readline())["result"]["serverInfo"]["name"] == "turnkit"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        huge = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "vector_query"}}
        huge["params"]["arguments"] = {"query_text": "x" * 3_000_000}
        send(huge)
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"name": "vector_query", "arguments": {"query_text": "refunds"}},
            }
        )
        answer = json.loads(proc.stdout.readline())
        assert answer["id"] == 3 and answer["result"]["structuredContent"]["status"] == "ok"
    finally:
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.stderr.close()
    assert proc.returncode == 0
    assert "limit is 10000 bytes" in err
