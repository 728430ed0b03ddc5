"""An HNSW graph over a memory copy's vectors, for unfiltered searches of up to 10 results.

The exact pass costs rows x dimension whatever is asked. A graph walk costs
what its expansion costs, and the expansion a recall target needs depends on
how the questions sit among the rows: on text it can be small (256 at 100,000
passages), on clustered synthetic data it is large (2,048), where the walk is
slower than the exact pass. So the graph is built only once a collection has
kept ``SAMPLE`` of its own queries (``_asked.py``), its expansion is the
smallest whose recall@10 on them meets the store's target (the lower bound of
a 95% interval, ``lower_bound``, against the exact pass's answers), and it
answers only where it was measured more than ``_MARGIN`` times faster than the
exact pass on the same queries; else the copy keeps its exact pass. Under
cosine it holds int8 codes of the unit vectors (a quarter of the bytes to
read), and the walk's best 40 are ranked again by their exact distances.

A graph is built on one version's copy and follows the next ones: rows added
or whose vector changed are added, removed ones removed, on a copy of the
graph (the old copy may still be searching it), while the new copy answers
exactly. Once more than a quarter of the rows were removed or added since it
was built (a removed row stays in the graph, marked), it is built again; a
change of rows by more than ``_DRIFT`` measures it again. usearch (``pip
install 'turnkit[ann]'``) walks it; without usearch there is no graph.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np
import numpy.typing as npt

from turnkit.batteries.vector.store._recall import LADDER, K, lower_bound
from turnkit.batteries.vector.store._scores import Metric

__all__ = ["Graph", "available", "build", "follow", "graph_bytes", "measure", "near"]

_METRICS = {"cosine": "cos", "dot": "ip", "l2": "l2sq"}
# A build at expansion 256 (usearch's default is 128) takes 1.8x as long and saves more at search:
# at 100,000 text vectors the kept queries met the target at 192 instead of 384 (0.62 ms, not 1.35).
_CONNECTIVITY, _EXPANSION_ADD = 16, 256
# The walk's best 40 are ranked again by their exact distances. Over int8 unit vectors the walk
# reads a quarter of the bytes, and ranking its best again recovers what the codes misorder: at
# 100,000 text vectors, expansion 256 met recall@10 0.98 (95% lower bound) in 0.73 ms, where
# float32 needed 192 and 1.45 ms (bench/memory_ann.py). 40, not 20: on the synthetic clusters at
# 300,000 rows the best 20 never met 0.98 (0.972 at expansion 4,096) and the best 40 met it at
# 3,072; on text both chose the same expansion, the 40 costing 1% more a walk.
_CANDIDATES = 4 * K
_CHUNK = 2_048  # rows added between two looks at whether the work is still wanted
_MARGIN = 1.25  # the graph answers only when this much faster: the exact pass is exact
_REBUILD = 0.25  # a share of changed rows above which building again is as cheap as following
_DRIFT = 1.25  # rows may change by this factor before the expansion is measured again

Rows = npt.NDArray[np.int64]
Wanted = Callable[[], bool]


@cache
def available() -> bool:
    """Whether usearch is installed."""
    return importlib.util.find_spec("usearch") is not None


def near(measured: int | None, rows: int) -> bool:
    """Whether ``rows`` is within `_DRIFT` of the row count a graph was ``measured`` at (``None``: never)."""
    return measured is not None and measured / _DRIFT <= rows <= measured * _DRIFT


def graph_bytes(rows: int, dimension: int, metric: Metric) -> int:
    """About how many bytes a graph over ``rows`` vectors takes: its codes and links.

    usearch at 100,000 x 256: 85 MB with int8 codes, 152 MB with float32.
    """
    return rows * ((dimension if metric == "cosine" else 4 * dimension) + 600)


@dataclass(slots=True)
class Graph:
    """A graph over one copy's rows, and whether (and at which expansion) it answers searches."""

    index: Any  # usearch.index.Index; its keys are `keys`' values
    keys: dict[str, int]  # each row's id -> its key; a row kept across versions keeps its key
    rows: Rows  # key -> row of the copy the graph serves (-1: not in it)
    next_key: int
    expansion: int | None = None  # None: not measured yet, or not worth using
    walk_ms: float = 0.0  # a walk at `expansion`, as measured against the exact pass
    measured_rows: int = 0
    reason: str = "not measured yet"
    unit: bool = False  # holds int8 codes of unit vectors (cosine), and is walked with unit queries
    churn: int = 0  # rows removed and added since the build: removed ones stay in the graph, marked

    @property
    def nbytes(self) -> int:
        return int(self.index.memory_usage) + self.rows.nbytes + len(self.keys) * 100

    def usable(self, wanted: int) -> bool:
        """Whether the graph answers a search for ``wanted`` results (its recall was measured on 10)."""
        return self.expansion is not None and wanted <= K

    def candidates(self, query: npt.NDArray[np.float32], wanted: int) -> Rows:
        """Rows of the copy the graph serves, the walk's best 40 (unordered; ``wanted`` is at most 10)."""
        found = self.index.search(_unit(query) if self.unit else query, _CANDIDATES, threads=1)
        rows: Rows = self.rows[found.keys]
        return rows[rows >= 0]


def _unit(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """``vectors`` (rows, or one) scaled to length 1: int8 codes hold coordinates in [-1, 1]."""
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return np.asarray(vectors / np.where(norms > 0, norms, 1.0), dtype=np.float32)


def _add(
    index: Any, keys: Rows, vectors: npt.NDArray[np.float32], unit: bool, threads: int, wanted: Wanted
) -> bool:
    """Add ``vectors`` under ``keys`` a chunk at a time; ``False`` if the work stopped being wanted."""
    for start in range(0, len(keys), _CHUNK):
        if not wanted():
            return False
        stop = start + _CHUNK
        chunk = vectors[start:stop]
        index.add(keys[start:stop].astype(np.uint64), _unit(chunk) if unit else chunk, threads=threads)
    return True


def build(
    matrix: npt.NDArray[np.float32], ids: list[str], metric: Metric, threads: int, wanted: Wanted
) -> Graph | None:
    """A new graph over ``matrix``'s rows (``None`` if the work stopped being wanted)."""
    from usearch.index import Index  # here: only a store that builds a graph loads it

    index = Index(
        ndim=matrix.shape[1],
        metric=_METRICS[metric],
        # Cosine ranks unit vectors, which int8 codes hold; dot and l2 need the vectors' own lengths.
        dtype="i8" if metric == "cosine" else "f32",
        connectivity=_CONNECTIVITY,
        expansion_add=_EXPANSION_ADD,
    )
    keys = np.arange(len(ids), dtype=np.int64)
    unit = metric == "cosine"
    if not _add(index, keys, matrix, unit, threads, wanted):
        return None
    return Graph(index, dict(zip(ids, range(len(ids)), strict=True)), keys, len(ids), unit=unit)


def follow(
    graph: Graph,
    old: npt.NDArray[np.float32],
    new: npt.NDArray[np.float32],
    ids: list[str],
    threads: int,
    wanted: Wanted,
) -> Graph | None:
    """``graph`` over the rows of ``old`` brought, on a copy, to those of ``new`` (ids ``ids``).

    ``None``: so much changed that building again costs as little, or the work stopped being wanted.
    """
    keys = np.fromiter((graph.keys.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
    known = np.flatnonzero(keys >= 0)
    old_rows = graph.rows[keys[known]]
    # A row kept under its id but with another vector is removed and added again.
    same = np.ones(len(known), dtype=bool)
    for start in range(0, len(known), _CHUNK):
        part = slice(start, start + _CHUNK)
        same[part] = (old[old_rows[part]] == new[known[part]]).all(axis=1)
    kept = np.zeros(graph.next_key, dtype=bool)
    kept[keys[known[same]]] = True
    gone = np.flatnonzero(~kept & (graph.rows >= 0))  # removed, or changed (added again below)
    added = np.flatnonzero(keys < 0)
    fresh = np.concatenate([known[~same], added])  # rows of `new` to add
    churn = graph.churn + len(gone) + len(fresh)
    if churn > _REBUILD * max(len(ids), 1):
        return None
    keys[added] = np.arange(graph.next_key, graph.next_key + len(added))
    index = graph.index.copy()  # the old copy may still be walking the original
    if len(gone):
        index.remove(gone.astype(np.uint64))
    if not _add(index, keys[fresh], new[fresh], graph.unit, threads, wanted):
        return None
    next_key = graph.next_key + len(added)
    rows = np.full(next_key, -1, dtype=np.int64)
    rows[keys] = np.arange(len(ids))
    moved = Graph(
        index, dict(zip(ids, keys.tolist(), strict=True)), rows, next_key, churn=churn, unit=graph.unit
    )
    if graph.expansion is not None and near(graph.measured_rows, len(ids)):
        moved.expansion, moved.measured_rows = graph.expansion, graph.measured_rows
        moved.reason, moved.walk_ms = graph.reason, graph.walk_ms
    return moved


def measure(
    graph: Graph,
    rows: int,
    queries: Sequence[npt.NDArray[np.float32]],
    target: float,
    exact: Callable[[npt.NDArray[np.float32]], Rows],
    walk: Callable[[npt.NDArray[np.float32]], Rows],
) -> None:
    """Choose ``graph``'s expansion on ``queries``, and whether it answers at all (before it is used).

    ``exact(query)`` is the copy's exact pass and ``walk(query)`` the graph's search, each giving
    the rows of the top 10. The ladder stops at the first expansion that meets ``target``, or
    where a walk is already too slow to pay; the chosen one is then timed against the exact pass
    on the same queries, alternated, so load on the machine weighs on both alike.
    """
    graph.measured_rows = rows
    truths, passed = zip(*(_timed(exact, q) for q in queries), strict=True)
    for chosen in LADDER:
        graph.index.expansion_search = chosen
        found, walked = zip(*(_timed(walk, q) for q in queries), strict=True)
        bound = lower_bound([len(np.intersect1d(f, t)) for f, t in zip(found, truths, strict=True)])
        if bound >= target:
            break
        if np.median(walked) * _MARGIN >= np.median(passed):
            graph.expansion = None
            graph.reason = (
                f"declined: at expansion {chosen} recall@10 on {len(queries)} kept queries is "
                f"{bound:.3f} (95% lower bound), under {target}, and a walk already takes "
                f"{np.median(walked) * 1e3:.2f} ms against the exact pass's {np.median(passed) * 1e3:.2f} ms"
            )
            return
    else:
        graph.expansion = None
        graph.reason = (
            f"declined: recall@10 on {len(queries)} kept queries stays under {target} "
            f"up to expansion {LADDER[-1]}"
        )
        return
    pairs = [(_timed(walk, q)[1], _timed(exact, q)[1]) for q in queries]
    graph_ms, exact_ms = (float(np.median(times)) * 1e3 for times in zip(*pairs, strict=True))
    facts = (
        f"expansion {chosen} meets recall@10 {target} on {len(queries)} kept queries, "
        f"{graph_ms:.2f} ms a search against the exact pass's {exact_ms:.2f} ms"
    )
    if graph_ms * _MARGIN < exact_ms:
        graph.expansion, graph.reason, graph.walk_ms = chosen, f"answers: {facts}", graph_ms
    else:
        graph.expansion, graph.reason = None, f"declined: {facts}"


def _timed(
    fn: Callable[[npt.NDArray[np.float32]], Rows], query: npt.NDArray[np.float32]
) -> tuple[Rows, float]:
    started = time.perf_counter()
    found = fn(query)
    return found, time.perf_counter() - started
