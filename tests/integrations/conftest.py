"""Shared fixtures: one real in-memory store with two tenants' records in one collection."""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Iterator

import pytest

from turnkit.batteries.vector import HashEncoder, VectorStore, create_vector_store

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
