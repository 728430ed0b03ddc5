"""Finding a database and a collection, and saying what is there when the one asked for is not."""

from __future__ import annotations

import difflib
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ._config import store_uri

if TYPE_CHECKING:
    from ..batteries.vector import VectorStore
    from ._connect import Connection

__all__ = ["collection_not_found", "database_missing", "no_collections_line", "open_collection"]

_LISTED = 20  # collections named in a not-found message; `turnkit collections list` has them all


def database_missing(conn: Connection) -> bool:
    """A local database directory that does not exist (connecting would create it)."""
    return "://" not in conn.uri and not Path(conn.uri).expanduser().exists()


def no_collections_line(conn: Connection, missing: bool) -> str:
    """What `stats` and `collections list` print for a database without collections (or without a folder)."""
    if missing:
        return (
            f"No collections: there is no database at {store_uri(conn.uri)!r} (the folder does not exist). "
            f"Create it with: turnkit ingest PATH --uri {conn.uri}"
        )
    return f"No collections in {conn.uri!r} yet. Add some with: turnkit ingest PATH --uri {conn.uri}"


def collection_not_found(conn: Connection, name: str | None, names: list[str] | None) -> Exception:
    """The not-found error for ``name``: ``names`` are the database's collections, None if it does not exist.

    It names the closest collection ("did you mean") and those there are, or the missing database's path.
    """
    from ..batteries.vector import CollectionNotFoundError

    error = partial(CollectionNotFoundError, collection=name, uri=conn.uri)
    create = f"turnkit ingest PATH --uri {conn.uri}" + ("" if name is None else f" --collection {name}")
    if names is None or name is None:
        what = "" if name is None else f", so no collection {name!r}"
        return error(
            f"There is no database at {store_uri(conn.uri)!r} (the folder does not exist){what}.",
            hint=f"Check --uri (or TURNKIT_URI); to create it, ingest into it: {create}",
        )
    if not names:
        return error(
            f"No collection {name!r}: the database at {conn.uri!r} has no collections yet.",
            hint=f"Ingest into it first: {create}",
        )
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    guess = f" Did you mean {close[0]!r}?" if close else ""
    listed = ", ".join(names[:_LISTED])
    if len(names) > _LISTED:
        listed += f", … ({len(names) - _LISTED} more: turnkit collections list)"
    return error(
        f"No collection {name!r} in the database at {conn.uri!r}.{guess} Collections: {listed}.",
        hint=f"Pass one of them with --collection NAME, or create {name!r}: {create}",
        did_you_mean=close[0] if close else None,
    )


def open_collection(conn: Connection, *names: str) -> VectorStore:
    """A store (no encoder) over a database that holds ``names`` (none: that exists at all).

    Raises the not-found error for the first name missing; a missing local database is reported, not created.
    """
    if database_missing(conn):
        raise collection_not_found(conn, next(iter(names), None), None)
    store = conn.store()
    there = store.list_collections_sync() if names else []
    for name in names:
        if name not in there:
            raise collection_not_found(conn, name, there)
    return store
