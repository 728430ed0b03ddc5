"""Shared fixtures: one real in-memory store with two tenants' records in one collection."""

from __future__ import annotations

import asyncio
import re
import warnings
from collections.abc import Iterator

import pytest

from turnkit.batteries.vector import HashEncoder, VectorMatch, VectorStore, create_vector_store, retrieve_sync

# Guard values that appear nowhere in the records' text, so finding them in what a model saw is a leak.
TENANTS = ("tenant-7f3a9c", "tenant-b81e44")


@pytest.fixture
def shared_store() -> VectorStore:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(64))
    vs("kb").upsert_sync(
        [
            {
                "id": "a1",
                "document": "refund policy: refunds are paid within 5 days",
                "metadata": {"tenant": TENANTS[0], "kind": "faq", "source_display_name": "policy.md"},
            },
            {
                "id": "a2",
                "document": "shipping: orders ship from Lyon",
                "metadata": {"tenant": TENANTS[0], "kind": "howto"},
            },
            {
                "id": "b1",
                "document": "refund policy: refunds are paid within 9 days",
                "metadata": {"tenant": TENANTS[1], "kind": "faq"},
            },
        ]
    )
    return vs


@pytest.fixture(autouse=True)
def _close_the_loop_run_sync_left() -> Iterator[None]:
    """Frameworks' ``run_sync`` leave their event loop open as the thread's current loop: close it here.

    Otherwise it is collected during a later, unrelated test and its ResourceWarning fails that test.
    """
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running():
        loop.close()
        asyncio.set_event_loop(None)


# One page shipped three times (.md, .html, the single-page all.html; not byte-equal, so no tie
# decides which copy leads) among other pages: with
# turnkit's default settings the copies collapse into one result and hybrid search reorders.
PAGE = "The process object provides information about, and control over, the current Node.js process."
QUESTION = "what is process.argv"
_PAGES = [
    ("process-md", "# The process object\n\n" + PAGE, "process.md"),
    ("process-html", "Process " + PAGE, "process.html"),
    ("all-html", "Node.js API. " + PAGE + " Node.js API.", "all.html"),
    ("exit", "The exit event is emitted when the Node.js process is about to exit.", "events.md"),
    ("argv", "process.argv returns an array containing the command-line arguments.", "argv.md"),
    ("env", "process.env returns an object containing the user environment.", "env.md"),
    ("fs", "The fs module enables interacting with the file system.", "fs.md"),
    ("stream", "A stream is an abstract interface for working with streaming data in Node.js.", "stream.md"),
    ("buffer", "Buffer objects are used to represent a fixed-length sequence of bytes.", "buffer.md"),
    (
        "timers",
        "The timer module exposes a global API for scheduling functions to be called later.",
        "timers.md",
    ),
]


@pytest.fixture
def copies_store() -> VectorStore:
    vs = create_vector_store(uri="memory://", encoder=HashEncoder(64))
    vs("docs").upsert_sync(
        [{"id": i, "document": d, "metadata": {"source_display_name": s}} for i, d, s in _PAGES]
    )
    return vs


@pytest.fixture
def default_hits(copies_store: VectorStore) -> list[VectorMatch]:
    """What `retrieve` with default settings finds for QUESTION (checked to differ from vector-only)."""
    hits = retrieve_sync(copies_store("docs").near_text(QUESTION)).matches
    plain = copies_store("docs").near_text(QUESTION).select("id").limit(len(hits)).search_sync()
    assert [m.id for m in hits] != [m.id for m in plain]
    assert any(m.duplicates for m in hits)
    return hits


def rendered_ids(text: str) -> list[str]:
    """The record ids in what a model read (turnkit's rendered records), in order."""
    return re.findall(r'<document[^>]*? id="([^"]+)"', text)
