"""The LanceDB-backed vector store: connection, collections, writes and searches.

Everything that touches LanceDB runs on turnkit's background loop (see
``turnkit._aio``): table handles, per-collection write locks and maintenance
tasks live there, so async callers on any loop and sync callers on any thread
share one handle and one lock per collection.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from turnkit._aio import on_loop, run_sync
from turnkit.batteries.vector._errors import (
    CollectionExistsError,
    CollectionNotFoundError,
    ConnectionFailedError,
    DimensionMismatchError,
    EncoderFailedError,
    EncoderMismatchError,
    EncoderRequiredError,
    InvalidCollectionNameError,
    InvalidQueryError,
    InvalidVectorRecordError,
    InvalidVectorStoreConfigError,
    RecordNotFoundError,
    UnsafeDeleteError,
)
from turnkit.batteries.vector.encoders._base import EncodeKind, Encoder, encode_texts
from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or, Raw
from turnkit.batteries.vector.filters._core import MAX_IN_VALUES, condition, to_sql
from turnkit.batteries.vector.query._builder import QueryBuilder
from turnkit.batteries.vector.query._spec import NearId, NearVector, QuerySpec
from turnkit.batteries.vector.store._bulk_matches import matches_from_arrow
from turnkit.batteries.vector.store._guarded import check_inside_guard, drop_outside_guard
from turnkit.batteries.vector.store._index_policy import auto_index, search_knobs
from turnkit.batteries.vector.store._integrity import (
    claim_maintenance,
    create_or_open,
    dedupe_matches,
    heal_after_write,
    remove_duplicates,
    reopen_or_corrupt,
    retry_conflicts,
)
from turnkit.batteries.vector.store._lancedb import import_lancedb, translate_errors
from turnkit.batteries.vector.store._locks import collection_lock, heals_after_write
from turnkit.batteries.vector.store._memory_index import (
    INLINE_WORK,
    MemoryCache,
    MemoryCacheStats,
    MemoryIndex,
)
from turnkit.batteries.vector.store._records import (
    DEFAULT_MAX_DOCUMENT_CHARS,
    collection_schema,
    match_from_row,
    prepare_records,
)
from turnkit.batteries.vector.store._scores import (
    Metric,
    distance_bound,
    normalize_metric,
)

__all__ = ["AutoOptimize", "CollectionInfo", "UpsertResult", "VectorStore", "create_vector_store"]

log = logging.getLogger("turnkit.vector")

_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_FORMAT = 1
_COLUMNS = ("id", "vector", "document", "metadata", "created_at", "updated_at")


@dataclass(frozen=True, slots=True)
class UpsertResult:
    """What an upsert did."""

    inserted: int
    updated: int
    deleted: int = 0

    @property
    def written(self) -> int:
        """Records written in all."""
        return self.inserted + self.updated


@dataclass(frozen=True, slots=True, kw_only=True)
class AutoOptimize:
    """When the store compacts a collection by itself, in the background after a write.

    Attributes:
        every_writes: Optimize after this many write commits (LanceDB's own rule
            of thumb is about 20).
        unindexed_rows: Also optimize once an indexed collection has this many
            rows outside its index (they are flat-scanned until then).
    """

    every_writes: int = 20
    unindexed_rows: int | None = 10_000


@dataclass(frozen=True, slots=True)
class CollectionInfo:
    """Facts about one collection."""

    name: str
    dimension: int
    metric: Metric
    encoder: str | None
    rows: int
    version: int
    indexes: tuple[str, ...]
    unindexed_rows: int
    fragments: int


@dataclass(slots=True)
class _Collection:
    name: str
    table: Any
    dimension: int
    metric: Metric
    encoder: str | None
    tracker: _Tracker
    seen_version: int = 0
    generation: int = 0
    writes: int = 0
    index_type: str | None = None
    index_rows: int = 0  # rows when the index was last built or optimized (sizes the search knobs)
    maintenance: asyncio.Task[None] | None = None
    fts_ready: bool = False  # the BM25 index on `document` exists (hybrid search)

    @property
    def lock(self) -> asyncio.Lock:
        """The process-wide writer lock of this collection."""
        return self.tracker.lock

    def wrote(self) -> None:
        """Record a commit made through this handle (it already sees it; other stores' do not)."""
        self.tracker.version += 1
        self.seen_version = self.tracker.version


@dataclass(slots=True)
class _Tracker:
    """Process-wide facts about one collection, shared by every store opened on its database."""

    # One writer per collection per *process*, whichever store object writes:
    # LanceDB duplicates a new key written by two merge_inserts at once.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    # Bumped by every write and drop, so other stores' handles know to refresh.
    version: int = 0
    generation: int = 0


_TRACKERS: dict[tuple[str, str], _Tracker] = {}


def _matches_everything(node: FilterNode) -> bool | None:
    """True when a filter is a tautology by its structure, False for a contradiction, None otherwise."""
    if isinstance(node, And):
        parts = [_matches_everything(c) for c in node.children]
        if any(p is False for p in parts):
            return False
        return True if all(p is True for p in parts) else None
    if isinstance(node, Or):
        parts = [_matches_everything(c) for c in node.children]
        if any(p is True for p in parts):
            return True
        return False if all(p is False for p in parts) else None
    if isinstance(node, Not):
        inner = _matches_everything(node.child)
        return None if inner is None else not inner
    if isinstance(node, Condition) and node.op in ("in", "nin") and not node.value:
        return node.op == "nin"
    return None


def _contains_raw(node: FilterNode | None) -> bool:
    if node is None:
        return False
    if isinstance(node, Raw):
        return True
    if isinstance(node, And | Or):
        return any(_contains_raw(child) for child in node.children)
    if isinstance(node, Not):
        return _contains_raw(node.child)
    return False


def _check_name(name: str) -> str:
    # "." and ".." match the character set but name directories, not tables.
    if not isinstance(name, str) or not _NAME.match(name) or not name.strip("."):
        raise InvalidCollectionNameError(f"Invalid collection name {name!r}.", collection=str(name))
    return name


class VectorStore:
    """A LanceDB database used as retrieval memory. Call it with a collection name for a builder.

    Create one with `create_vector_store`. One store keeps one cached table
    handle per collection and serializes writes to each collection, so share
    the store across your application rather than creating one per request.
    """

    def __init__(
        self,
        *,
        uri: str,
        encoder: Encoder | None,
        metric: Metric,
        read_consistency_interval: timedelta | None,
        storage_options: Mapping[str, str] | None,
        connect_options: Mapping[str, Any],
        auto_optimize: AutoOptimize | None,
        memory_cache: MemoryCache | None = None,
        max_document_chars: int | None = None,
    ) -> None:
        self.uri = uri
        self.max_document_chars = max_document_chars
        self._memory = MemoryIndex(memory_cache)
        self.encoder = encoder
        self.metric: Metric = metric
        self.read_consistency_interval = read_consistency_interval
        self.auto_optimize = auto_optimize
        self._storage_options = dict(storage_options or {})
        self._connect_options = dict(connect_options)
        self._conn: Any = None
        self._collections: dict[str, _Collection] = {}
        self._open_lock: asyncio.Lock | None = None
        # Trackers are keyed by database; each memory:// store is its own database.
        self._db_key = f"memory://{id(self)}" if uri.startswith("memory://") else uri

    def _tracker(self, name: str) -> _Tracker:
        return _TRACKERS.setdefault((self._db_key, name), _Tracker())

    def __call__(self, collection: str) -> QueryBuilder:
        """A fresh query builder for ``collection`` (no I/O until a terminal runs)."""
        return QueryBuilder(self, QuerySpec(collection=_check_name(collection)))

    @property
    def storage_options(self) -> dict[str, str]:
        """The object-store options the store was opened with (a copy)."""
        return dict(self._storage_options)

    def __repr__(self) -> str:
        return f"<VectorStore uri={self.uri!r} metric={self.metric!r} encoder={self.encoder!r}>"

    # -- connection and handles (background loop only) ------------------------------------
    async def _connection(self) -> Any:
        if self._conn is None:
            lancedb = import_lancedb()
            try:
                self._conn = await lancedb.connect_async(
                    self.uri,
                    read_consistency_interval=self.read_consistency_interval,
                    storage_options=self._storage_options or None,
                    **self._connect_options,
                )
            except Exception as exc:
                raise ConnectionFailedError(
                    f"Could not open the LanceDB database at {self.uri!r}: {exc}",
                    hint="Check the URI, credentials (storage_options) and that the directory is writable.",
                    uri=self.uri,
                ) from exc
        return self._conn

    def _lock(self) -> asyncio.Lock:
        if self._open_lock is None:
            self._open_lock = asyncio.Lock()
        return self._open_lock

    async def _collection(self, name: str, *, create_dimension: int | None = None) -> _Collection:
        cached = self._collections.get(name)
        if cached is not None and cached.generation == cached.tracker.generation:
            return await self._fresh(cached)
        async with self._lock():
            cached = self._collections.get(name)
            if cached is not None and cached.generation == cached.tracker.generation:
                return cached
            # Dropped (and maybe recreated) through another store: this handle is dead.
            self._collections.pop(name, None)
            conn = await self._connection()
            try:
                with translate_errors("open", name):
                    table = await conn.open_table(name)
            except CollectionNotFoundError as missing:
                if name in await self._list():
                    # integrity: listed but not openable is damage (or a create in flight), never "new".
                    table = await reopen_or_corrupt(conn, name, missing)
                elif create_dimension is None:
                    raise
                else:
                    # integrity: one creator per collection, in this process and on this disk.
                    async with self._tracker(name).lock, collection_lock(self.uri, name):
                        table = await self._create_table(conn, name, create_dimension, self.metric)
            coll = await self._wrap(name, table)
            self._collections[name] = coll
            return coll

    async def _fresh(self, coll: _Collection) -> _Collection:
        # Another store in this process committed since this handle last looked;
        # a handle pins its snapshot, so move it to the latest version.
        if coll.seen_version != coll.tracker.version:
            coll.seen_version = coll.tracker.version
            with translate_errors("open", coll.name):
                await coll.table.checkout_latest()
        return coll

    def _encoder_name_for(self, dimension: int) -> str | None:
        # Precomputed vectors of another size were not made by this store's encoder.
        if self.encoder is None or self.encoder.dimension != dimension:
            return None
        return self.encoder.name

    async def _create_table(self, conn: Any, name: str, dimension: int, metric: Metric) -> Any:
        meta = {
            "format": _FORMAT,
            "dimension": dimension,
            "metric": metric,
            "encoder": self._encoder_name_for(dimension),
            "created_at": datetime.now(UTC).isoformat(),
        }
        # integrity: another process may have created it since we looked.
        return await create_or_open(conn, name, collection_schema(dimension, meta))

    async def _wrap(self, name: str, table: Any) -> _Collection:
        with translate_errors("open", name):
            schema = await table.schema()
            indices = await table.list_indices()
        names = set(schema.names)
        missing = [c for c in _COLUMNS if c not in names]
        if missing:
            raise InvalidVectorStoreConfigError(
                f"Table {name!r} is not a turnkit collection (missing columns {missing}).",
                hint="Use a new collection name, or create the collection with turnkit.",
                collection=name,
            )
        raw_meta = (schema.metadata or {}).get(b"turnkit")
        meta: dict[str, Any] = json.loads(raw_meta) if raw_meta else {}
        dimension = int(meta.get("dimension") or schema.field("vector").type.list_size)
        metric = normalize_metric(meta.get("metric") or self.metric)
        coll = _Collection(
            name=name,
            table=table,
            dimension=dimension,
            metric=metric,
            encoder=meta.get("encoder"),
            tracker=self._tracker(name),
        )
        coll.seen_version = coll.tracker.version
        coll.generation = coll.tracker.generation
        await _set_index(coll, indices)
        return coll

    # -- collection management -------------------------------------------------------------
    async def _list(self) -> list[str]:
        conn = await self._connection()
        names: list[str] = []
        token = None
        with translate_errors("list_collections"):
            while True:
                page = await conn.list_tables(page_token=token)
                names.extend(page.tables)
                token = page.page_token
                if not token:
                    break
        return sorted(names)

    async def list_collections(self) -> list[str]:
        """Names of every collection in the store, sorted."""
        return await on_loop(self._list())

    def list_collections_sync(self) -> list[str]:
        """Sync form of `list_collections`."""
        return run_sync(self.list_collections())

    async def has_collection(self, name: str) -> bool:
        """Whether ``name`` exists."""
        _check_name(name)
        return name in await self.list_collections()

    def has_collection_sync(self, name: str) -> bool:
        """Sync form of `has_collection`."""
        return run_sync(self.has_collection(name))

    async def _create(self, name: str, dimension: int | None, metric: str | None, exist_ok: bool) -> None:
        dim = dimension or (self.encoder.dimension if self.encoder is not None else None)
        if dim is None or isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise InvalidQueryError(
                "create_collection() needs a positive dimension when the store has no encoder.",
                collection=name,
            )
        chosen = normalize_metric(metric) if metric else self.metric
        async with self._lock():
            conn = await self._connection()
            if name in await self._list():
                if not exist_ok:
                    raise CollectionExistsError(f"Collection {name!r} already exists.", collection=name)
                return
            meta = {
                "format": _FORMAT,
                "dimension": dim,
                "metric": chosen,
                "encoder": self._encoder_name_for(dim),
                "created_at": datetime.now(UTC).isoformat(),
            }
            try:
                with translate_errors("create_collection", name):
                    table = await conn.create_table(name, schema=collection_schema(dim, meta))
            except CollectionExistsError:  # integrity: created by another writer meanwhile
                if not exist_ok:
                    raise
                return
            self._collections[name] = await self._wrap(name, table)

    async def create_collection(
        self, name: str, *, dimension: int | None = None, metric: str | None = None, exist_ok: bool = False
    ) -> CollectionInfo:
        """Create an empty collection (upserting into a new name also creates it).

        Args:
            name: Letters, digits, ``_``, ``-`` and ``.``.
            dimension: Vector length; defaults to the encoder's.
            metric: ``cosine`` (default: the store's), ``l2`` or ``dot``; fixed for the collection's life.
            exist_ok: Return the existing collection instead of raising `CollectionExistsError`.
        """
        _check_name(name)
        await on_loop(self._create(name, dimension, metric, exist_ok))
        return await self.collection_info(name)

    def create_collection_sync(
        self, name: str, *, dimension: int | None = None, metric: str | None = None, exist_ok: bool = False
    ) -> CollectionInfo:
        """Sync form of `create_collection`."""
        return run_sync(self.create_collection(name, dimension=dimension, metric=metric, exist_ok=exist_ok))

    async def _drop(self, name: str, missing_ok: bool) -> bool:
        async with self._lock():
            conn = await self._connection()
            coll = self._collections.pop(name, None)
            self._memory.forget(name)
            tracker = self._tracker(name)
            tracker.generation += 1
            tracker.version += 1
            if coll is not None and coll.maintenance is not None:
                coll.maintenance.cancel()
            if name not in await self._list():
                if missing_ok:
                    return False
                raise CollectionNotFoundError(f"Collection {name!r} does not exist.", collection=name)
            with translate_errors("drop_collection", name):
                await conn.drop_table(name)
            return True

    async def drop_collection(self, name: str, *, missing_ok: bool = False) -> bool:
        """Delete a collection and all its records; returns whether it existed."""
        _check_name(name)
        return await on_loop(self._drop(name, missing_ok))

    def drop_collection_sync(self, name: str, *, missing_ok: bool = False) -> bool:
        """Sync form of `drop_collection`."""
        return run_sync(self.drop_collection(name, missing_ok=missing_ok))

    async def _info(self, name: str) -> CollectionInfo:
        coll = await self._collection(name)
        with translate_errors("collection_info", name):
            rows = await coll.table.count_rows()
            version = await coll.table.version()
            indices = await coll.table.list_indices()
            stats = await coll.table.stats()
            unindexed = 0
            for index in indices:
                istats = await coll.table.index_stats(index.name)
                if istats is not None:
                    unindexed = max(unindexed, int(istats.num_unindexed_rows))
        await _set_index(coll, indices)
        return CollectionInfo(
            name=name,
            dimension=coll.dimension,
            metric=coll.metric,
            encoder=coll.encoder,
            rows=rows,
            version=version,
            indexes=tuple(f"{i.name}:{i.index_type}" for i in indices),
            unindexed_rows=unindexed,
            fragments=int(_fragment_count(stats)),
        )

    async def collection_info(self, name: str) -> CollectionInfo:
        """Rows, dimension, metric, encoder, version, indexes and fragments of a collection."""
        _check_name(name)
        return await on_loop(self._info(name))

    def collection_info_sync(self, name: str) -> CollectionInfo:
        """Sync form of `collection_info`."""
        return run_sync(self.collection_info(name))

    async def wait_for_maintenance(self) -> None:
        """Wait until background optimizations started by `AutoOptimize` have finished."""

        async def _wait() -> None:
            tasks = [c.maintenance for c in self._collections.values() if c.maintenance is not None]
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

        await on_loop(_wait())

    def wait_for_maintenance_sync(self) -> None:
        """Sync form of `wait_for_maintenance`."""
        run_sync(self.wait_for_maintenance())

    def cache_stats(self) -> MemoryCacheStats:
        """Which collections this store holds in memory for exact searches, and their size."""
        return self._memory.stats()

    # -- encoding ------------------------------------------------------------------------
    def _require_encoder(self, collection: str) -> Encoder:
        if self.encoder is None:
            raise EncoderRequiredError(
                f"Collection {collection!r}: text must be encoded but this store has no encoder.",
                collection=collection,
            )
        return self.encoder

    def _check_encoder(self, coll: _Collection | None, encoder: Encoder) -> None:
        if coll is not None and coll.encoder and coll.encoder != encoder.name:
            raise EncoderMismatchError(
                f"Collection {coll.name!r} was built with encoder {coll.encoder!r}; "
                f"this store encodes with {encoder.name!r}.",
                collection=coll.name,
                expected=coll.encoder,
                actual=encoder.name,
            )

    async def _encode_query(self, collection: str, text: str) -> np.ndarray[Any, Any]:
        encoder = self._require_encoder(collection)
        coll = await on_loop(self._collection(collection))
        self._check_encoder(coll, encoder)
        vectors = await _encode_for(collection, encoder, [text], "query")
        row: np.ndarray[Any, Any] = vectors[0]
        return row

    async def _existing(self, name: str) -> _Collection | None:
        try:
            return await self._collection(name)
        except CollectionNotFoundError:
            return None

    # -- writes --------------------------------------------------------------------------
    async def _upsert(
        self,
        name: str,
        records: Iterable[Mapping[str, Any]],
        *,
        replace: QuerySpec | None = None,
        guard: FilterNode | None = None,
    ) -> UpsertResult:
        batch = prepare_records(records, max_document_chars=self.max_document_chars)
        if guard is not None:  # guard: every record must be inside it
            check_inside_guard(batch, guard)
        if replace is not None:
            self._check_consent("replace", replace, all_records=False)
        if not len(batch):
            if replace is None:
                return UpsertResult(0, 0)
            return UpsertResult(0, 0, await self._delete(replace, all_records=True))
        coll = await on_loop(self._existing(name))
        if batch.to_encode:
            encoder = self._require_encoder(name)
            self._check_encoder(coll, encoder)
            texts = [batch.documents[i] or "" for i in batch.to_encode]
            vectors = await _encode_for(name, encoder, texts, "document", first=batch.to_encode[0])
            for row, index in enumerate(batch.to_encode):
                batch.vectors[index] = vectors[row]
        if coll is not None:
            array = batch.vector_array(coll.dimension, source="the collection's")
        else:
            array = batch.vector_array(None, source="the first record's")
        where = None if replace is None or replace.filter is None else to_sql(replace.filter)
        guard_where = None if guard is None else to_sql(guard)
        return await on_loop(self._write(name, batch, array, replace_where=where, guard_where=guard_where))

    async def _write(
        self,
        name: str,
        batch: Any,
        vectors: np.ndarray[Any, Any],
        *,
        replace_where: str | None = None,
        guard_where: str | None = None,
    ) -> UpsertResult:
        # The table's own schema reads the JSON column back as large_binary;
        # writing with it stores bytes that JSON filters then reject. Built
        # before the collection is opened or created, so a failure here leaves
        # no trace.
        schema = collection_schema(vectors.shape[1], {})
        try:
            data = batch.to_arrow(vectors, schema, datetime.now(UTC))
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise InvalidVectorRecordError(
                f"The batch for {name!r} could not be converted for LanceDB: {exc}", collection=name
            ) from exc
        existing = await self._existing(name)
        metric = existing.metric if existing is not None else self.metric
        if metric == "cosine":
            zero = ~vectors.any(axis=1)
            if zero.any():
                index = int(np.argmax(zero))
                raise InvalidVectorRecordError(
                    f"Record {index} (id {batch.ids[index]!r}): an all-zero vector has no direction, "
                    "so a cosine collection could never return it.",
                    hint="Check the encoder's output, or use metric='l2' for vectors that can be zero.",
                    collection=name,
                    index=index,
                    record_id=batch.ids[index],
                )
        # Opened once above; only a collection that does not exist yet is created here.
        coll = existing or await self._collection(name, create_dimension=vectors.shape[1])
        if coll.dimension != vectors.shape[1]:
            raise DimensionMismatchError(
                f"Collection {name!r} has dimension {coll.dimension}, the records have {vectors.shape[1]}.",
                collection=name,
                expected=coll.dimension,
            )
        hidden = 0
        async with coll.lock, collection_lock(self.uri, name) as across:
            # LanceDB's merge_insert of the same *new* key from two writers at
            # once inserts it twice (lancedb#2463); one writer per collection
            # in this process (and, on a local disk, across processes) avoids
            # that. The match runs against the handle's snapshot, so it must
            # include every earlier commit.
            await self._fresh(coll)
            if across:  # integrity: other processes' commits too
                with translate_errors("upsert", name):
                    await coll.table.checkout_latest()
            if guard_where is not None:  # guard: rows outside it are never touched
                data, hidden = await drop_outside_guard(coll.table, name, data, guard_where)
            merge = coll.table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
            if replace_where is not None:
                # Same commit: the filter's records that this batch does not hold go.
                merge = merge.when_not_matched_by_source_delete(replace_where)
            with translate_errors("upsert", name, raw_filter=replace_where is not None):
                result = await merge.execute(data) if data.num_rows else None
            if result is not None and not across and heals_after_write(self.uri):
                # integrity: a racing writer may have inserted these ids too; the later commit cleans up.
                await heal_after_write(coll.table, name, data["id"].to_pylist())
        if result is None:
            return UpsertResult(hidden, 0)
        self._after_write(coll)
        return UpsertResult(
            int(result.num_inserted_rows) + hidden,
            int(result.num_updated_rows),
            int(getattr(result, "num_deleted_rows", 0) or 0),
        )

    def _check_consent(self, terminal: str, spec: QuerySpec, *, all_records: bool) -> None:
        if not all_records and (spec.filter is None or _matches_everything(spec.filter) is True):
            what = "has no filter" if spec.filter is None else "has a filter that matches every record"
            raise UnsafeDeleteError(
                f"{terminal}() on {spec.collection!r} {what} and would remove every record.",
                collection=spec.collection,
            )

    async def _delete(self, spec: QuerySpec, *, all_records: bool) -> int:
        self._check_consent("delete", spec, all_records=all_records)
        coll = await self._collection(spec.collection)
        sql = "true" if spec.filter is None else to_sql(spec.filter)
        async with coll.lock, collection_lock(self.uri, coll.name):
            await self._fresh(coll)
            with translate_errors("delete", spec.collection, raw_filter=_contains_raw(spec.filter)):
                result = await coll.table.delete(sql)
        self._after_write(coll)
        return int(getattr(result, "num_deleted_rows", 0) or 0)

    # -- maintenance -----------------------------------------------------------------------
    def _after_write(self, coll: _Collection) -> None:
        coll.wrote()
        coll.writes += 1
        policy = self.auto_optimize
        if policy is None or (coll.maintenance is not None and not coll.maintenance.done()):
            return
        if coll.writes >= policy.every_writes:
            task = self._background_optimize(coll)
        elif policy.unindexed_rows is not None and coll.index_type is not None:
            task = self._optimize_if_unindexed(coll, policy.unindexed_rows)
        else:
            return
        # integrity: one maintenance task per collection per process, whichever store wrote.
        coll.maintenance = claim_maintenance((self._db_key, coll.name), task)

    async def _optimize_if_unindexed(self, coll: _Collection, threshold: int) -> None:
        try:
            indices = await coll.table.list_indices()
            for index in indices:
                stats = await coll.table.index_stats(index.name)
                if stats is not None and stats.num_unindexed_rows >= threshold:
                    await self._run_optimize(coll)
                    return
        except Exception:  # maintenance must never break the write path
            log.exception("turnkit: checking collection %r for maintenance failed", coll.name)

    async def _background_optimize(self, coll: _Collection) -> None:
        try:
            await self._run_optimize(coll)
        except Exception:
            log.exception("turnkit: background optimize of collection %r failed", coll.name)

    async def _run_optimize(self, coll: _Collection, *, repair: bool = False) -> int:
        async with coll.lock:
            removed = 0
            if repair:  # integrity: row ids stay put only while no other process commits
                async with collection_lock(self.uri, coll.name):
                    with translate_errors("optimize", coll.name):
                        await coll.table.checkout_latest()
                    removed = await remove_duplicates(coll.table, coll.name)
            # integrity: compact the latest version; a commit from another process meanwhile
            # is a conflict to retry, not a failure (compaction can take minutes: no file lock).
            with translate_errors("optimize", coll.name):
                await coll.table.checkout_latest()
                await retry_conflicts(coll.table.optimize, coll.table.checkout_latest)
            coll.wrote()
            coll.writes = 0
            await _set_index(coll, await coll.table.list_indices())
        return removed

    async def _optimize(self, name: str) -> None:
        await self._run_optimize(await self._collection(name), repair=True)

    async def _repair(self, name: str) -> int:
        return await self._run_optimize(await self._collection(name), repair=True)

    async def repair(self, name: str) -> int:
        """Remove duplicate ids from a collection (keeping each id's newest ``updated_at``) and compact it.

        Writers on object storage can leave an id twice (see docs/store.md,
        "Deploying with many processes and tenants"); reads already hide the
        older copies. `optimize` does the same.

        Returns:
            How many older copies were deleted.
        """
        _check_name(name)
        return await on_loop(self._repair(name))

    def repair_sync(self, name: str) -> int:
        """Sync form of `repair`."""
        return run_sync(self.repair(name))

    async def _create_index(self, name: str, index_type: str, params: Mapping[str, Any]) -> str:
        from lancedb.index import HnswSq, IvfFlat, IvfPq  # noqa: TID251 - inside the battery, lazily

        coll = await self._collection(name)
        if index_type == "auto":
            index_type, auto_params = auto_index(await coll.table.count_rows())
            params = {**auto_params, **params}
        configs = {"ivf_flat": IvfFlat, "ivf_pq": IvfPq, "hnsw_sq": HnswSq}
        if index_type not in configs:
            raise InvalidQueryError(
                f"Unknown index type {index_type!r}; use auto, ivf_flat, ivf_pq or hnsw_sq.", collection=name
            )
        try:
            config = configs[index_type](distance_type=coll.metric, **params)
        except TypeError as exc:
            raise InvalidQueryError(f"Bad parameters for {index_type}: {exc}", collection=name) from exc
        async with coll.lock:
            with translate_errors("create_index", name):
                await coll.table.create_index("vector", config=config, replace=True)
                coll.wrote()
                await _set_index(coll, await coll.table.list_indices())
        return index_type

    # -- reads ---------------------------------------------------------------------------
    async def _search(self, spec: QuerySpec, vector: np.ndarray[Any, Any] | None) -> list[Any]:
        # Diversity and hybrid fusion wrap this same search (see ranking/_mmr.py, store/_hybrid.py).
        if spec.mmr is not None:
            from turnkit.batteries.vector.ranking._mmr import mmr_search

            return await mmr_search(self, spec, vector)
        coll = await self._collection(spec.collection)
        if spec.hybrid is not None:
            from turnkit.batteries.vector.store._hybrid import hybrid_search

            return await hybrid_search(self, coll, spec, vector)
        select = spec.select or ("*",)
        columns = _columns(select)
        raw = _contains_raw(spec.filter)
        where = None if spec.filter is None else to_sql(spec.filter)
        if isinstance(spec.near, NearId):
            vector = await self._vector_of(coll, spec.near.id)
        elif isinstance(spec.near, NearVector):
            vector = np.asarray(spec.near.vector, dtype=np.float32)
        if vector is not None:
            if len(vector) != coll.dimension:
                raise DimensionMismatchError(
                    f"The query vector has {len(vector)} dimensions; "
                    f"collection {coll.name!r} has {coll.dimension}.",
                    collection=coll.name,
                    expected=coll.dimension,
                )
            if coll.metric == "cosine" and not np.any(vector):
                # LanceDB answers [] for it; upsert refuses such vectors for the same reason.
                raise InvalidQueryError(
                    "The query vector is all zeros, which has no direction under the cosine metric.",
                    hint="Search with a non-zero vector (an encoder never returns a zero vector).",
                    collection=coll.name,
                )
            # Small collections: an exact search from memory (None: LanceDB answers).
            key = coll.seen_version if self.read_consistency_interval is None else await coll.table.version()
            cached = await self._memory.search(
                coll.name, coll.table, key, coll.dimension, coll.metric, spec, vector, columns
            )
            if cached is not None:
                return _finish(cached, spec, select)
            query = (
                coll.table.vector_search(np.asarray(vector, dtype=np.float32))
                .column("vector")
                .distance_type(coll.metric)
                .limit(spec.limit)
            )
            if spec.offset:
                query = query.offset(spec.offset)
            query = self._knobs(query, coll, spec)
            upper = math.inf
            if spec.max_distance is not None:
                upper = spec.max_distance
            if spec.min_score is not None:
                upper = min(upper, distance_bound(coll.metric, spec.min_score))
            if math.isfinite(upper):
                # distance_range's bound is exclusive and compared in float32, and a
                # score's bound loses bits going back to a distance; widen it a
                # little here, the exact thresholds are re-checked below.
                query = query.distance_range(upper_bound=upper + 1e-5 * (1.0 + abs(upper)))
            if where is not None:
                query = query.where(where)
                if not spec.prefilter:
                    query = query.postfilter()
            query = query.select([*columns, "_distance"])
        else:
            query = coll.table.query()
            if where is not None:
                query = query.where(where)
            query = query.select(columns).limit(spec.limit)
            if spec.offset:
                query = query.offset(spec.offset)
        with translate_errors("search", coll.name, raw_filter=raw):
            result = await query.to_arrow()
        return _finish(matches_from_arrow(result, coll.metric), spec, select)

    async def _search_now_async(self, spec: QuerySpec) -> list[Any] | None:
        """`_search_now` for async callers: inline when small, else on a worker thread so queries overlap."""
        found = self._search_now(spec, max_work=INLINE_WORK)
        if found is None and self._memory.work(spec.collection) > INLINE_WORK:
            found = await asyncio.to_thread(self._search_now, spec)
        return found

    def _search_now(self, spec: QuerySpec, max_work: int | None = None) -> list[Any] | None:
        """A search answered from memory in the caller's thread, or ``None`` to take the loop path.

        Only when nothing needs the loop: a vector query on an open, current
        collection whose copy is loaded (readers of other processes' writes
        must ask LanceDB for the version, which is async).
        """
        near = spec.near
        if not isinstance(near, NearVector) or spec.mmr is not None or spec.hybrid is not None:
            return None
        coll = self._collections.get(spec.collection)
        if (
            coll is None
            or self.read_consistency_interval is not None
            or coll.generation != coll.tracker.generation
            or coll.seen_version != coll.tracker.version
            or len(near.vector) != coll.dimension
            or (coll.metric == "cosine" and not near.vector.any())  # `_search` explains it
        ):
            return None
        select = spec.select or ("*",)
        found = self._memory.search_now(
            coll.name, coll.table, coll.seen_version, spec, near.vector, _columns(select), max_work
        )
        return None if found is None else _finish(found, spec, select)

    def _knobs(self, query: Any, coll: _Collection, spec: QuerySpec) -> Any:
        # Defaults that hold recall@10 as the collection grows (see _index_policy.py, docs/store.md).
        nprobes, refine, ef = search_knobs(
            coll.index_type,
            coll.index_rows,
            spec.limit + spec.offset,
            spec.nprobes,
            spec.refine_factor,
            spec.ef,
        )
        if nprobes is not None:
            query = query.nprobes(nprobes)
        if refine is not None:
            query = query.refine_factor(refine)
        if ef is not None:
            query = query.ef(ef)
        return query

    async def _vector_of(self, coll: _Collection, record_id: str) -> np.ndarray[Any, Any]:
        sql = to_sql(condition("id", "eq", record_id))
        with translate_errors("search", coll.name):
            rows = await coll.table.query().where(sql).select(["vector"]).limit(1).to_list()
        if not rows:
            raise RecordNotFoundError(
                f"near_id(): no record {record_id!r} in collection {coll.name!r}.",
                collection=coll.name,
                record_id=record_id,
            )
        return np.asarray(rows[0]["vector"], dtype=np.float32)

    async def _count(self, spec: QuerySpec) -> int:
        coll = await self._collection(spec.collection)
        where = None if spec.filter is None else to_sql(spec.filter)
        with translate_errors("search", coll.name, raw_filter=_contains_raw(spec.filter)):
            return int(await coll.table.count_rows(where))

    async def _get(self, spec: QuerySpec, ids: list[str]) -> list[Any]:
        if not ids:
            return []
        coll = await self._collection(spec.collection)
        select = spec.select or ("id", "document", "metadata", "created_at", "updated_at")
        unique = list(dict.fromkeys(ids))
        by_id: dict[str, Any] = {}
        # An IN list is capped (MAX_IN_VALUES); long id lists are read in chunks.
        for start in range(0, len(unique), MAX_IN_VALUES):
            chunk = unique[start : start + MAX_IN_VALUES]
            node: FilterNode = condition("id", "in", chunk)
            if spec.filter is not None:
                node = And((node, spec.filter))
            # integrity: no limit, so an id held twice cannot crowd another out.
            query = coll.table.query().where(to_sql(node)).select(_columns(select))
            with translate_errors("search", coll.name, raw_filter=_contains_raw(spec.filter)):
                rows = await query.to_list()
            for match in dedupe_matches([match_from_row(row, None) for row in rows]):
                by_id[match.id] = match
        found = [by_id[i] for i in unique if i in by_id]
        return _trim_metadata(found, select)


def _vector_index_type(indices: Iterable[Any]) -> str | None:
    for index in indices:
        if "vector" in list(getattr(index, "columns", []) or []):
            return str(index.index_type)
    return None


async def _set_index(coll: _Collection, indices: Iterable[Any]) -> None:
    coll.index_type = _vector_index_type(indices)
    coll.index_rows = int(await coll.table.count_rows()) if coll.index_type is not None else 0


def _columns(select: Iterable[str]) -> list[str]:
    wanted: list[str] = ["id"]
    for name in select:
        if name == "*":
            return list(_COLUMNS)
        if name.startswith("metadata."):
            name = "metadata"
        if name in _COLUMNS and name not in wanted:
            wanted.append(name)
    return wanted


def _finish(matches: list[Any], spec: QuerySpec, select: Iterable[str]) -> list[Any]:
    # integrity: one match per id, even on a table that holds duplicates from older writes.
    matches = dedupe_matches(matches)
    # The thresholds are exact here whichever path found the matches.
    if spec.min_score is not None:
        matches = [m for m in matches if m.score is not None and m.score >= spec.min_score]
    if spec.max_distance is not None:
        matches = [m for m in matches if m.distance is not None and m.distance <= spec.max_distance]
    return _trim_metadata(matches, select)


def _trim_metadata(matches: list[Any], select: Iterable[str]) -> list[Any]:
    paths = [name.split(".")[1:] for name in select if name.startswith("metadata.")]
    if not paths or "metadata" in select or "*" in select:
        return matches
    from dataclasses import replace

    out = []
    for match in matches:
        source = match.metadata or {}
        trimmed: dict[str, Any] = {}
        for path in paths:
            node: Any = source
            for key in path:
                if not isinstance(node, dict) or key not in node:
                    break
                node = node[key]
            else:
                target = trimmed
                for key in path[:-1]:
                    target = target.setdefault(key, {})
                target[path[-1]] = node
        out.append(replace(match, metadata=trimmed))
    return out


def create_vector_store(
    uri: str | os.PathLike[str] = ".turnkit/lancedb",
    *,
    encoder: Encoder | None = None,
    metric: str = "cosine",
    read_consistency_interval: timedelta | None = None,
    storage_options: Mapping[str, str] | None = None,
    auto_optimize: AutoOptimize | None = AutoOptimize(),
    memory_cache: MemoryCache | None = MemoryCache(),
    max_document_chars: int | None = DEFAULT_MAX_DOCUMENT_CHARS,
    **connect_options: Any,
) -> VectorStore:
    """Create a vector store over a LanceDB database.

    Args:
        uri: A local directory (the embedded default), ``memory://`` (tests), an
            object-store URI (``s3://…``, ``gs://…``, ``az://…``) or LanceDB
            Cloud (``db://…``). Nothing else changes between them.
        encoder: Encodes text for ``near_text`` and for records without a
            vector. Without one, text raises `EncoderRequiredError`.
        metric: ``cosine`` (default), ``l2`` (squared Euclidean) or ``dot`` for new collections.
        read_consistency_interval: How stale a reader may be with respect to
            writes from *other processes*; ``timedelta(0)`` checks on every read.
            ``None`` (default) suits a single writer process.
        storage_options: Passed to LanceDB (object-store credentials, region…).
        auto_optimize: Background compaction policy; ``None`` disables it.
        memory_cache: Which collections are held in memory for exact searches
            (`MemoryCache`); ``None`` always searches through LanceDB.
        max_document_chars: The longest ``document`` an upsert accepts (default
            1,000,000 characters); a longer one is refused with the record named
            and nothing is written. ``None`` lifts the limit.
        **connect_options: Passed to ``lancedb.connect_async`` (``api_key``,
            ``region``, ``host_override``, ``session``…). For ``db://`` URIs the
            API key defaults to the ``LANCEDB_API_KEY`` environment variable.

    Returns:
        A `VectorStore`; call it with a collection name to get a builder.
    """
    if isinstance(uri, os.PathLike):
        uri = os.fspath(uri)
    if not isinstance(uri, str) or not uri:
        raise InvalidVectorStoreConfigError("uri must be a non-empty string.", hint="Try uri='memory://'.")
    if "://" not in uri:
        # LanceDB reads a bare relative name as a LanceDB Cloud database; a
        # path without a scheme is always a local directory here.
        uri = os.path.abspath(os.path.expanduser(uri))
    try:
        canonical = normalize_metric(metric)
    except ValueError as exc:
        raise InvalidVectorStoreConfigError(str(exc)) from None
    if encoder is not None and not (
        isinstance(getattr(encoder, "name", None), str)
        and isinstance(getattr(encoder, "dimension", None), int)
        and callable(getattr(encoder, "encode", None))
    ):
        raise InvalidVectorStoreConfigError(
            f"encoder {encoder!r} is not an Encoder (needs .name, .dimension and .encode(texts, kind=...)).",
            hint="Wrap a plain function with turnkit.batteries.vector.FunctionEncoder.",
        )
    if read_consistency_interval is not None and not isinstance(read_consistency_interval, timedelta):
        raise InvalidVectorStoreConfigError("read_consistency_interval must be a datetime.timedelta or None.")
    if auto_optimize is not None and not isinstance(auto_optimize, AutoOptimize):
        raise InvalidVectorStoreConfigError("auto_optimize must be an AutoOptimize or None.")
    if memory_cache is not None and not isinstance(memory_cache, MemoryCache):
        raise InvalidVectorStoreConfigError("memory_cache must be a MemoryCache or None.")
    if max_document_chars is not None and (
        isinstance(max_document_chars, bool)
        or not isinstance(max_document_chars, int)
        or max_document_chars < 1
    ):
        raise InvalidVectorStoreConfigError("max_document_chars must be a positive integer or None.")
    if uri.startswith("db://") and not connect_options.get("api_key") and os.environ.get("LANCEDB_API_KEY"):
        # The sync client reads it; LanceDB's async connect does not.
        connect_options["api_key"] = os.environ["LANCEDB_API_KEY"]
    if "://" not in uri:
        from pathlib import Path

        uri = str(Path(uri).expanduser())
    return VectorStore(
        uri=uri,
        encoder=encoder,
        metric=canonical,
        read_consistency_interval=read_consistency_interval,
        storage_options=storage_options,
        connect_options=connect_options,
        auto_optimize=auto_optimize,
        memory_cache=memory_cache,
        max_document_chars=max_document_chars,
    )


def _fragment_count(stats: Any) -> int:
    # The async API returns a plain dict, the sync one an object.
    if isinstance(stats, dict):
        return int(stats["fragment_stats"]["num_fragments"])
    return int(stats.fragment_stats.num_fragments)


async def _encode_for(
    collection: str, encoder: Encoder, texts: list[str], kind: EncodeKind, *, first: int | None = None
) -> np.ndarray[Any, Any]:
    """`encode_texts`, with the collection (and first record) added to a failure's context."""
    try:
        return await encode_texts(encoder, texts, kind)
    except EncoderFailedError as exc:
        exc.add_context(collection=collection, operation="upsert" if kind == "document" else "search")
        if first is not None:
            exc.add_context(index=first)
        raise
