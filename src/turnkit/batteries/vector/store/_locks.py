"""One writer per collection across processes, for databases on a local disk.

LanceDB's ``merge_insert`` treats a new key like an append, so two processes
inserting the same new id at once both commit it (lancedb#2463). On a local
path an advisory ``flock`` on a file beside the tables serializes each write's
read-modify-commit across every process on the machine. Object storage has no
such lock: there the store detects duplicates on read and removes them on
`repair` (see ``_integrity.py``).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO

from turnkit.batteries.vector._errors import VectorStoreRuntimeError

__all__ = ["LOCK_DIR", "collection_lock", "heals_after_write", "local_root"]

# Not a `.lance` directory, so LanceDB never lists it as a table.
LOCK_DIR = ".turnkit-locks"
# A write holds the lock for one commit; two minutes of waiting means a stuck peer.
LOCK_TIMEOUT_SECONDS = 120.0

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no cross-process lock (documented)
    fcntl = None  # type: ignore[assignment]


def local_root(uri: str) -> str | None:
    """The directory of a database on a local disk, or ``None`` for object storage and Cloud."""
    if uri.startswith("file://"):
        return uri.removeprefix("file://")
    return None if "://" in uri else uri


def heals_after_write(uri: str) -> bool:
    """Whether writers here can race unlocked, so each write checks its ids for copies afterwards.

    True for object storage; local disks take the lock, ``memory://`` is one
    process, and LanceDB Cloud serializes writes itself.
    """
    return local_root(uri) is None and not uri.startswith(("memory://", "db://"))


def _try_lock(handle: IO[bytes]) -> bool:
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@asynccontextmanager
async def collection_lock(
    uri: str, name: str, *, timeout: float = LOCK_TIMEOUT_SECONDS
) -> AsyncIterator[bool]:
    """Hold collection ``name``'s cross-process write lock; yields whether one was taken.

    A no-op (yields ``False``) for object storage, LanceDB Cloud and systems
    without ``fcntl``. Polls rather than blocking a thread, so a slow peer
    never stalls turnkit's background loop.

    Raises:
        VectorStoreRuntimeError: ``E_VECTOR_STORE_OPERATION_FAILED``: The lock stayed taken for ``timeout``
            seconds.
    """
    root = local_root(uri)
    if root is None or fcntl is None:
        yield False
        return
    folder = os.path.join(root, LOCK_DIR)
    os.makedirs(folder, exist_ok=True)
    handle = open(os.path.join(folder, f"{name}.lock"), "a+b")
    try:
        deadline = time.monotonic() + timeout
        pause = 0.001
        while not _try_lock(handle):
            if time.monotonic() > deadline:
                raise VectorStoreRuntimeError(
                    f"Collection {name!r} stayed locked by another process for {timeout:.0f} s.",
                    code="E_VECTOR_STORE_OPERATION_FAILED",
                    hint=f"A writer may be stuck; check processes holding {folder}/{name}.lock.",
                    collection=name,
                    operation="lock",
                )
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)
        try:
            yield True
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()
