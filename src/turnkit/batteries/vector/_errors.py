"""The ``E_VECTOR_STORE_*`` errors of the vector battery.

```
TurnkitError
├── UsageError
│   └── VectorStoreUsageError
│       ├── InvalidVectorStoreConfigError   E_INVALID_VECTOR_STORE_CONFIG
│       ├── EncoderRequiredError            E_VECTOR_STORE_ENCODER_REQUIRED
│       ├── EncoderMismatchError            E_VECTOR_STORE_ENCODER_MISMATCH
│       ├── DimensionMismatchError          E_VECTOR_STORE_DIMENSION_MISMATCH
│       ├── InvalidFilterError              E_VECTOR_STORE_INVALID_FILTER
│       ├── UnsupportedFilterOperatorError  E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR
│       ├── UnknownFieldError               E_VECTOR_STORE_UNKNOWN_FIELD
│       │   └── FilterKeyNotFoundError      E_VECTOR_STORE_FILTER_KEY_NOT_FOUND
│       ├── RawBindingMismatchError         E_VECTOR_STORE_RAW_BINDING_MISMATCH
│       ├── QueryConflictError              E_VECTOR_STORE_QUERY_CONFLICT
│       ├── ProjectionRequiredError         E_VECTOR_STORE_PROJECTION_REQUIRED
│       ├── InvalidQueryError               E_VECTOR_STORE_INVALID_QUERY
│       ├── InvalidVectorRecordError        E_INVALID_VECTOR_RECORD
│       ├── InvalidCollectionNameError      E_VECTOR_STORE_INVALID_COLLECTION_NAME
│       ├── UnsafeDeleteError               E_VECTOR_STORE_UNSAFE_DELETE
│       ├── CollectionNotFoundError         E_VECTOR_STORE_COLLECTION_NOT_FOUND
│       ├── CollectionExistsError           E_VECTOR_STORE_COLLECTION_EXISTS
│       ├── RecordNotFoundError             E_VECTOR_STORE_RECORD_NOT_FOUND
│       └── InvalidRankingConfigError       E_VECTOR_RANKING_INVALID_CONFIG
└── RuntimeFailure
    └── VectorStoreRuntimeError
        ├── DriverUnavailableError          E_VECTOR_STORE_DRIVER_UNAVAILABLE
        ├── ConnectionFailedError           E_VECTOR_STORE_CONNECTION_FAILED
        ├── EncoderFailedError              E_VECTOR_STORE_ENCODER_FAILED
        ├── SearchFailedError               E_VECTOR_STORE_SEARCH_FAILED
        ├── UpsertFailedError               E_VECTOR_STORE_UPSERT_FAILED
        ├── DeleteFailedError               E_VECTOR_STORE_DELETE_FAILED
        ├── StoreOperationFailedError       E_VECTOR_STORE_OPERATION_FAILED
        ├── RerankFailedError               E_VECTOR_RERANK_FAILED
        └── CollectionCorruptError          E_VECTOR_STORE_COLLECTION_CORRUPT
```
"""

from __future__ import annotations

from turnkit._errors import RuntimeFailure, UsageError

__all__ = [
    "CollectionCorruptError",
    "InvalidRankingConfigError",
    "RerankFailedError",
    "CollectionExistsError",
    "CollectionNotFoundError",
    "ConnectionFailedError",
    "DeleteFailedError",
    "DimensionMismatchError",
    "DriverUnavailableError",
    "EncoderFailedError",
    "EncoderMismatchError",
    "EncoderRequiredError",
    "FilterKeyNotFoundError",
    "InvalidCollectionNameError",
    "InvalidFilterError",
    "InvalidQueryError",
    "InvalidVectorRecordError",
    "InvalidVectorStoreConfigError",
    "ProjectionRequiredError",
    "QueryConflictError",
    "RawBindingMismatchError",
    "RecordNotFoundError",
    "SearchFailedError",
    "StoreOperationFailedError",
    "UnknownFieldError",
    "UnsafeDeleteError",
    "UnsupportedFilterOperatorError",
    "UpsertFailedError",
    "VectorStoreRuntimeError",
    "VectorStoreUsageError",
]


class VectorStoreUsageError(UsageError):
    """A vector-store call that must be changed by the caller."""

    code = "E_VECTOR_STORE_USAGE"
    default_hint = "Change the call; the message says what was wrong."


class VectorStoreRuntimeError(RuntimeFailure):
    """A vector-store operation that failed in the backend."""

    code = "E_VECTOR_STORE_RUNTIME"
    default_hint = "A store operation failed while running; the cause is chained to this error."


class InvalidVectorStoreConfigError(VectorStoreUsageError):
    """`create_vector_store` got an option it cannot use."""

    code = "E_INVALID_VECTOR_STORE_CONFIG"
    default_hint = "Check the create_vector_store() arguments against docs/store.md."


class EncoderRequiredError(VectorStoreUsageError):
    """Text must be encoded but the store has no encoder."""

    code = "E_VECTOR_STORE_ENCODER_REQUIRED"
    default_hint = (
        "Pass encoder=... to create_vector_store (for example turnkit.batteries.vector.WordLlamaEncoder()), "
        "or give every record a `vector` and query with near_vector()."
    )


class EncoderMismatchError(VectorStoreUsageError):
    """The store's encoder differs from the one the collection was built with."""

    code = "E_VECTOR_STORE_ENCODER_MISMATCH"
    default_hint = "Open the store with the encoder named in the message, or re-ingest into a new collection."


class DimensionMismatchError(VectorStoreUsageError):
    """A vector's length differs from the collection's dimension."""

    code = "E_VECTOR_STORE_DIMENSION_MISMATCH"
    default_hint = "Use vectors from the same encoder the collection was created with."


class InvalidFilterError(VectorStoreUsageError):
    """A filter is malformed (bad value type, too deep, unparsable text…)."""

    code = "E_VECTOR_STORE_INVALID_FILTER"
    default_hint = "See docs/filters.md for the filter forms and operators."


class UnsupportedFilterOperatorError(VectorStoreUsageError):
    """A filter uses an operator turnkit does not know."""

    code = "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR"
    default_hint = (
        "Use one of = != <> > >= < <= in, not in, like, contains, exists "
        "(Mongo style: $eq $ne $gt $gte $lt $lte $in $nin $and $or $not $nor $exists $contains $like)."
    )


class UnknownFieldError(VectorStoreUsageError):
    """A filter or projection names a field that does not exist."""

    code = "E_VECTOR_STORE_UNKNOWN_FIELD"
    default_hint = "Fields are id, document, created_at, updated_at, or metadata.<key>[.<key>…]."


class FilterKeyNotFoundError(UnknownFieldError):
    """A search found nothing, and its filter needs a metadata key that no record holds.

    Raised only for an empty answer, so catching it and using ``[]`` is the
    old silent result. The hint says "did you mean" when a key held by the
    collection is close to the one written.
    """

    code = "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND"
    default_hint = (
        "Check the key's spelling against the collection's keys (kind and metadata.kind are the same key); "
        "see docs/filters.md#keys-no-record-holds."
    )


class RawBindingMismatchError(VectorStoreUsageError):
    """The number of ``?`` placeholders differs from the number of bindings."""

    code = "E_VECTOR_STORE_RAW_BINDING_MISMATCH"
    default_hint = "Pass one binding per `?` placeholder in the raw SQL."


class QueryConflictError(VectorStoreUsageError):
    """Two near clauses (or other exclusive options) were set on one query."""

    code = "E_VECTOR_STORE_QUERY_CONFLICT"
    default_hint = "A query has at most one of near_text(), near_vector() and near_id()."


class ProjectionRequiredError(VectorStoreUsageError):
    """No longer raised: a search without ``select(...)`` returns id, document, metadata and score."""

    code = "E_VECTOR_STORE_PROJECTION_REQUIRED"
    default_hint = "Not raised any more; select(...) still chooses the fields a search returns."


class InvalidQueryError(VectorStoreUsageError):
    """A query option has a value out of range or of the wrong type."""

    code = "E_VECTOR_STORE_INVALID_QUERY"
    default_hint = "The message names the builder call and the allowed values; see docs/store.md."


class InvalidVectorRecordError(VectorStoreUsageError):
    """A record given to ``upsert`` is invalid; nothing was written."""

    code = "E_INVALID_VECTOR_RECORD"
    default_hint = "Fix the record the message names (its index and id); nothing was written."


class InvalidCollectionNameError(VectorStoreUsageError):
    """A collection name LanceDB cannot use as a table name."""

    code = "E_VECTOR_STORE_INVALID_COLLECTION_NAME"
    default_hint = "Use letters, digits, '_', '-' and '.', at most 128 characters."


class UnsafeDeleteError(VectorStoreUsageError):
    """``delete()`` without a filter; it would remove every record."""

    code = "E_VECTOR_STORE_UNSAFE_DELETE"
    default_hint = (
        "Add a filter (e.g. .where_in('id', [...])) or call delete(all=True) to empty the collection."
    )


class CollectionNotFoundError(VectorStoreUsageError):
    """The collection does not exist in this store."""

    code = "E_VECTOR_STORE_COLLECTION_NOT_FOUND"
    default_hint = "Create it with vs.create_collection(name) or upsert records into it first."


class CollectionExistsError(VectorStoreUsageError):
    """The collection already exists."""

    code = "E_VECTOR_STORE_COLLECTION_EXISTS"
    default_hint = "Open it with vs(name), or pass exist_ok=True."


class RecordNotFoundError(VectorStoreUsageError):
    """A record named by id (``near_id``) does not exist."""

    code = "E_VECTOR_STORE_RECORD_NOT_FOUND"
    default_hint = "Check the id; vs(collection).get([...]) lists the ids that exist."


class DriverUnavailableError(VectorStoreRuntimeError):
    """A required driver package (lancedb, an encoder's package) is not installed."""

    code = "E_VECTOR_STORE_DRIVER_UNAVAILABLE"
    default_hint = "Install lancedb (a core dependency of turnkit): pip install 'lancedb>=0.40,<0.41'."


class ConnectionFailedError(VectorStoreRuntimeError):
    """The database at the store's URI could not be opened."""

    code = "E_VECTOR_STORE_CONNECTION_FAILED"
    default_hint = "Check the uri and storage options passed to create_vector_store()."


class EncoderFailedError(VectorStoreRuntimeError):
    """The encoder raised or returned vectors of the wrong shape."""

    code = "E_VECTOR_STORE_ENCODER_FAILED"
    default_hint = "The encoder raised or returned bad vectors; the cause is chained to this error."


class SearchFailedError(VectorStoreRuntimeError):
    """The backend failed while searching."""

    code = "E_VECTOR_STORE_SEARCH_FAILED"
    default_hint = "The search did not run; the cause is chained to this error."


class UpsertFailedError(VectorStoreRuntimeError):
    """The backend failed while writing; the write was not committed."""

    code = "E_VECTOR_STORE_UPSERT_FAILED"
    default_hint = "Nothing from this call was written; the cause is chained to this error. Retry is safe."


class DeleteFailedError(VectorStoreRuntimeError):
    """The backend failed while deleting."""

    code = "E_VECTOR_STORE_DELETE_FAILED"
    default_hint = "The delete did not run; the store is unchanged. The cause is chained to this error."


class StoreOperationFailedError(VectorStoreRuntimeError):
    """The backend failed during collection management or maintenance."""

    code = "E_VECTOR_STORE_OPERATION_FAILED"
    default_hint = "LanceDB refused the operation; the cause is chained to this error."


class InvalidRankingConfigError(VectorStoreUsageError):
    """A ranking option (weights, top_k, pool size, alpha, scorer…) is unusable."""

    code = "E_VECTOR_RANKING_INVALID_CONFIG"
    default_hint = (
        "Give all three weights (semantic, vector, position) summing to 1, a top_k >= 1, and a "
        "scorer or model when the semantic weight is above 0; see docs/ranking.md."
    )


class RerankFailedError(VectorStoreRuntimeError):
    """The relevance scorer or judge model raised while reranking."""

    code = "E_VECTOR_RERANK_FAILED"
    default_hint = (
        "The scorer or model failed; the cause is chained to this error. Retry, or rerank with "
        "on_error='fallback' to keep the retrieval order when the scorer is down."
    )


class CollectionCorruptError(VectorStoreRuntimeError):
    """A collection's directory exists but LanceDB cannot open it; nothing is written over it."""

    code = "E_VECTOR_STORE_COLLECTION_CORRUPT"
    default_hint = (
        "The collection's files are damaged or incomplete (for example its _versions directory is "
        "missing). Restore it from a backup or move the directory aside; turnkit will not create a "
        "new collection over it."
    )
