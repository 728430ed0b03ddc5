"""Matches built column by column (from Arrow results or the in-memory copy), not row by row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any

import numpy as np
import orjson
import pyarrow as pa

from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.store._scores import Metric

__all__ = ["json_texts", "matches_from_arrow", "matches_from_columns", "scores_from_distances"]


def scores_from_distances(metric: Metric, distances: np.ndarray[Any, Any]) -> list[float]:
    """`score_from_distance` for many distances at once (the same float64 arithmetic)."""
    d = distances.astype(np.float64)
    scores = 1.0 / (1.0 + np.maximum(d, 0.0)) if metric == "l2" else 1.0 - d / 2.0
    result: list[float] = np.clip(scores, 0.0, 1.0).tolist()
    return result


# Up to this many matches the scores are computed on Python floats (the same float64 operations,
# so the same bits): numpy's per-call overhead is most of the cost for a handful of values.
_PYTHON_SCORES = 64


def _scores(metric: Metric, dist: list[float]) -> list[float]:
    if metric == "l2":
        return [min(max(1.0 / (1.0 + max(d, 0.0)), 0.0), 1.0) for d in dist]
    return [min(max(1.0 - d / 2.0, 0.0), 1.0) for d in dist]


# A match built without the frozen dataclass's __init__: it sets each of the nine fields through
# object.__setattr__, 3.2 us a match, a tenth of a lone search of 1,000 rows in memory; the slots'
# own setters take half that. The field list is checked here, so a new field cannot go unset.
if tuple(f.name for f in fields(VectorMatch)) != (
    "id",
    "score",
    "distance",
    "document",
    "metadata",
    "vector",
    "created_at",
    "updated_at",
    "duplicates",
):  # pragma: no cover - a change to VectorMatch must update `_match` with it
    raise ImportError("VectorMatch's fields changed: update _bulk_matches._match")
_new = object.__new__
_id, _score, _distance, _document, _metadata, _vector, _created, _updated, _duplicates = (
    getattr(VectorMatch, f.name).__set__ for f in fields(VectorMatch)
)


def _match(
    rid: str, score: Any, distance: Any, document: Any, metadata: Any, vector: Any, made: Any, changed: Any
) -> VectorMatch:
    """``VectorMatch(rid, score, ...)``, the same object, built faster."""
    match: VectorMatch = _new(VectorMatch)
    _id(match, rid)
    _score(match, score)
    _distance(match, distance)
    _document(match, document)
    _metadata(match, metadata)
    _vector(match, vector)
    _created(match, made)
    _updated(match, changed)
    _duplicates(match, ())
    return match


def matches_from_columns(
    ids: Sequence[str],
    distances: np.ndarray[Any, Any] | None,
    metric: Metric,
    *,
    documents: Sequence[Any] | None = None,
    metadata_json: Sequence[Any] | None = None,
    vectors: Sequence[Any] | None = None,
    created_at: Sequence[Any] | None = None,
    updated_at: Sequence[Any] | None = None,
) -> list[VectorMatch]:
    """One `VectorMatch` per id; a column left out is ``None`` in every match."""
    n = len(ids)
    empty: list[Any] = [None] * n
    metadata = (
        empty
        if metadata_json is None
        else [None if text is None else orjson.loads(text) for text in metadata_json]
    )
    if distances is None:
        dist: list[Any] = empty
        scores: list[Any] = empty
    else:
        dist = distances.astype(np.float64).tolist()
        scores = _scores(metric, dist) if n <= _PYTHON_SCORES else scores_from_distances(metric, distances)
    docs = empty if documents is None else documents
    vecs = empty if vectors is None else vectors
    made = empty if created_at is None else created_at
    changed = empty if updated_at is None else updated_at
    return [
        _match(ids[i], scores[i], dist[i], docs[i], metadata[i], vecs[i], made[i], changed[i])
        for i in range(n)
    ]


def json_texts(array: pa.ChunkedArray) -> list[Any]:
    """A column's values; the JSON metadata column's as their text (its extension type decodes slowly)."""
    if isinstance(array.type, pa.ExtensionType):
        array = pa.chunked_array([chunk.storage for chunk in array.chunks], array.type.storage_type)
    values: list[Any] = array.to_pylist()
    return values


def _vector_lists(column: pa.ChunkedArray) -> list[Any]:
    """Each row's vector as a list of floats: one numpy ``tolist`` rather than a float() per value."""
    array = column.combine_chunks()
    if array.null_count or not pa.types.is_fixed_size_list(array.type) or len(array) == 0:
        return [None if v is None else [float(x) for x in v] for v in array.to_pylist()]
    flat = array.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    result: list[Any] = flat.reshape(len(array), array.type.list_size).tolist()
    return result


def matches_from_arrow(table: pa.Table, metric: Metric) -> list[VectorMatch]:
    """Matches from a LanceDB result table (``_distance`` included for searches)."""
    names = set(table.column_names)

    def column(name: str) -> list[Any] | None:
        if name not in names:
            return None
        return json_texts(table.column(name))

    distances = table.column("_distance").to_numpy(zero_copy_only=False) if "_distance" in names else None
    vectors = _vector_lists(table.column("vector")) if "vector" in names else None
    return matches_from_columns(
        table.column("id").to_pylist(),
        distances,
        metric,
        documents=column("document"),
        metadata_json=column("metadata"),
        vectors=vectors,
        created_at=column("created_at"),
        updated_at=column("updated_at"),
    )
