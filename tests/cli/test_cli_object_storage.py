"""The command line against an S3-compatible server on loopback: ingest, query, stats, collections, serve.

Everything goes through `--storage-option` (or the AWS_* variables LanceDB reads), as a user would type it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests._s3 import S3Server, moto_available, s3_server
from turnkit.cli import EXIT_FAILURE, EXIT_OK

from .conftest import Run

pytestmark = pytest.mark.skipif(
    not moto_available(), reason="moto[server] is not installed (turnkit[s3-test])"
)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


def _flags(server: S3Server) -> list[str]:
    flags: list[str] = []
    for key, value in server.storage_options.items():
        flags += ["--storage-option", f"{key}={value}"]
    return flags


def test_ingest_query_stats_and_collections_on_object_storage(run: Run, corpus: Path, s3: S3Server) -> None:
    uri = s3.new_bucket()
    flags = ["--uri", uri, *_flags(s3)]
    ingest = run("ingest", str(corpus), "--encoder", "hash:32", "-c", "kb", "--json", *flags)
    assert ingest.code == EXIT_OK, ingest.err
    assert json.loads(ingest.out)["chunks_written"] >= 3

    again = run("ingest", str(corpus), "-c", "kb", "--json", *flags)
    assert again.code == EXIT_OK, again.err
    assert json.loads(again.out)["chunks_written"] == 0  # the encoder was read back from the bucket

    query = run("query", "refunds original card", "-c", "kb", "-k", "1", "--json", *flags)
    assert query.code == EXIT_OK, query.err
    assert "Refunds reach the original card" in json.loads(query.out)["results"][0]["document"]

    stats = run("stats", "--json", *flags)
    assert stats.code == EXIT_OK, stats.err
    assert [c["name"] for c in json.loads(stats.out)["collections"]] == ["kb"]

    listed = run("collections", "list", "--json", *flags)
    assert [c["name"] for c in json.loads(listed.out)["collections"]] == ["kb"]
    path = run("collections", "path", "kb", *flags)
    assert path.out.strip() == f"{uri}/kb.lance"


def test_the_aws_variables_work_without_flags(run: Run, corpus: Path, s3: S3Server) -> None:
    uri = s3.new_bucket()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_ENDPOINT": s3.endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }
    result = run("ingest", str(corpus), "--encoder", "hash:32", "--uri", uri, "--json", env=env)
    assert result.code == EXIT_OK, result.err
    listed = run("collections", "list", "--uri", uri, "--json", env=env)
    assert listed.code == EXIT_OK, listed.out + listed.err
    assert [c["name"] for c in json.loads(listed.out)["collections"]] == ["docs"]


def test_an_unreachable_store_hints_at_the_cli_flags(run: Run, corpus: Path, s3: S3Server) -> None:
    # Wrong credentials: the error names what a command-line user can change.
    result = run(
        "ingest",
        str(corpus),
        "--encoder",
        "hash:32",
        "--uri",
        s3.new_bucket().replace("tk-", "missing-"),
        "--storage-option",
        f"endpoint={s3.endpoint}",
        "--storage-option",
        "allow_http=true",
        "--storage-option",
        "region=us-east-1",
        "--storage-option",
        "aws_access_key_id=testing",
        "--storage-option",
        "aws_secret_access_key=testing",
    )
    assert result.code == EXIT_FAILURE, result.err
    assert "turnkit: error: [E_VECTOR_STORE_CONNECTION_FAILED]" in result.err
    hint = result.err.split("Hint:")[1]
    assert "--storage-option" in hint and "AWS_" in hint and "storage_options" not in hint


def test_serve_over_stdio_on_object_storage(run: Run, corpus: Path, s3: S3Server, tmp_path: Path) -> None:
    mcp = pytest.importorskip("mcp")
    uri = s3.new_bucket()
    flags = ["--uri", uri, *_flags(s3)]
    assert run("ingest", str(corpus), "--encoder", "hash:32", "-c", "kb", *flags).code == EXIT_OK
    params = mcp.StdioServerParameters(
        command=sys.executable, args=["-m", "turnkit.cli", "serve", "-c", "kb", *flags], cwd=str(tmp_path)
    )

    async def call() -> dict[str, object]:
        async with mcp.Client(params) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == {"vector_query", "retrieve_contexts"}
            result = await client.call_tool("vector_query", {"query_text": "ships from Lyon", "top_k": 1})
            assert not result.is_error
            return dict(result.structured_content or {})

    found = anyio.run(call)
    assert "Lyon" in json.dumps(found)
