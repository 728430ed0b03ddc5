"""``create_vector_store``: check the options once, open nothing until the first call."""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import timedelta
from functools import partial
from typing import Any

from turnkit._checks import expect_text, is_int, is_number, short_repr
from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector.encoders._base import Encoder
from turnkit.batteries.vector.store._fields import normalize_fields
from turnkit.batteries.vector.store._memory_index import MemoryCache
from turnkit.batteries.vector.store._recall import DEFAULT_RECALL_TARGET
from turnkit.batteries.vector.store._records import DEFAULT_MAX_DOCUMENT_CHARS
from turnkit.batteries.vector.store._scores import normalize_metric
from turnkit.batteries.vector.store._store import AutoOptimize, VectorStore

__all__ = ["create_vector_store"]

_config_error = partial(VectorStoreUsageError, code="E_INVALID_VECTOR_STORE_CONFIG")


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
    fields: Mapping[str, Any] | None = None,
    auto_fields: bool = True,
    recall_target: float = DEFAULT_RECALL_TARGET,
    recall_from_queries: bool = True,
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
            writes from *other processes*: the store looks for their commits
            (and for a collection dropped and recreated) at most this often per
            collection, so a read that starts this long after a commit sees it;
            ``timedelta(0)`` looks before every read. ``None`` (default) never
            looks, which suits a single writer process. ``turnkit serve`` uses 1 s.
        storage_options: Passed to LanceDB (object-store credentials, region…).
        auto_optimize: Background compaction policy; ``None`` disables it.
        memory_cache: Which collections are held in memory for exact searches
            (`MemoryCache`); ``None`` always searches through LanceDB.
        max_document_chars: The longest ``document`` an upsert accepts (default
            1,000,000 characters); a longer one is refused with the record named
            and nothing is written. ``None`` lifts the limit.
        fields: Metadata keys every collection this store creates declares as
            typed, indexed columns (``{"tenant": str, "year": int, "tags":
            list[str]}``), so filters on them read a column, not the JSON. See
            `VectorStore.declare_fields` for existing collections.
        auto_fields: At optimize, keep each metadata key whose stored values
            all have one type (``str``, ``int``, ``float``, ``bool`` or a list
            of strings) as a typed, indexed column too, with the same filter
            results; a key holding two types stays in the JSON. Only on a
            local disk (and ``memory://``), where writers lock. ``False``
            leaves undeclared keys in the JSON.
        recall_target: The recall@10 an HNSW search aims for when the query
            sets no ``ef``: each HNSW build measures the recall at each ``ef``
            on the collection's own vectors, and searches use the smallest
            ``ef`` that meets this (see docs/store.md).
        recall_from_queries: Measure that recall again on each collection's
            own recent queries (the last 200 query vectors, kept in memory
            only), in the background once 100 have been asked, and use it in
            place of the build's estimate. ``False`` keeps the build's.
        **connect_options: Passed to ``lancedb.connect_async`` (``api_key``,
            ``region``, ``host_override``, ``session``…). For ``db://`` URIs the
            API key defaults to the ``LANCEDB_API_KEY`` environment variable.

    Returns:
        A `VectorStore`; call it with a collection name to get a builder.
    """
    if isinstance(uri, os.PathLike):
        uri = os.fspath(uri)
    uri = expect_text(uri, "uri", _config_error, hint="Try uri='memory://'.")
    if "://" not in uri:
        # LanceDB reads a bare relative name as a LanceDB Cloud database; a
        # path without a scheme is always a local directory here.
        uri = os.path.abspath(os.path.expanduser(uri))
    try:
        canonical = normalize_metric(metric)
    except ValueError as exc:
        raise _config_error(str(exc)) from None
    if encoder is not None and not (
        isinstance(getattr(encoder, "name", None), str)
        and isinstance(getattr(encoder, "dimension", None), int)
        and callable(getattr(encoder, "encode", None))
    ):
        raise _config_error(
            f"encoder {encoder!r} is not an Encoder (needs .name, .dimension and .encode(texts, kind=...)).",
            hint="Wrap a plain function with turnkit.batteries.vector.FunctionEncoder.",
        )
    if read_consistency_interval is not None and not isinstance(read_consistency_interval, timedelta):
        raise _config_error("read_consistency_interval must be a datetime.timedelta or None.")
    if auto_optimize is not None and not isinstance(auto_optimize, AutoOptimize):
        raise _config_error("auto_optimize must be an AutoOptimize or None.")
    if memory_cache is not None and not isinstance(memory_cache, MemoryCache):
        raise _config_error("memory_cache must be a MemoryCache or None.")
    if max_document_chars is not None and not is_int(max_document_chars, 1):
        raise _config_error("max_document_chars must be a positive integer or None.")
    if not is_number(recall_target, 0, 1) or recall_target <= 0:
        raise _config_error(f"recall_target must be a number in (0, 1], got {short_repr(recall_target)}.")
    declared = normalize_fields(fields)
    if not isinstance(auto_fields, bool):
        raise _config_error("auto_fields must be True or False.")
    if not isinstance(recall_from_queries, bool):
        raise _config_error("recall_from_queries must be True or False.")
    if uri.startswith("db://") and not connect_options.get("api_key") and os.environ.get("LANCEDB_API_KEY"):
        # The sync client reads it; LanceDB's async connect does not.
        connect_options["api_key"] = os.environ["LANCEDB_API_KEY"]
    return VectorStore(
        uri=uri,
        encoder=encoder,
        fields=declared,
        auto_fields=auto_fields,
        metric=canonical,
        read_consistency_interval=read_consistency_interval,
        storage_options=storage_options,
        connect_options=connect_options,
        auto_optimize=auto_optimize,
        memory_cache=memory_cache,
        max_document_chars=max_document_chars,
        recall_target=float(recall_target),
        recall_from_queries=recall_from_queries,
    )
