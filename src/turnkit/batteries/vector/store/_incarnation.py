"""Which table a version number belongs to, when a table was dropped and recreated elsewhere.

A table dropped and recreated by another process numbers its versions from 1
again, so a reader that looks for new versions (``read_consistency_interval``,
see ``_freshness.py``) may next see the very number it read before, over
other rows. turnkit's own tables record when they were created, which tells
them apart anywhere; for other tables on a local disk, each version's
manifest is a file written once, so its inode and modification time do, for
a stat (microseconds).
"""

from __future__ import annotations

import os

__all__ = ["manifest_stamp"]

_LAST = 2**64 - 1  # Lance's version-2 manifest names count down from the largest u64


def manifest_stamp(root: str | None, name: str, version: int) -> tuple[int, int] | None:
    """The inode and mtime of ``version``'s manifest of table ``name`` under local ``root``, else ``None``."""
    if root is None:
        return None
    versions = os.path.join(root, f"{name}.lance", "_versions")
    for file in (f"{_LAST - version:020d}.manifest", f"{version}.manifest"):
        try:
            stat = os.stat(os.path.join(versions, file))
        except (OSError, ValueError):
            continue
        return stat.st_ino, stat.st_mtime_ns
    return None
