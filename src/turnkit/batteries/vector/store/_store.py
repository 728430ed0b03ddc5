"""The LanceDB-backed vector store: connection, collections, writes and searches.

Everything that touches LanceDB runs on turnkit's background loop (see
``turnkit._aio``): table handles, per-collection write locks and maintenance
tasks live there, so async callers on any loop and sync callers on any thread
share one handle and one lock per collection.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np

from turnkit._aio import on_loop, run_sync
from turnkit.batteries.vector._errors import (
    CollectionExistsError,
    CollectionNotFoundError,
    ConnectionFailedError,
    EncoderMismatchError,
    EncoderRequiredError,
    InvalidCollectionNameError,
    InvalidQueryError,
    InvalidVectorStoreConfigError,
)
from turnkit.batteries.vector.encoders._base import Encoder
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.query._builder import QueryBuilder
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store import _maintenance, _reads, _writes
from turnkit.batteries.vector.store._common import (
    _COLUMNS,
    UpsertResult,
)
from turnkit.batteries.vector.store._integrity import (
    create_or_open,
    reopen_or_corrupt,
)
from turnkit.batteries.vector.store._lancedb import import_lancedb, translate_errors
from turnkit.batteries.vector.store._locks import collection_lock
from turnkit.batteries.vector.store._maintenance import _fragment_count, _set_index
from turnkit.batteries.vector.store._memory_index import (
    MemoryCache,
    MemoryCacheStats,
    MemoryIndex,
)
from turnkit.batteries.vector.store._records import (
    DEFAULT_MAX_DOCUMENT_CHARS,
    collection_schema,
)
from turnkit.batteries.vector.store._scores import (
    Metric,
    normalize_metric,
)
from turnkit.batteries.vector.store._writes import _encode_for

__all__ = ["AutoOptimize", "CollectionInfo", "UpsertResult", "VectorStore", "create_vector_store"]


_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,128}$")
_FORMAT = 1


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
        return await _writes.upsert(self, name, records, replace=replace, guard=guard)

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
        return await _writes.write(
            self, name, batch, vectors, replace_where=replace_where, guard_where=guard_where
        )

    def _check_consent(self, terminal: str, spec: QuerySpec, *, all_records: bool) -> None:
        return _writes.check_consent(self, terminal, spec, all_records=all_records)

    async def _delete(self, spec: QuerySpec, *, all_records: bool) -> int:
        return await _writes.delete(self, spec, all_records=all_records)

    # -- maintenance -----------------------------------------------------------------------
    def _after_write(self, coll: _Collection) -> None:
        return _maintenance.after_write(self, coll)

    async def _optimize_if_unindexed(self, coll: _Collection, threshold: int) -> None:
        return await _maintenance.optimize_if_unindexed(self, coll, threshold)

    async def _background_optimize(self, coll: _Collection) -> None:
        return await _maintenance.background_optimize(self, coll)

    async def _run_optimize(self, coll: _Collection, *, repair: bool = False) -> int:
        return await _maintenance.run_optimize(self, coll, repair=repair)

    async def _optimize(self, name: str) -> None:
        return await _maintenance.optimize(self, name)

    async def _repair(self, name: str) -> int:
        return await _maintenance.repair(self, name)

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
        return await _maintenance.create_index(self, name, index_type, params)

    # -- reads ---------------------------------------------------------------------------
    async def _search(self, spec: QuerySpec, vector: np.ndarray[Any, Any] | None) -> list[Any]:
        # Diversity and hybrid fusion wrap this same search (see ranking/_mmr.py, store/_hybrid.py).
        return await _reads.search(self, spec, vector)

    async def _search_now_async(self, spec: QuerySpec) -> list[Any] | None:
        """`_search_now` for async callers: inline when small, else on a worker thread so queries overlap."""
        return await _reads.search_now_async(self, spec)

    def _search_now(self, spec: QuerySpec, max_work: int | None = None) -> list[Any] | None:
        """A search answered from memory in the caller's thread, or ``None`` to take the loop path.

        Only when nothing needs the loop: a vector query on an open, current
        collection whose copy is loaded (readers of other processes' writes
        must ask LanceDB for the version, which is async).
        """
        return _reads.search_now(self, spec, max_work)

    def _knobs(self, query: Any, coll: _Collection, spec: QuerySpec) -> Any:
        # Defaults that hold recall@10 as the collection grows (see _index_policy.py, docs/store.md).
        return _reads.knobs(self, query, coll, spec)

    async def _vector_of(self, coll: _Collection, record_id: str) -> np.ndarray[Any, Any]:
        return await _reads.vector_of(self, coll, record_id)

    async def _count(self, spec: QuerySpec) -> int:
        return await _reads.count(self, spec)

    async def _get(self, spec: QuerySpec, ids: list[str]) -> list[Any]:
        return await _reads.get(self, spec, ids)


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
