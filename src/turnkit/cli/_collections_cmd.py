"""``turnkit collections list | path | files | drop``."""

from __future__ import annotations

import argparse
import sys

from ._config import store_uri
from ._connect import connection_of
from ._errors import EXIT_OK, CliUsageError
from ._lookup import database_missing, no_collections_line, open_collection
from ._output import emit_json

__all__ = ["run_collections"]


def run_collections(args: argparse.Namespace) -> int:
    """List the collections, print where one lives or the files ingested into it, or drop one."""
    conn = connection_of(args)
    if args.action != "list" and not args.name:
        raise CliUsageError(
            f"`turnkit collections {args.action}` needs a collection name.",
            hint=f"turnkit collections {args.action} NAME",
        )
    if args.action == "list":
        missing = database_missing(conn)
        store = None if missing else conn.store()
        names = [] if store is None else store.list_collections_sync()
        rows = {n: store.collection_info_sync(n).rows for n in names} if store is not None else {}
        if args.json:
            emit_json({"uri": conn.uri, "collections": [{"name": n, "rows": rows[n]} for n in names]})
        elif not names:
            print(no_collections_line(conn, missing))
        else:
            width = max(len(n) for n in names)
            for n in names:
                print(f"{n.ljust(width)}  {rows[n]} rows")
        return EXIT_OK
    name = args.name
    store = open_collection(conn, name)
    if args.action == "files":
        from ._rows_cmd import print_files

        return print_files(args, conn, store, name)
    if args.action == "path":
        # Where LanceDB keeps a collection's data; none of its own on LanceDB Cloud or in memory.
        kept = not (conn.is_cloud or conn.uri.startswith("memory://"))
        path = f"{store_uri(conn.uri).rstrip('/')}/{name}.lance" if kept else None
        if args.json:
            emit_json({"uri": conn.uri, "collection": name, "path": path})
        else:
            print(path if path is not None else f"{conn.uri} (collection {name!r}, managed by LanceDB Cloud)")
        return EXIT_OK
    count = store.collection_info_sync(name).rows
    asked = f"Drop collection {name!r} and its {count} rows? Type the name to confirm: "
    if not args.yes and not (sys.stdin.isatty() and input(asked).strip() == name):
        raise CliUsageError(
            f"Not dropping {name!r} ({count} rows) without confirmation.",
            hint=f"Add --yes to drop it: turnkit collections drop {name} --yes",
            collection=name,
        )
    store.drop_collection_sync(name)
    if args.json:
        emit_json({"uri": conn.uri, "dropped": name, "rows": count})
    else:
        print(f"Dropped {name!r} ({count} rows) from {conn.uri}.")
    return EXIT_OK
