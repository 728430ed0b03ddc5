"""Which vector index ``create_index('auto')`` builds, and the search knobs that keep recall as rows grow.

Pure functions of the row count, so the policy is easy to read, test and
change. The figures behind them: recall@10 of HNSW-SQ against exact search on
the benches' clustered 256-d data (``bench/index_recall.py``, lancedb 0.40,
LanceDB's default build parameters, which indexes built before 0.3 have;
see docs/performance.md). Indexes built since have a measured recall curve
(`_recall.py`), which sets ``ef`` in place of the row-count rule below. Re-ranking with exact
distances (``refine_factor``) recovers what scalar quantization loses, and 2
gains as much as 5 or 10; ``ef`` then sets recall. With ``refine_factor=2``:
``ef=1024`` gives 0.976 at 100k rows (768 gives 0.956); at 300k ``ef=1536``
gives 0.971, 1792 gives 0.977 and 2048 gives 0.987. So ``ef`` is 1024 up to
100k rows and grows like ``rows ** 0.5`` above (1792 at 300k), which keeps
recall@10 at or above 0.97 at both measured sizes.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

__all__ = ["EXACT_ROWS", "apply_knobs", "auto_index", "default_ef", "search_knobs", "vector_index"]

EXACT_ROWS = 50_000
"""Up to this many rows ``'auto'`` builds an exact index (IVF-flat probing every partition)."""

_HNSW_GRAPH_ROWS = 1_000_000  # rows per HNSW graph (LanceDB: one graph suits most tables)
# Each graph's links: 16 per node, 150 candidates while building (LanceDB's defaults are 20 and 300).
# `bench/index_recall.py --build` on the clustered set: at 1,000,000 rows the build took 248 s against
# Chroma's 459 s in the same run, and recall@10 0.990 at ef 6,144 (20.4 ms; Chroma 0.973 at
# `ef_search` 8,192, 18.6 ms); 20:300 builds took 689 to 861 s for 0.989 at ef 4,096 (22.6 ms). At
# 300,000 rows: 54 s (20:300 107 s, Chroma 97 s), 0.991 at ef 4,096. The measured curve then
# sets `ef` for the recall target (`_recall.py`), up to its ladder's 8,192.
_HNSW_M = 16
_HNSW_CONSTRUCTION = 150
_FLAT_PARTITION_ROWS = 4_096
_PQ_REFINE = 10
# HNSW-SQ ranks by 8-bit quantized distances: re-rank 2 x (limit + offset) candidates with exact
# distances (filtered recall@10 at 100k rows went from 0.945 to 0.982 with it, bench/filters.py).
_HNSW_REFINE = 2
_HNSW_EF = 1_024  # up to _HNSW_EF_ROWS rows
_HNSW_EF_ROWS = 100_000
_HNSW_EF_MAX = 8_192  # the top of `_recall.LADDER`


def auto_index(rows: int) -> tuple[str, dict[str, Any]]:
    """The index type and build parameters ``create_index('auto')`` uses for ``rows`` rows.

    Small collections get an IVF-flat index searched exhaustively (exact, and
    they are usually served from memory anyway); larger ones get HNSW with
    scalar quantization, one graph per million rows, 16 links a node.
    """
    if rows <= EXACT_ROWS:
        return "ivf_flat", {"num_partitions": _flat_partitions(rows)}
    partitions = max(1, math.ceil(rows / _HNSW_GRAPH_ROWS))
    return "hnsw_sq", {"num_partitions": partitions, "m": _HNSW_M, "ef_construction": _HNSW_CONSTRUCTION}


def default_ef(rows: int, wanted: int) -> int:
    """HNSW candidate list size for ``rows`` indexed rows and ``wanted`` = limit + offset results."""
    ef = _HNSW_EF
    if rows > _HNSW_EF_ROWS:
        ef = 64 * math.ceil(_HNSW_EF * (rows / _HNSW_EF_ROWS) ** 0.5 / 64)
    return int(min(_HNSW_EF_MAX, max(ef, _HNSW_REFINE * wanted, 64)))


def search_knobs(
    index_type: str | None,
    rows: int,
    wanted: int,
    nprobes: int | None,
    refine_factor: int | None,
    ef: int | None,
) -> tuple[int | None, int | None, int | None]:
    """The ``(nprobes, refine_factor, ef)`` a search uses; explicit values always win.

    Args:
        index_type: LanceDB's name of the vector index (``IvfHnswSq``…), or ``None``.
        rows: Rows in the collection when the index was last built or optimized.
        wanted: ``limit + offset`` of the query.
        nprobes: The query's own value, if any (same for the next two).
        refine_factor: The query's own value.
        ef: The query's own value.
    """
    kind = (index_type or "").lower()
    if "hnsw" in kind:
        if ef is None:
            ef = max(default_ef(rows, wanted), (refine_factor or 0) * wanted)
        if refine_factor is None and ef >= _HNSW_REFINE * wanted:  # LanceDB needs ef >= limit x refine
            refine_factor = _HNSW_REFINE
        if nprobes is None and rows > _HNSW_GRAPH_ROWS:
            nprobes = math.ceil(rows / _HNSW_GRAPH_ROWS)  # every graph
    elif "pq" in kind:
        if refine_factor is None:
            refine_factor = _PQ_REFINE
    elif "flat" in kind and nprobes is None and 0 < rows <= EXACT_ROWS:
        nprobes = _flat_partitions(rows)  # exhaustive: exact results
    return nprobes, refine_factor, ef


def apply_knobs(query: Any, knobs: tuple[int | None, int | None, int | None]) -> Any:
    """``query`` (a LanceDB vector query) with the ``(nprobes, refine_factor, ef)`` of `search_knobs` set."""
    nprobes, refine, ef = knobs
    if nprobes is not None:
        query = query.nprobes(nprobes)
    if refine is not None:
        query = query.refine_factor(refine)
    if ef is not None:
        query = query.ef(ef)
    return query


def _flat_partitions(rows: int) -> int:
    return max(1, rows // _FLAT_PARTITION_ROWS)


def vector_index(indices: Iterable[Any]) -> Any | None:
    """The index on the ``vector`` column among LanceDB's ``list_indices()``, if any."""
    return next((i for i in indices if "vector" in list(getattr(i, "columns", []) or [])), None)
