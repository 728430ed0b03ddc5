"""Guard and filter flags of `python -m turnkit.mcp`, refusals before serving, and hidden failure details."""

import json
import os
import subprocess
import sys

import mcp
import pytest
from mcp import StdioServerParameters

from turnkit.batteries.vector import FunctionEncoder, create_vector_store
from turnkit.mcp import (
    MCPUsageError,
    create_mcp_server,
)

pytestmark = pytest.mark.anyio


def _env():
    return {**os.environ, "LANCEDB_LOG": "error"}


def _module(*args, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "turnkit.mcp", *args],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


async def test_guard_and_filter_fields_from_the_command_line(disk_store):
    uri, _ = disk_store
    args = ["-m", "turnkit.mcp", "--uri", uri, "--collection", "kb"]
    args += ["--guard", 'tenant = "acme"', "--filter-fields", "kind,year"]
    params = StdioServerParameters(command=sys.executable, args=args, env=_env())
    async with mcp.Client(params) as client:
        listing = json.dumps([t.model_dump(mode="json") for t in (await client.list_tools()).tools])
        assert "acme" not in listing and "globex" not in listing and "tenant" not in listing
        hits = await client.call_tool(
            "vector_query", {"query_text": "refunds paid business days", "top_k": 10}
        )
        assert {s["id"] for s in hits.structured_content["sources"]} == {"acme-refund", "acme-ship"}
        faq = await client.call_tool("vector_query", {"query_text": "refunds", "filter": {"kind": "faq"}})
        assert [s["id"] for s in faq.structured_content["sources"]] == ["acme-refund"]
        widen = await client.call_tool(
            "vector_query", {"query_text": "refunds", "filter": {"tenant": "globex"}}
        )
        assert widen.is_error and widen.structured_content["error"]["code"] == "E_VECTOR_STORE_UNKNOWN_FIELD"
        request = {
            "query": {
                "text": "refunds",
                "rag_retrieval_config": {"top_k": 10, "filter": {"metadata_filter": 'tenant = "globex"'}},
            }
        }
        other = await client.call_tool("retrieve_contexts", request)
        assert other.structured_content["contexts"].get("contexts", []) == []


async def test_filtering_can_be_turned_off_from_the_command_line(disk_store):
    uri, _ = disk_store
    args = ["-m", "turnkit.mcp", "--uri", uri, "--collection", "kb", "--no-enable-filter"]
    async with mcp.Client(StdioServerParameters(command=sys.executable, args=args, env=_env())) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert "filter" not in tools["vector_query"].input_schema["properties"]
        refused = await client.call_tool("vector_query", {"query_text": "refunds", "filter": {"kind": "faq"}})
        assert refused.is_error and refused.structured_content["error"]["code"] == "E_TOOL_INVALID_INPUT"


@pytest.mark.parametrize("guard", ["", "tenant =", "tenant = 'acme' OR"])
def test_a_bad_guard_is_refused_before_serving(disk_store, guard):
    uri, _ = disk_store
    proc = _module("--uri", uri, "--guard", guard)
    assert proc.returncode == 2 and "E_INVALID_MCP_SERVER_CONFIG" in proc.stderr and "guard" in proc.stderr


def test_a_missing_database_is_refused_and_not_created(tmp_path):
    proc = _module("--uri", "nodb", cwd=tmp_path)
    assert proc.returncode == 2 and "No database at 'nodb'" in proc.stderr
    assert not (tmp_path / "nodb").exists()


def test_a_missing_collection_is_refused(disk_store):
    uri, _ = disk_store
    proc = _module("--uri", uri, "--collection", "zz")
    assert proc.returncode == 2 and "No collection 'zz'" in proc.stderr and "kb" in proc.stderr
    with pytest.raises(MCPUsageError, match="No collection 'zz'") as exc_info:
        create_mcp_server(uri=uri, collections=["kb", "zz"])
    assert exc_info.value.code == "E_INVALID_MCP_SERVER_CONFIG"


async def test_a_failing_encoder_keeps_its_code_and_hides_its_message():
    def broken(texts, kind):
        raise RuntimeError("401: invalid api key sk-SECRET")

    vs = create_vector_store(uri="memory://", encoder=FunctionEncoder(broken, name="x", dimension=4))
    vs("kb").upsert_sync([{"id": "a", "vector": [1, 0, 0, 0], "metadata": {"kind": "faq"}}])
    async with mcp.Client(create_mcp_server(vs, collections="kb")) as client:
        for tool, args in (
            ("vector_query", {"query_text": "hi"}),
            ("retrieve_contexts", {"query": {"text": "hi"}}),
        ):
            result = await client.call_tool(tool, args)
            assert result.is_error, tool
            assert result.structured_content["error"]["code"] == "E_VECTOR_STORE_ENCODER_FAILED", tool
            assert "sk-SECRET" not in json.dumps(result.structured_content), tool
