"""The errors of the vector battery: ``E_VECTOR_*`` and the retrieval glue's codes.

```
TurnkitError
├── UsageError
│   └── VectorStoreUsageError            every usage code below without a class of its own
│       ├── EncoderRequiredError         E_VECTOR_STORE_ENCODER_REQUIRED
│       ├── InvalidFilterError           E_VECTOR_STORE_INVALID_FILTER, …_UNSUPPORTED_FILTER_OPERATOR,
│       │                                …_RAW_BINDING_MISMATCH
│       ├── UnknownFieldError            E_VECTOR_STORE_UNKNOWN_FIELD
│       │   └── FilterKeyNotFoundError   E_VECTOR_STORE_FILTER_KEY_NOT_FOUND
│       ├── CollectionNotFoundError      E_VECTOR_STORE_COLLECTION_NOT_FOUND
│       ├── RecordNotFoundError          E_VECTOR_STORE_RECORD_NOT_FOUND
│       └── InvalidRankingConfigError    E_VECTOR_RANKING_INVALID_CONFIG
└── RuntimeFailure
    └── VectorStoreRuntimeError          every runtime code (search, upsert, encoder, rerank failed…)
RetrievableSkippedWarning                a match left out of fetch_retrievables
```

The classes are the ones callers catch apart: a missing collection (read as
empty), a filter key no record holds (read as no match), a filter rejected as
the model wrote it. Every other condition is told apart by ``code``.
"""

from __future__ import annotations

from turnkit._errors import RuntimeFailure, UsageError

__all__ = [
    "CollectionNotFoundError",
    "EncoderRequiredError",
    "FilterKeyNotFoundError",
    "InvalidFilterError",
    "InvalidRankingConfigError",
    "RecordNotFoundError",
    "RetrievableSkippedWarning",
    "UnknownFieldError",
    "VectorStoreRuntimeError",
    "VectorStoreUsageError",
]


class VectorStoreUsageError(UsageError):
    """A vector-store call that must be changed by the caller."""

    hints = {
        "E_VECTOR_STORE_USAGE": "Change the call; the message says what was wrong.",
        "E_INVALID_VECTOR_STORE_CONFIG": "Check the create_vector_store() arguments against docs/store.md.",
        "E_VECTOR_STORE_ENCODER_MISMATCH": (
            "Open the store with the encoder named in the message, or re-ingest into a new collection."
        ),
        "E_VECTOR_STORE_DIMENSION_MISMATCH": (
            "Use vectors from the same encoder the collection was created with."
        ),
        "E_VECTOR_STORE_QUERY_CONFLICT": (
            "A query has at most one of near_text(), near_vector() and near_id()."
        ),
        "E_VECTOR_STORE_PROJECTION_REQUIRED": (
            "Not raised any more; select(...) still chooses the fields a search returns."
        ),
        "E_VECTOR_STORE_INVALID_QUERY": (
            "The message names the builder call and the allowed values; see docs/store.md."
        ),
        "E_INVALID_VECTOR_RECORD": (
            "Fix the record the message names (its index and id); nothing was written."
        ),
        "E_VECTOR_STORE_INVALID_COLLECTION_NAME": (
            "Use letters, digits, '_', '-' and '.', at most 128 characters."
        ),
        "E_VECTOR_STORE_UNSAFE_DELETE": (
            "Add a filter (e.g. .where_in('id', [...])) or call delete(all=True) to empty the collection."
        ),
        "E_VECTOR_STORE_COLLECTION_EXISTS": "Open it with vs(name), or pass exist_ok=True.",
        "E_INVALID_RETRIEVABLE_GLUE_CONFIG": (
            "Check the option named in the message against docs/retrieval-callbacks.md."
        ),
        "E_VECTOR_GLUE_RESERVED_METADATA_KEY": (
            "Set the record's own field (source=, kind=, created_at=...) instead, or rename the metadata "
            "key; trust_tier, source, kind, created_at and updated_at are written by the glue."
        ),
    }


class VectorStoreRuntimeError(RuntimeFailure):
    """A vector-store operation that failed in the backend, the encoder or the reranker."""

    hints = {
        "E_VECTOR_STORE_RUNTIME": (
            "A store operation failed while running; the cause is chained to this error."
        ),
        "E_VECTOR_STORE_DRIVER_UNAVAILABLE": (
            "Install lancedb (a core dependency of turnkit): pip install 'lancedb>=0.40,<0.41'."
        ),
        "E_VECTOR_STORE_CONNECTION_FAILED": (
            "Check the uri and storage options passed to create_vector_store()."
        ),
        "E_VECTOR_STORE_ENCODER_FAILED": (
            "The encoder raised or returned bad vectors; the cause is chained to this error."
        ),
        "E_VECTOR_STORE_SEARCH_FAILED": "The search did not run; the cause is chained to this error.",
        "E_VECTOR_STORE_UPSERT_FAILED": (
            "Nothing from this call was written; the cause is chained to this error. Retry is safe."
        ),
        "E_VECTOR_STORE_DELETE_FAILED": (
            "The delete did not run; the store is unchanged. The cause is chained to this error."
        ),
        "E_VECTOR_STORE_OPERATION_FAILED": (
            "LanceDB refused the operation; the cause is chained to this error."
        ),
        "E_VECTOR_RERANK_FAILED": (
            "The scorer or model failed; the cause is chained to this error. Retry, or rerank "
            "with on_error='fallback' to keep the retrieval order when the scorer is down."
        ),
        "E_VECTOR_STORE_COLLECTION_CORRUPT": (
            "The collection's files are damaged or incomplete (for example its _versions directory is "
            "missing). Restore it from a backup or move the directory aside; turnkit will not create a "
            "new collection over it."
        ),
    }


class EncoderRequiredError(VectorStoreUsageError):
    """Text must be encoded but the store has no encoder."""

    hints = {
        "E_VECTOR_STORE_ENCODER_REQUIRED": (
            "Pass encoder=... to create_vector_store (for example "
            "turnkit.batteries.vector.WordLlamaEncoder()), "
            "or give every record a `vector` and query with near_vector()."
        )
    }


class InvalidFilterError(VectorStoreUsageError):
    """A filter is malformed: a bad value, an unknown operator, a raw SQL binding count, too deep."""

    hints = {
        "E_VECTOR_STORE_INVALID_FILTER": "See docs/filters.md for the filter forms and operators.",
        "E_VECTOR_STORE_UNSUPPORTED_FILTER_OPERATOR": (
            "Use one of = != <> > >= < <= in, not in, like, contains, exists (Mongo style: $eq "
            "$ne $gt $gte $lt $lte $in $nin $and $or $not $nor $exists $contains $like)."
        ),
        "E_VECTOR_STORE_RAW_BINDING_MISMATCH": "Pass one binding per `?` placeholder in the raw SQL.",
    }


class UnknownFieldError(VectorStoreUsageError):
    """A filter or projection names a field that does not exist."""

    hints = {
        "E_VECTOR_STORE_UNKNOWN_FIELD": (
            "Fields are id, document, created_at, updated_at, or metadata.<key>[.<key>…]."
        )
    }


class FilterKeyNotFoundError(UnknownFieldError):
    """A search found nothing, and its filter needs a metadata key that no record holds.

    Raised only for an empty answer, so catching it and using ``[]`` is the
    old silent result. The hint says "did you mean" when a key held by the
    collection is close to the one written.
    """

    hints = {
        "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND": (
            "Check the key's spelling against the collection's keys "
            "(kind and metadata.kind are the same key); "
            "see docs/filters.md#keys-no-record-holds."
        )
    }


class CollectionNotFoundError(VectorStoreUsageError):
    """The collection does not exist in this store."""

    hints = {
        "E_VECTOR_STORE_COLLECTION_NOT_FOUND": (
            "Create it with vs.create_collection(name) or upsert records into it first."
        )
    }


class RecordNotFoundError(VectorStoreUsageError):
    """A record named by id (``near_id``) does not exist."""

    hints = {
        "E_VECTOR_STORE_RECORD_NOT_FOUND": "Check the id; vs(collection).get([...]) lists the ids that exist."
    }


class InvalidRankingConfigError(VectorStoreUsageError):
    """A ranking option (weights, top_k, pool size, alpha, scorer…) is unusable."""

    hints = {
        "E_VECTOR_RANKING_INVALID_CONFIG": (
            "Give all three weights (semantic, vector, position) summing to 1, a top_k >= 1, and a "
            "scorer or model when the semantic weight is above 0; see docs/ranking.md."
        )
    }


class InvalidRankingValue(InvalidRankingConfigError, ValueError):
    """Raised by ranking models' validation (private).

    Also a ValueError: inside a parent model's validation pydantic then names the parent's field.
    """


class RetrievableSkippedWarning(UserWarning):
    """A match could not become a `Retrievable` (empty document, bad timestamp…) and was left out.

    Attributes:
        record_id: The id of the skipped match.
        collection: The collection it came from.
        reason: Why it was skipped.
    """

    def __init__(self, message: str, *, record_id: str, collection: str, reason: str) -> None:
        super().__init__(message)
        self.record_id = record_id
        self.collection = collection
        self.reason = reason


class Unsupported(ValueError):
    """A fast path (the memory cache's filter mask or full-text index) cannot answer exactly (private).

    The caller falls back to LanceDB, which answers (or raises) instead.
    """
