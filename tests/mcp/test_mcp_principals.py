"""Per-principal guards in process, tokens files, HTTP limits and the Host allow-list."""

import hashlib
import json

import mcp
import pytest

from turnkit.mcp import (
    HttpLimits,
    MCPUsageError,
    create_mcp_server,
    load_principals,
)
from turnkit.mcp._auth import TokenVerifier
from turnkit.mcp._http import allowed_hosts, check_bind
from turnkit.tools import ToolUsageError

pytestmark = pytest.mark.anyio
TOKEN = "a-token-of-sufficient-length"


async def test_a_call_without_a_known_principal_is_refused(mem_store):
    server = create_mcp_server(mem_store, collections="kb", principal_guards={"acme": {"tenant": "acme"}})
    async with mcp.Client(server) as client:  # in process: no authentication
        listing = json.dumps([t.input_schema for t in (await client.list_tools()).tools])
        result = await client.call_tool("vector_query", {"query_text": "refunds"})
        ctx = await client.call_tool("retrieve_contexts", {"query": {"text": "refunds"}})
    assert "acme" not in listing and "globex" not in listing and "'faq'" not in listing
    for r in (result, ctx):
        assert r.is_error and r.structured_content["error"]["code"] == "E_MCP_UNKNOWN_PRINCIPAL"


def test_principal_guards_are_checked(mem_store):
    for bad in ({}, {"": None}, {"acme": {}}, ["acme"]):
        with pytest.raises((MCPUsageError, ToolUsageError)) as refused:
            create_mcp_server(mem_store, collections="kb", principal_guards=bad)
        assert refused.value.code in ("E_INVALID_MCP_SERVER_CONFIG", "E_INVALID_TOOL_CONFIG")


async def test_tokens_files_in_json_and_toml(tmp_path):
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    js = tmp_path / "t.json"
    js.write_text(json.dumps({"principals": {"acme": {"token_sha256": digest, "guard": {"tenant": "acme"}}}}))
    toml = tmp_path / "t.toml"
    toml.write_text(f'[principals.globex]\ntoken = "{TOKEN}-globex"\n')
    principals = load_principals("default-token-0123456789", js) + load_principals(None, toml)
    assert [p.name for p in principals] == ["default", "acme", "globex"]
    assert principals[1].guard == {"tenant": "acme"} and principals[2].guard is None
    verifier = TokenVerifier(principals)
    assert (await verifier.verify_token(TOKEN)).client_id == "acme"
    assert (await verifier.verify_token(TOKEN + "-globex")).client_id == "globex"
    assert await verifier.verify_token(TOKEN + "x") is None
    assert await verifier.verify_token("") is None


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"acme": {"token": TOKEN}}),
        json.dumps({"principals": {}}),
        json.dumps({"principals": {"acme": {"token": "short"}}}),
        json.dumps({"principals": {"acme": {"token_sha256": "abc"}}}),
        json.dumps({"principals": {"acme": {"token": TOKEN, "token_sha256": "0" * 64}}}),
        json.dumps({"principals": {"acme": {"token": TOKEN, "role": "admin"}}}),
        json.dumps({"principals": {"a": {"token": TOKEN}, "b": {"token": TOKEN}}}),
        json.dumps({"principals": {"bad name": {"token": TOKEN}}}),
        json.dumps({"principals": {"acme": {"token": TOKEN, "guard": 3}}}),
    ],
)
def test_bad_tokens_files_are_refused(tmp_path, content):
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(MCPUsageError) as info:
        load_principals(None, path)
    assert info.value.code == "E_INVALID_MCP_SERVER_CONFIG" and info.value.hint


def test_a_missing_tokens_file_is_refused(tmp_path):
    with pytest.raises(MCPUsageError, match="cannot be read") as exc_info:
        load_principals(None, tmp_path / "nope.json")
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"


def test_binding_beyond_loopback_needs_a_token_or_an_explicit_opt_out(caplog):
    for host in ("0.0.0.0", "::", "10.1.2.3", "kb.example.com"):
        with pytest.raises(MCPUsageError) as exc_info:
            check_bind(host, authenticated=False, insecure_no_auth=False)
        assert exc_info.value.code == "E_MCP_INSECURE_BIND"
        check_bind(host, authenticated=True, insecure_no_auth=False)
    for host in ("127.0.0.1", "127.0.0.2", "::1", "localhost"):
        check_bind(host, authenticated=False, insecure_no_auth=False)
    check_bind("0.0.0.0", authenticated=False, insecure_no_auth=True)
    assert "no authentication" in caplog.text


def test_allowed_hosts_cover_loopback_the_bind_host_and_extras():
    settings = allowed_hosts("10.0.0.5", ["kb.example.com", "proxy.local:8443", "::1"])
    assert settings.enable_dns_rebinding_protection
    hosts = set(settings.allowed_hosts)
    assert {"127.0.0.1:*", "localhost:*", "[::1]:*", "10.0.0.5", "10.0.0.5:*", "kb.example.com:*"} <= hosts
    assert "proxy.local:8443" in hosts and "proxy.local:*" not in hosts
    assert "https://kb.example.com:*" in settings.allowed_origins
    assert not any(h.startswith("0.0.0.0") for h in allowed_hosts("0.0.0.0").allowed_hosts)
    for bad in ("*", "a b", "http://x/"):
        with pytest.raises(MCPUsageError) as exc_info:
            allowed_hosts("127.0.0.1", [bad])
        assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"


def test_http_limits_are_checked():
    for bad in (
        {"max_body_bytes": 0},
        {"max_sessions": True},
        {"idle_timeout": float("inf")},
        {"uninitialized_timeout": -1},
        {"max_sessions": 4, "max_sessions_per_client": 5},
    ):
        with pytest.raises(MCPUsageError) as exc_info:
            HttpLimits(**bad)
        assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"


@pytest.mark.parametrize("cap", [1, 5, 70_000])
async def test_bounded_lines_keeps_short_lines_and_drops_long_ones(cap):
    import io

    from turnkit.mcp._stdio import bounded_lines

    lines = [b"a", b"", b"x" * 5, b"y" * 6, b"z" * 200_000, b"{}", "é".encode() * 3, b"tail"]
    source = io.BytesIO(b"\n".join(lines))
    got = [line async for line in bounded_lines(source, cap)]
    expected = [(line.decode() + "\n") for line in lines[:-1] if len(line) <= cap]
    if len(lines[-1]) <= cap:
        expected.append(lines[-1].decode())
    assert got == expected
