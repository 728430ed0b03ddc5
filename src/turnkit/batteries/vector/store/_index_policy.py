"""Which vector index ``create_index('auto')`` builds, and the search knobs that keep recall as rows grow.

Pure functions of the row count, so the policy is easy to read, test and
change. The figures behind them (recall@10 of HNSW-SQ on 256-d vectors with
lancedb 0.40, see docs/store.md): ``ef=128`` gives 0.976 at 100k rows, 0.957
at 300k and 0.918 at 1M; ``ef=256`` gives 0.984 at 300k and 0.965 at 1M. The
``ef`` needed grows roughly like ``rows ** 0.6``; the rule below follows that
curve with a margin, so recall@10 stays at or above 0.97.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["EXACT_ROWS", "auto_index", "default_ef", "search_knobs"]

EXACT_ROWS = 50_000
"""Up to this many rows ``'auto'`` builds an exact index (IVF-flat probing every partition)."""

_HNSW_GRAPH_ROWS = 1_000_000  # rows per HNSW graph (LanceDB: one graph suits most tables)
_FLAT_PARTITION_ROWS = 4_096
_PQ_REFINE = 10
# HNSW-SQ ranks by 8-bit quantized distances; re-ranking twice the candidates by the full vectors
# lifted filtered recall@10 from 0.945 to 0.982 at 100k rows for about 1 ms (bench/filters.py data).
_HNSW_REFINE = 2


def auto_index(rows: int) -> tuple[str, dict[str, Any]]:
    """The index type and build parameters ``create_index('auto')`` uses for ``rows`` rows.

    Small collections get an IVF-flat index searched exhaustively (exact, and
    they are usually served from memory anyway); larger ones get HNSW with
    scalar quantization, one graph per million rows.
    """
    if rows <= EXACT_ROWS:
        return "ivf_flat", {"num_partitions": _flat_partitions(rows)}
    return "hnsw_sq", {"num_partitions": max(1, math.ceil(rows / _HNSW_GRAPH_ROWS))}


def default_ef(rows: int, wanted: int) -> int:
    """HNSW candidate list size for ``rows`` indexed rows and ``wanted`` = limit + offset results."""
    ef = 160 if rows <= 100_000 else 16 * math.ceil(160 * (rows / 100_000) ** 0.6 / 16)
    return int(min(2_048, max(ef, 2 * wanted, 64)))


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
            ef = default_ef(rows, wanted)
        if refine_factor is None and "sq" in kind:
            refine_factor = _HNSW_REFINE
        if nprobes is None and rows > _HNSW_GRAPH_ROWS:
            nprobes = math.ceil(rows / _HNSW_GRAPH_ROWS)  # every graph
    elif "pq" in kind:
        if refine_factor is None:
            refine_factor = _PQ_REFINE
    elif "flat" in kind and nprobes is None and 0 < rows <= EXACT_ROWS:
        nprobes = _flat_partitions(rows)  # exhaustive: exact results
    return nprobes, refine_factor, ef


def _flat_partitions(rows: int) -> int:
    return max(1, rows // _FLAT_PARTITION_ROWS)
