"""Writes to a collection: validated upserts (and replace), consented deletes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from turnkit._aio import on_loop
from turnkit.batteries.vector._errors import VectorStoreRuntimeError, VectorStoreUsageError
from turnkit.batteries.vector.encoders._base import EncodeKind, Encoder, encode_texts
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import to_sql
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store._auto_fields import deployer_fields, retire_conflicts, to_latest
from turnkit.batteries.vector.store._common import UpsertResult, _contains_raw, _matches_everything
from turnkit.batteries.vector.store._fields import declared_arrays, with_declared
from turnkit.batteries.vector.store._guarded import (
    KEY,
    add_key_column,
    check_inside_guard,
    guarded_keys,
    with_keys,
)
from turnkit.batteries.vector.store._integrity import heal_after_write, superseded
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._locks import collection_lock, heals_after_write
from turnkit.batteries.vector.store._maintenance import after_write
from turnkit.batteries.vector.store._records import collection_schema, prepare_records

__all__ = ["check_consent", "check_directions", "delete", "encode_documents", "upsert", "write"]

# Tries of a write refused because a late create overwrote (then restored) the collection under it.
_SUPERSEDED_TRIES = 3


if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore


async def encode_documents(store: VectorStore, name: str, coll: _Collection | None, batch: Any) -> None:
    """Fill in the vectors of records that came with a document only (the store's or the recorded encoder)."""
    if not batch.to_encode:
        return
    encoder = store._encoder_for(name, coll)
    store._check_encoder(coll, encoder)
    texts = [batch.documents[i] or "" for i in batch.to_encode]
    vectors = await _encode_for(name, encoder, texts, "document", first=batch.to_encode[0])
    for row, index in enumerate(batch.to_encode):
        batch.vectors[index] = vectors[row]


def check_directions(name: str, ids: list[str], vectors: np.ndarray[Any, Any], metric: str) -> None:
    """Refuse an all-zero vector for a cosine collection, naming the first record holding one."""
    if metric != "cosine":
        return
    zero = ~vectors.any(axis=1)
    if zero.any():
        index = int(np.argmax(zero))
        raise VectorStoreUsageError(
            f"Record {index} (id {ids[index]!r}): an all-zero vector has no direction, "
            "so a cosine collection could never return it.",
            code="E_INVALID_VECTOR_RECORD",
            hint="Check the encoder's output, or use metric='l2' for vectors that can be zero.",
            collection=name,
            index=index,
            record_id=ids[index],
        )


async def upsert(
    store: VectorStore,
    name: str,
    records: Iterable[Mapping[str, Any]],
    *,
    replace: QuerySpec | None = None,
    guard: FilterNode | None = None,
) -> UpsertResult:
    batch = prepare_records(records, max_document_chars=store.max_document_chars)
    if guard is not None:  # guard: every record must be inside it
        check_inside_guard(batch, guard)
    if replace is not None:
        check_consent(store, "replace", replace, all_records=False)
    if not len(batch):
        return UpsertResult(0, 0, 0 if replace is None else await delete(store, replace, all_records=True))
    coll = await on_loop(store._existing(name))
    # Refused before anything is created or encoded; checked again on the version the write lands on.
    # (Automatic fields refuse nothing: a value of another type drops the field, see _auto_fields.py.)
    declared_arrays(batch.ids, batch.metadata, store.fields if coll is None else deployer_fields(coll))
    await encode_documents(store, name, coll, batch)
    array = batch.vector_array(None if coll is None else coll.dimension)
    replacing = None if replace is None else replace.filter
    return await on_loop(write(store, name, batch, array, replace=replacing, guard=guard))


async def write(
    store: VectorStore,
    name: str,
    batch: Any,
    vectors: np.ndarray[Any, Any],
    *,
    replace: FilterNode | None = None,
    guard: FilterNode | None = None,
) -> UpsertResult:
    # The table's own schema reads the JSON column back as large_binary; writing with it stores bytes that
    # JSON filters then reject. Built before the collection is opened or created: a failure leaves no trace.
    schema = collection_schema(vectors.shape[1], {})
    try:
        data = batch.to_arrow(vectors, schema, datetime.now(UTC))
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise VectorStoreUsageError(
            f"The batch for {name!r} could not be converted for LanceDB: {exc}",
            code="E_INVALID_VECTOR_RECORD",
            collection=name,
        ) from exc
    existing = await store._existing(name)
    check_directions(name, batch.ids, vectors, existing.metric if existing is not None else store.metric)
    # Opened once above; only a collection that does not exist yet is created here.
    coll = existing or await store._collection(name, create_dimension=vectors.shape[1])
    if coll.dimension != vectors.shape[1]:
        raise VectorStoreUsageError(
            f"Collection {name!r} has dimension {coll.dimension}, the records have {vectors.shape[1]}.",
            code="E_VECTOR_STORE_DIMENSION_MISMATCH",
            collection=name,
            expected=coll.dimension,
        )
    async with coll.lock, collection_lock(store.uri, name) as across:
        # LanceDB's merge_insert of the same *new* key from two writers at once inserts it twice
        # (lancedb#2463); one writer per collection in this process (and, on a local disk, across processes)
        # avoids that. The match runs against the handle's snapshot, so it must include every earlier commit.
        await store._fresh(coll)
        if across:  # integrity: other processes' commits too
            await to_latest(coll, "upsert")
        for attempt in range(_SUPERSEDED_TRIES):
            try:
                result = await _merge(store, coll, name, data, batch, replace, guard, across=across)
                break
            except VectorStoreRuntimeError as exc:
                # integrity: on object storage a late create of this collection committed an
                # overwrite after the version this write read (and then restored the table):
                # the write is refused whole, so it runs again on the latest version.
                if (
                    exc.code != "E_VECTOR_STORE_UPSERT_FAILED"
                    or across
                    or attempt == _SUPERSEDED_TRIES - 1
                    or not superseded(exc)
                ):
                    raise
                await to_latest(coll, "upsert")
    if result is None:
        return UpsertResult(0, 0)
    after_write(store, coll)
    return UpsertResult(
        int(result.num_inserted_rows),
        int(result.num_updated_rows),
        int(getattr(result, "num_deleted_rows", 0) or 0),
    )


async def _merge(
    store: VectorStore,
    coll: _Collection,
    name: str,
    data: pa.Table,
    batch: Any,
    replace: FilterNode | None,
    guard: FilterNode | None,
    *,
    across: bool,
) -> Any:
    """One read-modify-commit of an upsert, on the handle's version (the caller holds the locks)."""
    # Declared fields as of the version this write lands on (another process may have declared one).
    await store._refresh_fields(coll)
    fields = await retire_conflicts(store, coll, batch.metadata, "upsert")
    data = with_declared(data, batch.ids, batch.metadata, fields)
    replace_where = None if replace is None else to_sql(replace, fields)
    if guard is not None and not coll.keyed:  # guard: ids are scoped by guard from now on
        await add_key_column(coll.table, name)
        await store._refresh_fields(coll)
    if guard is not None:  # guard: rows outside it are never read nor touched
        ids = data["id"].to_pylist()
        data = with_keys(data, await guarded_keys(coll.table, name, ids, guard, to_sql(guard, fields)))
    elif coll.keyed:
        data = with_keys(data)
    merge = (
        coll.table.merge_insert(KEY if coll.keyed else "id")
        .when_matched_update_all()
        .when_not_matched_insert_all()
    )
    if replace_where is not None:
        # Same commit: the filter's records that this batch does not hold go.
        merge = merge.when_not_matched_by_source_delete(replace_where)
    with translate_errors("upsert", name, raw_filter=replace_where is not None):
        result = await merge.execute(data) if data.num_rows else None
    if result is not None and not across and heals_after_write(store.uri):
        # integrity: a racing writer may have inserted these ids too; the later commit cleans up.
        await heal_after_write(coll.table, name, data["id"].to_pylist())
    return result


def check_consent(store: VectorStore, terminal: str, spec: QuerySpec, *, all_records: bool) -> None:
    if not all_records and (spec.filter is None or _matches_everything(spec.filter) is True):
        what = "has no filter" if spec.filter is None else "has a filter that matches every record"
        raise VectorStoreUsageError(
            f"{terminal}() on {spec.collection!r} {what} and would remove every record.",
            code="E_VECTOR_STORE_UNSAFE_DELETE",
            collection=spec.collection,
        )


async def delete(store: VectorStore, spec: QuerySpec, *, all_records: bool) -> int:
    check_consent(store, "delete", spec, all_records=all_records)
    coll = await store._collection(spec.collection)
    async with coll.lock, collection_lock(store.uri, coll.name):
        await store._fresh(coll)
        sql = "true" if spec.filter is None else to_sql(spec.filter, coll.fields)
        with translate_errors("delete", spec.collection, raw_filter=_contains_raw(spec.filter)):
            result = await coll.table.delete(sql)
    after_write(store, coll)
    return int(getattr(result, "num_deleted_rows", 0) or 0)


async def _encode_for(
    collection: str, encoder: Encoder, texts: list[str], kind: EncodeKind, *, first: int | None = None
) -> np.ndarray[Any, Any]:
    """`encode_texts`, with the collection (and first record) added to a failure's context."""
    try:
        return await encode_texts(encoder, texts, kind)
    except VectorStoreRuntimeError as exc:
        if exc.code == "E_VECTOR_STORE_ENCODER_FAILED":
            exc.add_context(collection=collection, operation="upsert" if kind == "document" else "search")
            if first is not None:
                exc.add_context(index=first)
        raise
