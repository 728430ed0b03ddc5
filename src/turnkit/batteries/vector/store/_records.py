"""Record validation and the Arrow layout of a collection.

Records are validated as a whole batch *before* anything is encoded or
written, so a bad record never leaves a half-written batch behind.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import pyarrow as pa

from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector._matches import VectorMatch, parse_timestamp
from turnkit.batteries.vector.filters._declared import FieldType
from turnkit.batteries.vector.store._fields import field_schema

__all__ = [
    "PreparedBatch",
    "collection_schema",
    "metadata_to_json",
    "prepare_records",
]

_record_error = partial(VectorStoreUsageError, code="E_INVALID_VECTOR_RECORD")

RECORD_KEYS = frozenset({"id", "document", "vector", "metadata", "created_at", "updated_at"})
MAX_ID_LENGTH = 1024


DEFAULT_MAX_DOCUMENT_CHARS = 1_000_000
"""The longest ``document`` an upsert accepts by default (``create_vector_store(max_document_chars=)``)."""
MAX_METADATA_DEPTH = 64
"""How deeply ``metadata`` may nest (objects and lists); deeper is refused with the record named."""


def collection_schema(
    dimension: int, meta: Mapping[str, Any], fields: Mapping[str, FieldType] | None = None
) -> pa.Schema:
    """The explicit Arrow schema of a collection (own metadata under ``turnkit``, declared fields last)."""
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            pa.field("document", pa.string()),
            # JSON, not a struct: keys may differ between records (a struct
            # freezes its keys at the first write).
            pa.field("metadata", pa.json_()),
            pa.field("created_at", pa.timestamp("us", tz="UTC")),
            pa.field("updated_at", pa.timestamp("us", tz="UTC")),
            *field_schema(fields or {}),
        ],
        metadata={b"turnkit": json.dumps(dict(meta), sort_keys=True).encode()},
    )


@dataclass(slots=True)
class PreparedBatch:
    """A validated batch; vectors may still be missing for records to encode."""

    ids: list[str]
    documents: list[str | None]
    metadata_json: list[str | None]
    metadata: list[Mapping[str, Any] | None]  # the records' own dicts, for declared fields
    vectors: list[Any]
    created_at: list[datetime | None]
    updated_at: list[datetime | None]
    to_encode: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ids)

    def vector_array(self, dimension: int | None) -> npt.NDArray[np.float32]:
        """Stack the vectors into an ``(n, dimension)`` float32 array, checking each one.

        ``dimension=None`` takes it from the first record (a collection about to be created).
        """
        source = "the collection's" if dimension is not None else "the first record's"
        out: npt.NDArray[np.float32] | None = None
        for index, vec in enumerate(self.vectors):
            if _is_boolean(vec):
                raise _bad(
                    index,
                    self.ids[index],
                    "vector holds booleans, not numbers.",
                    hint="Pass float vectors from an encoder; True/False are not coordinates.",
                )
        try:
            # One C-level conversion for the common case; the loop below explains failures.
            # A value beyond float32 becomes inf, refused below: numpy's warning would only add noise.
            with np.errstate(over="ignore", invalid="ignore"):
                stacked = np.asarray(self.vectors, dtype=np.float32)
        except (TypeError, ValueError):
            stacked = None
        if (
            stacked is not None
            and stacked.ndim == 2
            and stacked.shape[1] > 0
            and stacked.shape[1] == (dimension or stacked.shape[1])
            and np.isfinite(stacked).all()
        ):
            return stacked
        for index, vec in enumerate(self.vectors):
            try:
                with np.errstate(over="ignore", invalid="ignore"):
                    row = np.asarray(vec, dtype=np.float32)
            except (TypeError, ValueError) as exc:
                raise _bad(index, self.ids[index], "vector is not a sequence of numbers.") from exc
            if row.ndim != 1 or row.size == 0:
                raise _bad(
                    index,
                    self.ids[index],
                    f"vector must be a flat, non-empty sequence of numbers, not shape {row.shape}.",
                )
            if dimension is None:
                dimension = row.shape[0]
            if out is None:
                out = np.empty((len(self.ids), dimension), dtype=np.float32)
            if row.shape != (dimension,):
                raise VectorStoreUsageError(
                    f"Record {index} (id {self.ids[index]!r}): vector has shape {row.shape}, "
                    f"{source} dimension is {dimension}.",
                    code="E_VECTOR_STORE_DIMENSION_MISMATCH",
                    hint="Use vectors from the same encoder the collection was created with.",
                    index=index,
                    record_id=self.ids[index],
                    expected=dimension,
                )
            out[index] = row
        if out is None:
            return np.empty((0, dimension or 0), dtype=np.float32)
        bad = ~np.isfinite(out).all(axis=1)
        if bad.any():
            index = int(np.argmax(bad))
            given = np.asarray(self.vectors[index], dtype=np.float64)
            what = "NaN or infinity" if not np.isfinite(given).all() else "values too large for float32"
            raise _bad(index, self.ids[index], f"vector contains {what}.")
        return out

    def to_arrow(self, vectors: npt.NDArray[np.float32], schema: pa.Schema, now: datetime) -> pa.Table:
        """Build the Arrow table written by ``merge_insert`` (declared fields: `with_declared`)."""
        n, dimension = vectors.shape
        vector_col = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), dimension)
        stamp = pa.timestamp("us", tz="UTC")
        created = _stamps(self.created_at, now, stamp)
        updated = _stamps(self.updated_at, now, stamp)
        return pa.Table.from_arrays(
            [
                pa.array(self.ids, pa.string()),
                vector_col,
                pa.array(self.documents, pa.string()),
                pa.array(self.metadata_json, pa.string()).cast(pa.json_()),
                created,
                updated,
            ],
            schema=schema,
        )


def _is_boolean(vector: Any) -> bool:
    """Whether a vector is booleans (numpy would silently read True/False as 1.0/0.0).

    An array by its dtype; a list by its first element, so the check stays O(1) per record.
    """
    if isinstance(vector, np.ndarray):
        return bool(vector.dtype.kind == "b")
    try:
        return len(vector) > 0 and isinstance(vector[0], bool | np.bool_)
    except (TypeError, IndexError, KeyError):
        return False


def _bad(index: int, record_id: Any, detail: str, **context: Any) -> VectorStoreUsageError:
    who = f"Record {index}" + (f" (id {record_id!r})" if isinstance(record_id, str) and record_id else "")
    return _record_error(f"{who}: {detail}", index=index, record_id=record_id, **context)


def prepare_records(
    records: Iterable[Mapping[str, Any]], *, max_document_chars: int | None = None
) -> PreparedBatch:
    """Validate a batch of records; raise ``E_INVALID_VECTOR_RECORD`` naming the first bad one."""
    batch = PreparedBatch([], [], [], [], [], [], [])
    seen: dict[str, int] = {}
    # Bound methods and exact-type checks: this loop runs once per record on every upsert.
    ids, documents, metas, vectors = batch.ids, batch.documents, batch.metadata_json, batch.vectors
    dicts = batch.metadata
    created, updated, to_encode = batch.created_at, batch.updated_at, batch.to_encode
    for index, record in enumerate(records):
        if type(record) is not dict and not isinstance(record, Mapping):
            raise _bad(index, None, f"must be a mapping with an 'id', not {type(record).__name__}.")
        if not record.keys() <= RECORD_KEYS:
            unknown = set(record) - RECORD_KEYS
            raise _bad(
                index,
                record.get("id"),
                f"unknown keys {sorted(map(str, unknown))}; allowed: {sorted(RECORD_KEYS)}.",
            )
        rid = record.get("id")
        if type(rid) is not str and not isinstance(rid, str) or not rid or rid.isspace():
            raise _bad(index, rid, "`id` must be a non-empty string.")
        if len(rid) > MAX_ID_LENGTH or "\x00" in rid:
            raise _bad(index, rid[:40], f"`id` must be at most {MAX_ID_LENGTH} characters with no NUL.")
        if not _utf8(rid):
            raise _bad(index, None, "`id` is not valid Unicode (it holds a lone surrogate).")
        first = seen.setdefault(rid, index)
        if first != index:
            raise _bad(
                index, rid, f"duplicate id; record {first} has the same id. Ids in one batch must be unique."
            )
        document = record.get("document")
        if document is not None and type(document) is not str and not isinstance(document, str):
            raise _bad(index, rid, f"`document` must be a string, not {type(document).__name__}.")
        if document is not None and max_document_chars is not None and len(document) > max_document_chars:
            raise _bad(
                index,
                rid,
                f"`document` has {len(document):,} characters; the store accepts at most "
                f"{max_document_chars:,}.",
                hint="Split it into chunks (turnkit.ingest does), or raise create_vector_store("
                "max_document_chars=...).",
            )
        if document is not None and not _utf8(document):
            raise _bad(index, rid, "`document` is not valid Unicode (it holds a lone surrogate).")
        metadata = record.get("metadata")
        metadata_json = None if metadata is None else metadata_to_json(index, rid, metadata)
        vector = record.get("vector")
        if vector is None:
            if document is None:
                raise _bad(index, rid, "needs a `vector` or a `document` to encode.")
            to_encode.append(index)
        elif type(vector) is not np.ndarray and (
            isinstance(vector, str | bytes) or not hasattr(vector, "__len__")
        ):
            raise _bad(index, rid, "`vector` must be a sequence of numbers.")
        made = record.get("created_at")
        changed = record.get("updated_at")
        try:
            if made is not None:
                made = parse_timestamp(made, what="`created_at`")
            if changed is not None:
                changed = parse_timestamp(changed, what="`updated_at`")
        except ValueError as exc:
            raise _bad(index, rid, str(exc) + ".") from exc
        ids.append(rid)
        documents.append(document)
        metas.append(metadata_json)
        dicts.append(metadata)
        vectors.append(vector)
        created.append(made)
        updated.append(changed)
    return batch


def metadata_to_json(index: int, rid: str, metadata: Any) -> str:
    """``metadata`` as the JSON text stored, or ``E_INVALID_VECTOR_RECORD`` naming the record."""
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        raise _bad(index, rid, f"`metadata` must be a JSON object (a dict), not {type(metadata).__name__}.")
    problem = None if _json_clean(metadata, 0) else _json_problem(metadata)
    if problem is not None:
        raise _bad(index, rid, problem)
    try:
        return orjson.dumps(metadata, option=_JSON_OPTIONS).decode()
    except (TypeError, ValueError) as exc:
        raise _bad(index, rid, f"`metadata` is not JSON-serializable: {exc}.") from exc


def match_from_row(row: Mapping[str, Any], score_fn: Any | None) -> VectorMatch:
    """Turn one result row (a dict from Arrow) into a `VectorMatch`."""
    distance = row.get("_distance")
    metadata = row.get("metadata")
    if isinstance(metadata, str | bytes):
        metadata = orjson.loads(metadata)
    vector = row.get("vector")
    return VectorMatch(
        id=row["id"],
        score=None if distance is None or score_fn is None else score_fn(distance),
        distance=None if distance is None else float(distance),
        document=row.get("document"),
        metadata=metadata,
        vector=None if vector is None else [float(x) for x in vector],
        created_at=row.get("created_at"),
        updated_at=row.get("updated_at"),
    )


# orjson: ~10x faster than json here, and it refuses (rather than rewrites) non-string
# keys, integers beyond 64 bits and invalid Unicode; the walk above catches the rest.
_JSON_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1


def _json_problem(value: Any, path: str = "metadata", depth: int = 0) -> str | None:
    """Why ``value`` would not come back from LanceDB's JSON as it went in, or ``None``.

    Catches what JSON would change silently (a non-string key made a string,
    an integer beyond 64 bits rounded or nulled, NaN or infinity made null,
    a non-JSON value such as a UUID made a string), invalid Unicode, and
    nesting deeper than `MAX_METADATA_DEPTH` (which would otherwise end in a
    RecursionError here or in the JSON encoder).
    """
    kind = type(value)
    # Exact-type checks first: this runs once per record on every upsert.
    if kind is str:
        return None if _utf8(value) else f"`metadata` text at {path} is not valid Unicode (a lone surrogate)."
    if kind is int:
        if _INT_MIN <= value <= _INT_MAX:
            return None
        return (
            f"`metadata` integer at {path} does not fit in 64 bits; "
            "LanceDB would store it rounded or as null. Store it as a string."
        )
    if kind is bool or value is None:
        return None
    if kind is float:
        if math.isfinite(value):
            return None
        return f"`metadata` number at {path} is NaN or infinite, which JSON cannot hold."
    if (
        kind is list or kind is tuple or kind is dict or isinstance(value, Mapping)
    ) and depth >= MAX_METADATA_DEPTH:
        return (
            f"`metadata` is nested more than {MAX_METADATA_DEPTH} levels deep (at {path[:200]}); "
            "flatten it or store the deep part as a JSON string."
        )
    if kind is list or kind is tuple:
        for i, item in enumerate(value):
            found = _json_problem(item, f"{path}[{i}]", depth + 1)
            if found is not None:
                return found
        return None
    if kind is dict or isinstance(value, Mapping):
        for key, item in value.items():
            if type(key) is not str:
                return f"`{path}` keys must be strings, not {type(key).__name__} ({key!r})."
            found = _json_problem(key, f"{path} key {key!r}", depth) or _json_problem(
                item, f"{path}.{key}", depth + 1
            )
            if found is not None:
                return found
        return None
    for base in (bool, int, float, str):  # subclasses (IntEnum, StrEnum): judge the plain value
        if isinstance(value, base):
            return _json_problem(base(value), path, depth)
    return (
        f"`metadata` value at {path} is a {kind.__name__}, not JSON; "
        "use text, numbers, booleans, null, lists and objects."
    )


def _json_clean(value: Any, depth: int) -> bool:
    """True if `_json_problem` finds nothing: the same checks without building a path for each value.

    Every upsert runs this once per record; the full walk builds two strings per key, which
    made it most of the write path's Python. A false here only sends the record to that walk.
    """
    kind = type(value)
    if kind is dict:
        if depth >= MAX_METADATA_DEPTH:
            return False
        for key, item in value.items():
            if type(key) is not str or not (key.isascii() or _utf8(key)):
                return False
            sort = type(item)
            if sort is str:
                if not (item.isascii() or _utf8(item)):
                    return False
            elif sort is int:
                if not _INT_MIN <= item <= _INT_MAX:
                    return False
            elif sort is float:
                if not math.isfinite(item):
                    return False
            elif not (sort is bool or item is None or _json_clean(item, depth + 1)):
                return False
        return True
    if kind is list or kind is tuple:
        return depth < MAX_METADATA_DEPTH and all(_json_clean(item, depth + 1) for item in value)
    if kind is str:
        return value.isascii() or _utf8(value)
    if kind is int:
        return bool(_INT_MIN <= value <= _INT_MAX)
    if kind is float:
        return math.isfinite(value)
    return kind is bool or value is None  # anything else (subclasses, mappings): the full walk decides


def _utf8(text: str) -> bool:
    # A lone surrogate (from a bad decode) cannot be written to Arrow's UTF-8 columns.
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _stamps(values: list[datetime | None], now: datetime, stamp: pa.DataType) -> pa.Array:
    # Most batches carry no timestamps: fill from one integer instead of n datetimes.
    if all(v is None for v in values):
        micros = (now - _EPOCH) // timedelta(microseconds=1)  # exact, unlike float seconds
        return pa.array(np.full(len(values), micros, dtype=np.int64), stamp)
    return pa.array([v or now for v in values], stamp)
