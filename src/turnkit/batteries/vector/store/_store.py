"""The LanceDB-backed vector store: connection, collections, writes and searches.

Everything that touches LanceDB runs on turnkit's background loop (see
``turnkit._aio``): table handles, per-collection write locks and maintenance
tasks live there, so async callers on any loop and sync callers on any thread
share one handle and one lock per collection.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import numpy as np

from turnkit._aio import on_loop, run_sync, sync_form
from turnkit.batteries.vector._errors import (
    CollectionNotFoundError,
    EncoderRequiredError,
    VectorStoreRuntimeError,
    VectorStoreUsageError,
)
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.encoders._base import Encoder
from turnkit.batteries.vector.encoders._registry import build_recorded_encoder, encoder_for_recorded
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._declared import FieldType
from turnkit.batteries.vector.query._builder import QueryBuilder
from turnkit.batteries.vector.query._spec import NearText, QuerySpec
from turnkit.batteries.vector.store import (
    _catalog,
    _freshness,
    _maintenance,
    _reads,
    _rows,
    _updates,
    _writes,
)
from turnkit.batteries.vector.store._auto_fields import to_latest
from turnkit.batteries.vector.store._common import _COLUMNS, _FORMAT, CollectionInfo, UpsertResult
from turnkit.batteries.vector.store._fields import (
    auto_fields,
    declared_fields,
    ensure_field_indexes,
    normalize_fields,
)
from turnkit.batteries.vector.store._filter_keys import KeySet, check_filter_keys
from turnkit.batteries.vector.store._guarded import KEY
from turnkit.batteries.vector.store._handles import (
    _TRACKERS,
    AutoOptimize,
    _check_name,
    _Collection,
    _Tracker,
)
from turnkit.batteries.vector.store._integrity import create_or_open, reopen_or_corrupt
from turnkit.batteries.vector.store._lancedb import import_lancedb, translate_errors
from turnkit.batteries.vector.store._locks import collection_lock, heals_after_write
from turnkit.batteries.vector.store._maintenance import _set_index
from turnkit.batteries.vector.store._memory_index import MemoryCache, MemoryCacheStats, MemoryIndex
from turnkit.batteries.vector.store._recall import RecallCurve
from turnkit.batteries.vector.store._records import collection_schema
from turnkit.batteries.vector.store._scores import Metric, normalize_metric
from turnkit.batteries.vector.store._writes import _encode_for

__all__ = ["AutoOptimize", "CollectionInfo", "UpsertResult", "VectorStore"]

T = TypeVar("T")


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
        # No defaults here: `create_vector_store`, the one caller, is where they live.
        memory_cache: MemoryCache | None,
        max_document_chars: int | None,
        fields: Mapping[str, FieldType] | None,
        auto_fields: bool,
        recall_target: float,
        recall_from_queries: bool,
    ) -> None:
        self.uri = uri
        self.recall_target = recall_target
        self.recall_from_queries = recall_from_queries
        self.fields: dict[str, FieldType] = dict(fields or {})
        self.auto_fields = auto_fields
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
        self._recorded_encoders: dict[tuple[str, int], Encoder] = {}  # built from what collections recorded
        self._key_sets: dict[str, KeySet] = {}  # the metadata keys each collection holds (_filter_keys.py)
        self._open_lock = asyncio.Lock()  # opens, creates and drops of collections
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
                # read_consistency_interval is turnkit's own (_freshness.py): LanceDB's moves handles
                # under the store at any read.
                self._conn = await lancedb.connect_async(
                    self.uri,
                    storage_options=self._storage_options or None,
                    **self._connect_options,
                )
            except Exception as exc:
                raise VectorStoreRuntimeError(
                    f"Could not open the LanceDB database at {self.uri!r}: {exc}",
                    code="E_VECTOR_STORE_CONNECTION_FAILED",
                    hint="Check the URI, credentials (storage_options) and that the directory is writable.",
                    uri=self.uri,
                ) from exc
        return self._conn

    async def _collection(self, name: str, *, create_dimension: int | None = None) -> _Collection:
        cached = self._collections.get(name)
        if cached is not None and cached.generation == cached.tracker.generation:
            if _freshness.check_due(self, cached):
                await _freshness.look(self, cached)
            if cached.generation == cached.tracker.generation:
                return await self._fresh(cached)
        async with self._open_lock:
            cached = self._collections.get(name)
            if cached is not None and cached.generation == cached.tracker.generation:
                return cached
            # Dropped (and maybe recreated) through another store or process: this handle is dead.
            if self._collections.pop(name, None) is not None:
                self._memory.forget(name)
            # Read before opening: a drop that ends while this opens makes the handle stale at once.
            generation = self._tracker(name).generation
            opened_at = time.monotonic()
            conn = await self._connection()
            try:
                with translate_errors("open", name):
                    table = await conn.open_table(name)
            except CollectionNotFoundError as missing:
                if name in await _catalog.list_(self):
                    # integrity: listed but not openable is damage (or a create in flight), never "new".
                    table = await reopen_or_corrupt(conn, name, missing)
                elif create_dimension is None:
                    raise
                else:
                    # integrity: one creator per collection, in this process and on this disk.
                    async with self._tracker(name).lock, collection_lock(self.uri, name):
                        table = await self._create_table(conn, name, create_dimension, self.metric)
            coll = await self._wrap(name, table, opened_at)
            coll.generation = generation
            self._collections[name] = coll
            return coll

    async def _fresh(self, coll: _Collection) -> _Collection:
        # Another store in this process committed since this handle last looked;
        # a handle pins its snapshot, so move it to the latest version.
        if coll.seen_version != coll.tracker.version:
            async with coll.catching_up:
                target = coll.tracker.version
                if coll.seen_version != target:  # not already done by the search this one waited for
                    await to_latest(coll, "open")
                    await self._refresh_fields(coll)
                    with translate_errors("open", coll.name):  # another writer may have built an index
                        await _set_index(coll, await coll.table.list_indices())
                    # Only now: the version number is what searches key the in-memory copy by.
                    coll.seen_version = target
        return coll

    async def _catch_up(self, name: str) -> None:
        """Move to other processes' latest commits to ``name`` now, whatever ``read_consistency_interval`` is.

        One look (a table open) on turnkit's loop; the next read of the
        collection reads its latest version. A missing collection is left to
        that read.
        """

        async def catch_up() -> None:
            coll = await self._existing(name)
            if coll is not None:
                await _freshness.look(self, coll, force=True)

        await on_loop(catch_up())

    async def _refresh_fields(self, coll: _Collection) -> dict[str, FieldType]:
        # A stale set only slows filters (they read the JSON); writes call this on the version they land on.
        with translate_errors("open", coll.name):
            schema = await coll.table.schema()
        return _take_schema(coll, schema)

    def _new_meta(self, dimension: int, metric: str) -> dict[str, Any]:
        """What a new collection records about itself."""
        # Precomputed vectors of another size were not made by this store's encoder.
        encoder = self.encoder if self.encoder is not None and self.encoder.dimension == dimension else None
        return {
            "format": _FORMAT,
            "dimension": dimension,
            "metric": metric,
            "encoder": encoder.name if encoder is not None else None,
            "created_at": datetime.now(UTC).isoformat(),
        }

    async def _create_table(self, conn: Any, name: str, dimension: int, metric: Metric) -> Any:
        # integrity: another process may have created it since we looked.
        schema = collection_schema(dimension, self._new_meta(dimension, metric), self.fields)
        table = await create_or_open(conn, name, schema, unlocked=heals_after_write(self.uri))
        await ensure_field_indexes(table, name, declared_fields(await table.schema()))
        return table

    async def _wrap(self, name: str, table: Any, opened_at: float | None = None) -> _Collection:
        with translate_errors("open", name):
            schema = await table.schema()
            indices = await table.list_indices()
        missing = [c for c in _COLUMNS if c not in schema.names]
        if missing:
            raise VectorStoreUsageError(
                f"Table {name!r} is not a turnkit collection (missing columns {missing}).",
                code="E_INVALID_VECTOR_STORE_CONFIG",
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
            born=_freshness.born(schema),
            recall_target=self.recall_target,
        )
        _take_schema(coll, schema)
        coll.seen_version = coll.tracker.version
        coll.generation = coll.tracker.generation
        await _set_index(coll, indices)
        await _freshness.mark_opened(self, coll, table, time.monotonic() if opened_at is None else opened_at)
        return coll

    # -- collection management -------------------------------------------------------------
    async def list_collections(self) -> list[str]:
        """Names of every collection in the store, sorted."""
        return await on_loop(_catalog.list_(self))

    list_collections_sync = sync_form(list_collections)

    async def has_collection(self, name: str) -> bool:
        """Whether ``name`` exists."""
        _check_name(name)
        return name in await self.list_collections()

    has_collection_sync = sync_form(has_collection)

    async def create_collection(
        self,
        name: str,
        *,
        dimension: int | None = None,
        metric: str | None = None,
        exist_ok: bool = False,
        fields: Mapping[str, Any] | None = None,
    ) -> CollectionInfo:
        """Create an empty collection (upserting into a new name also creates it).

        Args:
            name: Letters, digits, ``_``, ``-`` and ``.``.
            dimension: Vector length; defaults to the encoder's.
            metric: ``cosine`` (default: the store's), ``l2`` or ``dot``; fixed for the collection's life.
            exist_ok: Return the existing collection instead of raising `VectorStoreUsageError`
            (``E_VECTOR_STORE_COLLECTION_EXISTS``).
            fields: Metadata keys to keep as typed, indexed columns, besides the
                store's own ``fields`` (see `declare_fields`).
        """
        _check_name(name)
        await on_loop(_catalog.create(self, name, dimension, metric, exist_ok, normalize_fields(fields)))
        return await self.collection_info(name)

    create_collection_sync = sync_form(create_collection)

    async def declare_fields(self, name: str, fields: Mapping[str, Any]) -> CollectionInfo:
        """Keep metadata keys as typed columns with scalar indexes, migrating the rows already stored.

        Filters on ``metadata.<key>`` then read the column (a BTREE, BITMAP or
        LABEL_LIST index serves them) instead of parsing every row's JSON, with
        the same results. The key stays in the metadata that reads return.
        Declaring is idempotent; a key cannot change its type.

        Args:
            name: The collection.
            fields: ``{key: type}``; types are ``str``, ``int``, ``float``,
                ``bool`` and ``list[str]`` (or their names as strings).

        Raises:
            VectorStoreUsageError: ``E_INVALID_VECTOR_RECORD``: A stored row holds another type under a
                key (named in the error); nothing is changed.
            VectorStoreUsageError: ``E_INVALID_VECTOR_STORE_CONFIG``: A bad name or type, or a key
                already declared with another type.
        """
        _check_name(name)
        await on_loop(_catalog.declare(self, name, normalize_fields(fields)))
        return await self.collection_info(name)

    declare_fields_sync = sync_form(declare_fields)

    async def drop_collection(self, name: str, *, missing_ok: bool = False) -> bool:
        """Delete a collection and all its records; returns whether it existed."""
        _check_name(name)
        return await on_loop(_catalog.drop(self, name, missing_ok))

    drop_collection_sync = sync_form(drop_collection)

    async def collection_info(self, name: str) -> CollectionInfo:
        """Rows, dimension, metric, encoder, version, indexes and fragments of a collection."""
        _check_name(name)
        return await on_loop(_catalog.info(self, name))

    collection_info_sync = sync_form(collection_info)

    async def wait_for_maintenance(self) -> None:
        """Wait until background optimizations started by `AutoOptimize` have finished."""

        async def _wait() -> None:
            tasks = [c.maintenance for c in self._collections.values() if c.maintenance is not None]
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

        await on_loop(_wait())

    wait_for_maintenance_sync = sync_form(wait_for_maintenance)

    def cache_stats(self) -> MemoryCacheStats:
        """Which collections this store holds in memory for exact searches, and their size."""
        return self._memory.stats()

    # -- encoding ------------------------------------------------------------------------
    def _encoder_for(self, collection: str, coll: _Collection | None) -> Encoder:
        """The store's encoder, else the one ``coll`` recorded when the registry builds it offline."""
        if self.encoder is not None:
            return self.encoder
        recorded = coll.encoder if coll is not None else None
        if coll is None or recorded is None:
            raise EncoderRequiredError(
                f"Collection {collection!r}: text must be encoded but this store has no encoder.",
                collection=collection,
            )
        key = (recorded, coll.dimension)
        found = self._recorded_encoders.get(key)
        if found is None:
            found = build_recorded_encoder(*key)
            if found is None:
                spec = encoder_for_recorded(*key)
                example = f", e.g. encoder_from_spec({spec!r})" if spec else ""
                raise EncoderRequiredError(
                    f"Collection {collection!r} was built with encoder {recorded!r}, which turnkit does "
                    "not build without being asked (it may download a model or call a service).",
                    hint=f"Pass the same encoder to create_vector_store(encoder=...): {recorded!r}{example}.",
                    collection=collection,
                    recorded=recorded,
                )
            self._recorded_encoders[key] = found
        return found

    def _check_encoder(self, coll: _Collection | None, encoder: Encoder) -> None:
        if coll is not None and coll.encoder and coll.encoder != encoder.name:
            raise VectorStoreUsageError(
                f"Collection {coll.name!r} was built with encoder {coll.encoder!r}; "
                f"this store encodes with {encoder.name!r}.",
                code="E_VECTOR_STORE_ENCODER_MISMATCH",
                collection=coll.name,
                expected=coll.encoder,
                actual=encoder.name,
            )

    async def _encode_query(self, collection: str, text: str) -> np.ndarray[Any, Any]:
        try:
            coll = await on_loop(self._collection(collection))
        except CollectionNotFoundError:
            if self.encoder is None:  # the error a store without an encoder always gave first
                self._encoder_for(collection, None)
            raise
        encoder = self._encoder_for(collection, coll)
        self._check_encoder(coll, encoder)
        vectors = await _encode_for(collection, encoder, [text], "query")
        row: np.ndarray[Any, Any] = vectors[0]
        return row

    async def _existing(self, name: str) -> _Collection | None:
        try:
            return await self._collection(name)
        except CollectionNotFoundError:
            return None

    # -- the operations a builder runs (each lives in its module and takes the store first) ----------
    _upsert = _writes.upsert
    _delete = _writes.delete
    _optimize = _maintenance.repair  # optimize() does what repair() does; the count goes unread
    _create_index = _maintenance.create_index
    _rows_snapshot = _rows.snapshot
    _rows_page = staticmethod(_rows.next_page)

    # -- maintenance -----------------------------------------------------------------------
    async def repair(self, name: str) -> int:
        """Remove duplicate ids from a collection (keeping each id's newest ``updated_at``) and compact it.

        Writers on object storage can leave an id twice (see docs/store.md,
        "Deploying with many processes and tenants"); reads already hide the
        older copies. `optimize` does the same.

        Returns:
            How many older copies were deleted.
        """
        _check_name(name)
        return await on_loop(_maintenance.repair(self, name))

    repair_sync = sync_form(repair)

    # -- reads ---------------------------------------------------------------------------
    async def _read_again(self, name: str, read: Callable[[], Awaitable[T]]) -> T:
        """``read()``, and once more if it failed because another process replaced the table under it."""
        try:
            return await read()
        except VectorStoreRuntimeError as exc:
            coll = self._collections.get(name)
            if exc.code != "E_VECTOR_STORE_SEARCH_FAILED" or coll is None:
                raise
            if not await _freshness.look_now(self, coll):
                raise
        return await read()

    async def _search(self, spec: QuerySpec, vector: np.ndarray[Any, Any] | None) -> list[Any]:
        return await self._read_again(spec.collection, lambda: _reads.search(self, spec, vector))

    async def _execute(self, spec: QuerySpec) -> list[VectorMatch]:
        """Run a builder's checked search: on the caller's loop when memory answers, else on turnkit's."""
        found = await _reads.search_now_async(self, spec)
        if found is None:
            vector = None
            lexical_only = spec.hybrid is not None and spec.hybrid.alpha == 0
            if isinstance(spec.near, NearText) and not lexical_only:
                vector = await self._encode_query(spec.collection, spec.near.text)
            found = await on_loop(self._search(spec, vector))
        if not found and spec.filter is not None:
            await on_loop(check_filter_keys(self, spec))
        return found

    def _execute_sync(self, spec: QuerySpec) -> list[VectorMatch]:
        """`_execute` for sync callers: a search memory answers runs in the caller's thread, no loop hop."""
        found = _reads.search_now(self, spec)
        if found is None:
            return run_sync(self._execute(spec))
        if not found and spec.filter is not None:
            run_sync(on_loop(check_filter_keys(self, spec)))
        return found

    async def _count(self, spec: QuerySpec) -> int:
        return await self._read_again(spec.collection, lambda: _reads.count(self, spec))

    async def _get(self, spec: QuerySpec, ids: list[str]) -> list[Any]:
        return await self._read_again(spec.collection, lambda: _reads.get(self, spec, ids))

    async def _update_metadata(
        self, spec: QuerySpec, updates: Mapping[str, Any], *, merge: bool, guard: FilterNode | None
    ) -> int:
        checked = _updates.check_updates(updates)
        return await on_loop(_updates.update_metadata(self, spec, checked, merge=merge, guard=guard))


def _take_schema(coll: _Collection, schema: Any) -> dict[str, FieldType]:
    """Read what a handle keeps from its table's schema: the declared fields and the recall curve."""
    coll.fields = declared_fields(schema)
    coll.auto = auto_fields(schema)
    coll.keyed = KEY in schema.names
    coll.recorded_curve = RecallCurve.of_field(schema.field("vector").metadata)
    return coll.fields
