"""Stdio with a per-message size cap: one huge line cannot grow the server's memory without bound."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "bounded_lines", "run_stdio"]

log = logging.getLogger("turnkit.mcp")

DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
_CHUNK = 64 * 1024


async def bounded_lines(source: BinaryIO, max_bytes: int) -> AsyncIterator[str]:
    """The lines of ``source``, each at most ``max_bytes``; a longer one is skipped as it streams by.

    A skipped line is logged, never buffered; the lines after it are served as usual.
    """
    wrapped = anyio.wrap_file(source)
    buffer = bytearray()
    skipping = 0  # bytes of an oversized line dropped so far (0: not skipping)
    while True:
        chunk = await wrapped.read1(_CHUNK)
        if not chunk:
            break
        start = 0
        while start < len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if skipping:
                skipping += len(piece)
            elif len(buffer) + len(piece) > max_bytes:
                skipping = len(buffer) + len(piece)
                buffer.clear()
            else:
                buffer += piece
            if end < 0:
                break
            start = end + 1
            if skipping:
                log.warning(
                    "Dropped a %d-byte message over stdio: the limit is %d bytes per message.",
                    skipping,
                    max_bytes,
                )
                skipping = 0
            else:
                yield buffer.decode("utf-8", "replace") + "\n"
                buffer.clear()
    if buffer and not skipping:
        yield buffer.decode("utf-8", "replace")


async def run_stdio(server: MCPServer[Any], max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
    """``server.run_stdio_async()`` with stdin read through `bounded_lines`."""
    # The SDK needs no more of stdin than `async for line in stdin`.
    stdin: Any = bounded_lines(sys.stdin.buffer, max_message_bytes)
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):
        # MCPServer.run_stdio_async takes no stdin; this is what it runs, with our reader.
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
