"""Distributed writes: Lance fragments written by many workers, committed once by one process.

A worker turns records into data files of the collection (`write_fragments`)
without committing them; the coordinator adds all of them in one commit
(`commit_fragments`), under the collection's write lock. Nothing is visible
until that commit, so a worker that dies leaves only unreferenced files, which
``optimize()`` cleans up. Needs ``pylance`` (the ``ray`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from turnkit._aio import on_loop, sync_form, to_thread
from turnkit._lazy import import_optional
from turnkit.batteries.vector._errors import VectorStoreRuntimeError
from turnkit.batteries.vector.store._auto_fields import conflicts, deployer_fields, to_latest
from turnkit.batteries.vector.store._fields import with_declared
from turnkit.batteries.vector.store._guarded import KEY, with_keys
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._locks import collection_lock
from turnkit.batteries.vector.store._records import collection_schema, prepare_records
from turnkit.batteries.vector.store._writes import check_directions, encode_documents

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["commit_fragments", "commit_fragments_sync", "write_fragments", "write_fragments_sync"]


def _lance() -> Any:
    return import_optional(
        "lance",
        partial(VectorStoreRuntimeError, code="E_VECTOR_STORE_DRIVER_UNAVAILABLE"),
        "Writing fragments needs the `pylance` package",
        "Install it with the ray extra: pip install 'turnkit[ray]'.",
    )


async def write_fragments(
    store: VectorStore, collection: str, records: Iterable[Mapping[str, Any]]
) -> list[str]:
    """Encode and write ``records`` as new data files of ``collection``; commit nothing.

    Records are validated and encoded as ``upsert`` does. The result is the
    fragments' metadata as JSON strings, small enough to send to the process
    that calls `commit_fragments`. The collection must exist.

    Raises:
        CollectionNotFoundError: the collection does not exist.
        VectorStoreRuntimeError: ``E_VECTOR_STORE_DRIVER_UNAVAILABLE``: ``pylance`` is not installed.
    """
    lance = _lance()
    batch = prepare_records(records, max_document_chars=store.max_document_chars)
    if not len(batch):
        return []
    coll = await on_loop(store._collection(collection))
    await encode_documents(store, collection, coll, batch)
    array = batch.vector_array(coll.dimension)
    check_directions(collection, batch.ids, array, coll.metric)
    fields = await on_loop(store._refresh_fields(coll))
    # An automatic field a record does not fit is left out: the commit then drops it (_auto_fields.py).
    misfits = conflicts(coll, batch.metadata)
    fields = {key: kind for key, kind in fields.items() if key not in misfits}
    data = batch.to_arrow(array, collection_schema(coll.dimension, {}), datetime.now(UTC))
    data = with_declared(data, batch.ids, batch.metadata, fields)
    if coll.keyed:  # appended records are keyed by their ids, as an unguarded upsert keys them
        data = with_keys(data)

    async def write() -> list[str]:
        uri = await coll.table.uri()
        with translate_errors("upsert", collection):
            fragments = await to_thread(
                lance.fragment.write_fragments,
                data,
                uri,
                schema=data.schema,
                storage_options=store.storage_options or None,
            )
        return [json.dumps(fragment.to_json()) for fragment in fragments]

    return await on_loop(write())


async def commit_fragments(store: VectorStore, collection: str, fragments: Sequence[str]) -> int:
    """Add the fragments `write_fragments` returned to ``collection`` in one commit; returns the rows added.

    The commit takes the collection's write lock (across processes on a local
    disk), so it never races an ``upsert``; Lance retries it past commits made
    since the workers started.
    """
    lance = _lance()
    if not fragments:
        return 0
    metas = [lance.fragment.FragmentMetadata.from_json(f) for f in fragments]
    coll = await on_loop(store._collection(collection))

    async def commit() -> int:
        async with coll.lock, collection_lock(store.uri, collection):
            uri = await coll.table.uri()
            await to_latest(coll, "upsert")
            for _ in range(2):  # again after dropping automatic fields the fragments lack
                with translate_errors("upsert", collection):
                    version = await coll.table.version()
                    fields = await store._refresh_fields(coll)
                    columns = [*fields, *([KEY] if coll.keyed else [])]
                    dataset = None
                    if columns:
                        dataset = await to_thread(
                            lance.dataset, uri, version=version, storage_options=store.storage_options or None
                        )
                missing = set() if dataset is None else _missing_columns(dataset, columns, fragments)
                lacking = sorted(missing & coll.auto)
                if not lacking:
                    break
                coll.fields = deployer_fields(coll)
                with translate_errors("upsert", collection):
                    await coll.table.drop_columns(lacking)
                coll.wrote()
            _check_declared_columns(collection, missing)
            with translate_errors("upsert", collection):
                await to_thread(
                    lance.LanceDataset.commit,
                    uri,
                    lance.LanceOperation.Append(metas),
                    read_version=version,
                    storage_options=store.storage_options or None,
                )
                await coll.table.checkout_latest()
            coll.wrote()
        return sum(int(m.num_rows) for m in metas)

    return await on_loop(commit())


def _missing_columns(dataset: Any, columns: Sequence[str], fragments: Sequence[str]) -> set[str]:
    # integrity: a fragment written before a field was declared (or the key column added) has no
    # data for its column, so Lance would read NULL there: filters on it would miss the row.
    ids = {dataset.lance_schema.field(key).id(): key for key in columns}
    missing: set[str] = set()
    for text in fragments:
        present = {fid for data_file in json.loads(text)["files"] for fid in data_file["fields"]}
        missing.update(key for fid, key in ids.items() if fid not in present)
    return missing


def _check_declared_columns(collection: str, missing: set[str]) -> None:
    if missing:
        raise VectorStoreRuntimeError(
            f"Collection {collection!r} gained the columns {', '.join(sorted(missing))} (declared fields, or "
            "the key of guarded writes) after these fragments were written, so they lack them; nothing "
            "was committed.",
            code="E_VECTOR_STORE_UPSERT_FAILED",
            hint="Write the records again with write_fragments, then commit the new fragments.",
            collection=collection,
        )


write_fragments_sync = sync_form(write_fragments)
commit_fragments_sync = sync_form(commit_fragments)
