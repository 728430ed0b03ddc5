"""Small collections searched exactly from memory: one matrix-vector product and a top-k.

Within `MemoryCache`'s limits, a collection's vectors (a float32 matrix plus
inverse norms for cosine), ids, documents, metadata and timestamps are read
once into memory and kept until the table's version changes. A search is then
one matrix-vector product, a partition for the top k and a lexsort that breaks
distance ties by id, so the order is deterministic. Filters are evaluated over
the cached columns (``_memory_mask.py``); a filter the mask cannot express, a
post-filter, or a collection over the budget falls back to LanceDB. The same
distances as LanceDB's flat search come back (``1 - cos``, ``1 - q·v``,
squared Euclidean), so scores and thresholds mean the same on both paths.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from functools import cache, partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from turnkit._aio import cancel_before_exit, exiting, finish_before_exit, loop, to_thread
from turnkit._checks import is_int
from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.query._spec import QuerySpec
from turnkit.batteries.vector.store._bulk_matches import matches_from_columns
from turnkit.batteries.vector.store._common import log
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._memory_batch import (
    MAX_SCAN_THREADS,
    BatchedProduct,
    Finish,
    dot_tolerance,
    kth_smallest,
    scan_threads,
)
from turnkit.batteries.vector.store._memory_bm25 import LexicalIndex
from turnkit.batteries.vector.store._memory_graph import (
    Graph,
    available,
    build,
    follow,
    graph_bytes,
    measure,
    near,
)
from turnkit.batteries.vector.store._memory_int8 import Int8Copy, pays
from turnkit.batteries.vector.store._memory_mask import PathColumn, filter_mask, path_column
from turnkit.batteries.vector.store._planner import GraphCost, Path, SearchPlan, plan
from turnkit.batteries.vector.store._recall import SAMPLE, K, RecallCurve
from turnkit.batteries.vector.store._scores import Metric

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._asked import Asked

__all__ = [
    "INLINE_WORK",
    "LONE_INLINE_WORK",
    "CachedCollection",
    "MemoryCache",
    "MemoryCacheStats",
    "MemoryIndex",
    "default_budget",
    "usable_memory",
]

_COLUMNS = ("id", "vector", "document", "metadata", "created_at", "updated_at")
# Above this many multiply-adds the product runs on a worker thread (numpy
# releases the GIL), so concurrent queries overlap instead of queueing on the loop.
INLINE_WORK = 1_000_000
# Up to this many, a search alone on its copy runs in the caller's thread all the same: handing it
# to a worker and back costs two thread wake-ups, a third of a lone search's time at 10,000 rows
# of 256 floats on a busy machine, and there is no other search for the worker to overlap it with.
# Above it the pass is long enough that the hand over costs little and the caller's loop stays free.
LONE_INLINE_WORK = 8_000_000
_MASKS_KEPT = 32
# A first copy of more floats than this that the planner chose over the index is read after the
# index answers (`_read_behind`): a million rows of 256 floats took 4.5 s to read, so 65,536 ~0.3 s.
_READ_INLINE = 2**24
# Planned searches a pending graph may wait with no build under way before it counts as declined:
# ten times the queries a build waits for, so a build that starts late is not cut short.
_PATIENCE = 10 * SAMPLE


@cache
def usable_memory(cgroup: str = "/sys/fs/cgroup", own: str = "/proc/self/cgroup") -> int | None:
    """Bytes of memory this process may use: its cgroups' limits, or the machine's RAM (``None``: unknown).

    cgroup v2: the ``memory.max`` of the process's own group (``own`` names it) and of each group
    above it, up to ``cgroup``; then v1's ``memory.limit_in_bytes`` (whose "no limit" is a huge
    number, which the RAM bounds anyway).
    """
    limits = []
    try:
        limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or no such name
        pass
    try:
        with open(own, encoding="utf-8") as groups:
            path = next((line[3:].strip() for line in groups if line.startswith("0::")), "/")
    except OSError:
        path = "/"
    parts = [part for part in path.split("/") if part and part != ".."]
    files = [os.path.join(cgroup, *parts[:depth], "memory.max") for depth in range(len(parts), -1, -1)]
    for file in [*files, os.path.join(cgroup, "memory", "memory.limit_in_bytes")]:
        try:
            with open(file, encoding="ascii") as limit:
                text = limit.read().strip()
        except OSError:
            continue
        if text.isdigit():
            limits.append(int(text))
    limits = [limit for limit in limits if limit > 0]  # sysconf's -1, a limit of 0: nothing known
    return min(limits) if limits else None


def default_budget() -> int:
    """`MemoryCache.max_bytes`'s default: a quarter of `usable_memory`, 1 GiB where that is unknown."""
    usable = usable_memory()
    return 2**30 if usable is None else usable // 4


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryCache:
    """When a store keeps a collection in memory for exact, LanceDB-free searches.

    A collection is cached when it has at most ``max_rows`` rows *or* its
    vectors take at most ``max_vector_bytes``, and it fits ``max_bytes``.

    Attributes:
        max_rows: Collections with at most this many rows are cached whatever
            the size of their vectors: LanceDB's own answer for them is an
            exact scan as well (``create_index('auto')`` builds an exhaustive
            IVF-flat index up to 50,000 rows), and memory is faster.
        max_vector_bytes: Larger collections are cached while their vector
            matrix (rows × dimension × 4 bytes) is at most this big: one exact
            pass over it is usually still faster than an HNSW index tuned to
            recall@10 0.97 (the default, 128 MiB, is 131,072 rows of 256 floats
            or 87,381 of 384; see docs/performance.md). Above it the index
            answers. Where the HNSW index's cost was measured at its build,
            the planner (``_planner.py``) chooses unfiltered searches' path
            by the two estimated costs instead, within ``max_bytes``.
        max_bytes: Memory budget for all of one store's cached collections;
            the least recently searched collection is dropped first. The
            default is a quarter of the memory this process may use (the
            lowest limit of its cgroup and those above it, else the
            machine's RAM; 1 GiB where neither can be read; `usable_memory`):
            4 GiB on a 16 GiB machine holds a million rows of 256 floats
            (about 1.6 GiB with their int8 codes), where the exact pass from
            memory was measured faster than the index and than Chroma
            (docs/performance.md); 1 GiB holds 300,000 rows with a graph
            under cosine.
        threads: How many threads (1 to 16) one pass over a large matrix
            (over about a million multiply-adds) is split across; ``None``
            is the cores the process may use (its CPU quota in a container),
            at most 4. The answers are the same bits for any value; ``1``
            keeps every search on one core.
        refresh: What a search does when the collection changed since its
            copy was read (a write, here or under ``read_consistency_interval``
            by another process). ``"background"`` (the default): LanceDB
            answers it, with the write, while the copy is read again off the
            search's path; searches use memory again once it is. ``"inline"``:
            the search reads the copy again first and answers from it.
            Reading the copy costs more than a LanceDB search, so an agent
            that writes a memory every turn and searches the next turn waits
            for LanceDB, not for the reload. The first search of a collection
            reads its copy inline either way, except a large one (over 2**24
            floats) that the planner chose over the collection's index by
            measurement: with ``"background"``, the index answers until that
            copy is read.
        full_text: Whether hybrid search's full-text leg is answered from
            the copy too, with LanceDB's own BM25 scores and order (posting
            lists built on a version's first hybrid search: about 8 bytes per
            distinct word of each row, within ``max_bytes``). Text, queries or
            an index it cannot score exactly as LanceDB go to LanceDB.
        graph_rows: Copies of at least this many rows get an HNSW graph
            (usearch, ``pip install 'turnkit[ann]'``) once ``SAMPLE`` (100)
            of the collection's own queries are kept (``recall_from_queries``).
            Its expansion is the smallest that meets the store's recall target
            on those queries, and it answers unfiltered searches of up to 10
            results only where it was measured faster than the exact pass on
            them (``_memory_graph.py``); `MemoryCacheStats` says which and why.
            ``None``: never.
    """

    max_rows: int = 50_000
    max_vector_bytes: int = 128 * 2**20
    max_bytes: int = field(default_factory=default_budget)
    threads: int | None = None
    refresh: Literal["background", "inline"] = "background"
    full_text: bool = True
    graph_rows: int | None = 10_000

    def __post_init__(self) -> None:
        if self.refresh not in ("background", "inline"):
            raise VectorStoreUsageError(
                f"MemoryCache(refresh={self.refresh!r}) is not a refresh mode",
                code="E_INVALID_VECTOR_STORE_CONFIG",
                hint='Pass refresh="background" (the default) or refresh="inline".',
            )
        if self.threads is not None and not is_int(self.threads, 1, MAX_SCAN_THREADS):
            raise VectorStoreUsageError(
                f"MemoryCache(threads={self.threads!r}) is not a thread count",
                code="E_INVALID_VECTOR_STORE_CONFIG",
                hint=f"Pass an int from 1 to {MAX_SCAN_THREADS}, or None for the cores this process may use.",
            )
        if self.graph_rows is not None and not is_int(self.graph_rows, 1):
            raise VectorStoreUsageError(
                f"MemoryCache(graph_rows={self.graph_rows!r}) is not a row count",
                code="E_INVALID_VECTOR_STORE_CONFIG",
                hint="Pass a positive int, or None for no graph.",
            )

    def fits(self, rows: int, dimension: int, extra: int = 0) -> bool:
        """Whether a copy of ``rows`` vectors of ``dimension`` floats, and ``extra`` bytes, fit the budget."""
        # Roughly: the matrix, its int8 copy where one is made (`_Snapshot`, codes and the packed
        # layout: `Int8Copy.row_bytes`) and about 1 KiB of text a row.
        coded = Int8Copy.row_bytes(dimension) if rows * dimension > INLINE_WORK and pays() else 0
        return rows * (dimension * 4 + coded + 1024) + extra <= self.max_bytes

    def admits(self, rows: int, dimension: int, planned: bool = False) -> bool:
        """Whether a collection of ``rows`` vectors of ``dimension`` floats is small enough to cache.

        ``planned``: the planner chose memory for it by measurement, so only the budget bounds it.
        """
        if not self.fits(rows, dimension):
            return False
        return planned or rows <= self.max_rows or rows * dimension * 4 <= self.max_vector_bytes


@dataclass(frozen=True, slots=True)
class CachedCollection:
    """One cached collection, as `MemoryCacheStats` reports it."""

    name: str
    rows: int
    bytes: int
    version: Hashable
    loaded_seconds: float
    graph: str = ""
    """Whether an HNSW graph answers its unfiltered searches, and why (empty: none considered)."""


@dataclass(frozen=True, slots=True)
class MemoryCacheStats:
    """What a store holds in memory."""

    max_rows: int
    max_bytes: int
    bytes: int
    collections: tuple[CachedCollection, ...]
    max_vector_bytes: int = 0
    plans: tuple[SearchPlan, ...] = ()
    """Per collection with a measured HNSW index: which path its unfiltered searches take, and why."""


class _Snapshot:
    """One version of a collection, in memory."""

    def __init__(
        self,
        name: str,
        key: Hashable,
        data: pa.Table,
        dimension: int,
        metric: Metric,
        threads: int = 1,
        coarse: bool | None = None,
    ) -> None:
        """One version of ``name`` read from ``data``.

        ``coarse``: whether lone unfiltered passes read an int8 copy (`_memory_int8.py`); ``None``
        decides by whether numkong has SIMD kernels for this CPU.
        """
        started = time.perf_counter()
        self.name, self.key, self.metric = name, key, metric
        n = data.num_rows
        self.rows = n
        # Copied chunk by chunk into memory numpy allocates (not Arrow's combine_chunks): numpy asks
        # Linux for huge pages on large arrays, which made the load about 3x faster and scans faster.
        self.matrix: npt.NDArray[np.float32] = np.empty((n, dimension), dtype=np.float32)
        start = 0
        for chunk in data.column("vector").chunks:
            stop = start + len(chunk)
            flat = chunk.flatten().to_numpy(zero_copy_only=False)  # flatten() honours a slice's offset
            self.matrix[start:stop] = flat.reshape(stop - start, dimension)
            start = stop
        # Not np.linalg.norm(axis=1): it squares into a temporary the size of the matrix (7x slower).
        self.sq_norms: npt.NDArray[np.float32] = np.einsum("ij,ij->i", self.matrix, self.matrix)
        norms = np.sqrt(self.sq_norms)
        # cosine divides by the norms; l2 adds the squared norms; both precomputed once.
        self.inv_norms = np.where(norms > 0, 1.0 / np.maximum(norms, 1e-30), 0.0).astype(np.float32)
        self.top_sq = float(self.sq_norms.max()) if n else 0.0
        self.columns: dict[str, pa.Array] = {
            c: data.column(c).combine_chunks() for c in _COLUMNS if c != "vector"
        }
        metadata = self.columns["metadata"]
        # BaseExtensionType, not ExtensionType: arrow.json is a C++ extension type, and its own
        # to_pylist goes through a Python scalar per row (20x slower than the storage's strings).
        if isinstance(metadata.type, pa.BaseExtensionType):
            metadata = metadata.storage
        self.metadata_json: list[Any] = metadata.to_pylist()
        # Arrow sorts strings by UTF-8 bytes, which is code point order: Python's order for str.
        self.id_rank = np.empty(n, dtype=np.int64)
        self.id_rank[pc.sort_indices(self.columns["id"]).to_numpy()] = np.arange(n)
        self.paths: dict[tuple[str, ...], PathColumn] = {}
        self.masks: OrderedDict[str, npt.NDArray[np.bool_] | None] = OrderedDict()
        self.lists: dict[str, list[Any]] = {}
        # Searches may run in callers' threads (see MemoryIndex.search_now); the memo caches share a lock.
        self.lock = threading.Lock()
        # The int8 copy pays only where a pass goes through the product, with numkong's SIMD kernels.
        copy = None
        if self.matrix.size > INLINE_WORK and (pays() if coarse is None else coarse):
            copy = Int8Copy.of(self.matrix, self.inv_norms if metric == "cosine" else None)
        self.product = BatchedProduct(self.matrix, threads=threads, coarse=copy)
        self.in_flight = 0  # async searches of this copy started and not yet answered (`answer`)
        # The full-text leg's posting lists, built after the first hybrid search (`_lexical_index`,
        # a task meanwhile); False: this version's text or index is one memory does not score exactly.
        self.lexical: LexicalIndex | asyncio.Task[None] | None | bool = None
        self.graph: Graph | None = None  # set once built and measured to answer (`MemoryIndex._graph`)
        self.loaded_seconds = time.perf_counter() - started

    @property
    def nbytes(self) -> int:
        base = self.matrix.nbytes + self.inv_norms.nbytes + self.sq_norms.nbytes + self.id_rank.nbytes
        base += self.product.coarse.nbytes if self.product.coarse is not None else 0
        base += sum(col.nbytes for col in self.columns.values())
        base += self.lexical.nbytes if isinstance(self.lexical, LexicalIndex) else 0
        base += self.graph.nbytes if self.graph is not None else 0
        return int(base + sum(p.nbytes for p in self.paths.values()) + len(self.masks) * self.rows)

    def path(self, segments: tuple[str, ...]) -> PathColumn:
        found = self.paths.get(segments)
        if found is None:
            found = self.paths.setdefault(segments, path_column(self.metadata_json, segments))
        return found

    def mask(self, node: FilterNode) -> npt.NDArray[np.bool_] | None:
        # Keyed by repr, not the node: True == 1 and False == 0 == -0.0 (same hashes too), so
        # equal nodes can be different filters (`eq True` matches booleans, `eq 1` numbers).
        key = repr(node)
        with self.lock:
            if key in self.masks:
                self.masks.move_to_end(key)
                return self.masks[key]
        mask = filter_mask(node, self.columns, self.path)
        with self.lock:
            self.masks[key] = mask
            if len(self.masks) > _MASKS_KEPT:
                self.masks.popitem(last=False)
        return mask

    def distances(
        self,
        rows: npt.NDArray[np.intp] | None,
        query: npt.NDArray[np.float32],
        dots: npt.NDArray[np.float32] | None = None,
    ) -> npt.NDArray[np.float32]:
        """Distances from ``query`` to ``rows`` (all rows when ``None``).

        ``dots``, the dot products if already computed, is overwritten with the result.
        """
        if dots is None:
            matrix = self.matrix if rows is None else self.matrix[rows]
            # einsum, not BLAS: multi-threaded OpenBLAS is several times slower on a busy machine.
            dots = np.einsum("ij,j->i", matrix, query)
        # In place, 10x faster than the expressions' temporaries over 100,000 rows, and the same
        # bits: a + (-(b * c)) is a - b * c in IEEE arithmetic.
        if self.metric == "cosine":  # 1 - dots * inv * (1 / |q|)
            qnorm = float(np.sqrt(query.dot(query)))  # np.linalg.norm's arithmetic, without its checks
            dots *= self.inv_norms if rows is None else self.inv_norms[rows]
            dots *= -np.float32(1.0 / qnorm if qnorm else 0.0)
            dots += np.float32(1.0)
        elif self.metric == "dot":  # 1 - dots
            dots *= np.float32(-1.0)
            dots += np.float32(1.0)
        else:  # max(|v|^2 - 2 dots + |q|^2, 0)
            dots *= np.float32(-2.0)
            dots += self.sq_norms if rows is None else self.sq_norms[rows]
            dots += np.float32(query @ query)
            np.maximum(dots, np.float32(0.0), out=dots)
        return dots

    def _tolerance(self, query: npt.NDArray[np.float32], spread: float = 0.0) -> float:
        """How far past the k-th distance a batched or coarse one may make the cut (_memory_batch.py).

        ``spread``: how far each coarse dot product may be off (weighted as the int8 copy's bound is),
        beyond rounding; then the bound on each coarse distance's error instead (`top` adds it
        to the k-th exact distance of the coarse best). 0 for a batched product's.
        """
        if spread:  # the spread in the metric's units, plus the float32 rounding of either path
            factor = {"cosine": 1.0 / max(float(np.sqrt(query @ query)), 1e-30), "dot": 1.0, "l2": 2.0}
            return factor[self.metric] * spread + self._tolerance(query)
        # The dot products differ by at most dot_tolerance x |q| |v|; the arithmetic after them rounds
        # each path by a few float32 ulps of its largest term (1e-6 is 8 ulps relative).
        tolerance = dot_tolerance(self.matrix.shape[1])
        if self.metric == "cosine":
            return 2 * tolerance + 1e-6
        qq, top_sq = float(query @ query), self.top_sq
        scale = float(np.sqrt(qq * top_sq))
        if self.metric == "dot":
            return 2 * tolerance * scale + 1e-6 * (1.0 + scale)
        return 4 * tolerance * scale + 1e-6 * (top_sq + qq + 2 * scale)

    def top(
        self,
        spec: QuerySpec,
        query: npt.NDArray[np.float32],
        rows: npt.NDArray[np.intp] | None,
        dots: npt.NDArray[np.float32] | None = None,
        spread: float | None = None,
    ) -> tuple[Any, Any]:
        """Row indices and distances of the best ``offset + limit``, ties broken by id.

        ``dots`` (all rows) come from a batched product or an int8 copy when ``spread`` is not
        ``None`` (see `Finish`): the rows that can make the cut are computed again, exactly.
        """
        exact = spread is None
        dist = self.distances(rows, query, dots)
        wanted = spec.offset + spec.limit
        if wanted < len(dist):
            kth = kth_smallest(dist, wanted - 1)
            if spread:
                # Each coarse distance is within `bound` of the lone search's (`_memory_int8.py`).
                # The lone distances of the coarse best put the k-th lone one at most `ceiling`: a
                # row coarse past ceiling + bound is beaten by ``wanted`` rows. (kth + 2 x bound, the
                # cut that needs no lone distance first, held 1.7x the rows on the synthetic set.)
                bound = self._tolerance(query, spread)
                best = np.flatnonzero(dist <= kth)
                ceiling = kth_smallest(
                    self.distances(best if rows is None else rows[best], query), wanted - 1
                )
                candidates = np.flatnonzero(dist <= ceiling + bound)
            else:
                cut = kth if exact else kth + self._tolerance(query)
                candidates = np.flatnonzero(dist <= cut)
        else:
            candidates = np.arange(len(dist))
        absolute = candidates if rows is None else rows[candidates]
        if exact:
            cand_dist = dist[candidates]
        else:  # served in a batch: the lone search's distances for every row that can make the cut
            cand_dist = self.distances(absolute, query)
        return self.ranked(spec, query, absolute, cand_dist)

    def ranked(
        self, spec: QuerySpec, query: npt.NDArray[np.float32], rows: Any, dist: Any
    ) -> tuple[Any, Any]:
        """The best ``offset + limit`` of ``rows`` at distances ``dist``, ties broken by id."""
        order = np.lexsort((self.id_rank[rows], dist))[spec.offset : spec.offset + spec.limit]
        chosen = rows[order]
        chosen_dist = dist[order]
        if self.metric == "l2" and len(chosen):
            # The expansion above loses bits near zero; report the exact value like LanceDB.
            diff = self.matrix[chosen] - query
            chosen_dist = np.einsum("ij,ij->i", diff, diff)
        return chosen, chosen_dist

    def _pylist(self, column: str) -> list[Any]:
        # Python lists, made on first use: indexing them beats an Arrow take for ten rows.
        found = self.lists.get(column)
        if found is None:
            with self.lock:
                found = self.lists.setdefault(column, self.columns[column].to_pylist())
        return found

    def matches(self, chosen: Any, dist: Any, columns: list[str]) -> list[VectorMatch]:
        rows = chosen.tolist()
        ids = self._pylist("id")

        def pick(column: str) -> list[Any] | None:
            if column not in columns:
                return None
            values = self.metadata_json if column == "metadata" else self._pylist(column)
            return [values[i] for i in rows]

        return matches_from_columns(
            [ids[i] for i in rows],
            dist,
            self.metric,
            documents=pick("document"),
            metadata_json=pick("metadata"),
            vectors=self.matrix[chosen].tolist() if "vector" in columns else None,
            created_at=pick("created_at"),
            updated_at=pick("updated_at"),
        )

    def search(
        self, spec: QuerySpec, query: npt.NDArray[np.float32], columns: list[str]
    ) -> list[VectorMatch] | None:
        if spec.filter is None:
            return self.matches(*self.unfiltered(spec, query), columns)
        mask = self.mask(spec.filter)
        if mask is None:
            return None
        return self.matches(*self.top(spec, query, np.flatnonzero(mask)), columns)

    def walker(self, spec: QuerySpec) -> Graph | None:
        """The graph that answers ``spec`` (unfiltered, of up to 10 results, where it was measured to)."""
        graph = self.graph
        usable = spec.filter is None and graph is not None and graph.usable(spec.offset + spec.limit)
        return graph if usable else None

    def walk(self, graph: Graph, spec: QuerySpec, query: npt.NDArray[np.float32]) -> tuple[Any, Any]:
        """Rows and exact distances of ``graph``'s answer to ``spec``, ranked as the exact pass ranks."""
        rows = graph.candidates(query, spec.offset + spec.limit)
        return self.ranked(spec, query, rows, self.distances(rows, query))

    def unfiltered(self, spec: QuerySpec, query: npt.NDArray[np.float32]) -> tuple[Any, Any]:
        """Rows and distances of an unfiltered search: the graph's where it answers, else the exact pass's."""
        graph = self.walker(spec)
        return self.exact(spec, query) if graph is None else self.walk(graph, spec, query)

    def exact(self, spec: QuerySpec, query: npt.NDArray[np.float32]) -> tuple[Any, Any]:
        """Rows and distances of an unfiltered exact search, alone on the copy (no batching)."""
        if self.matrix.size > INLINE_WORK:  # concurrent searches share passes over the matrix
            return self.product.run(query, partial(self.top, spec, query, None))  # type: ignore[no-any-return]
        return self.top(spec, query, None)

    async def search_async(
        self, spec: QuerySpec, query: npt.NDArray[np.float32], columns: list[str]
    ) -> list[VectorMatch] | None:
        """`search` off the caller's loop: a filtered one on a thread, others queued for a worker."""
        if spec.filter is None and self.matrix.size > INLINE_WORK and self.walker(spec) is None:
            return await self.product.run_async(query, self._finisher(spec, query, columns))  # type: ignore[no-any-return]
        return await to_thread(self.search, spec, query, columns)

    def _finisher(self, spec: QuerySpec, query: npt.NDArray[np.float32], columns: list[str]) -> Finish:
        def finish(dots: npt.NDArray[np.float32], spread: float | None) -> list[VectorMatch]:
            return self.matches(*self.top(spec, query, None, dots, spread), columns)

        return finish


_Used = tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]  # a copy's Python lists and metadata paths


def _read(
    name: str, key: Hashable, data: pa.Table, dimension: int, metric: Metric, threads: int, used: _Used
) -> _Snapshot:
    """A new copy, with the Python lists and metadata paths the copy it replaces had made on first use.

    Made here, in the background, they do not cost the first search after it (10 ms at 20k rows).
    """
    snapshot = _Snapshot(name, key, data, dimension, metric, threads)
    lists, paths = used
    for column in lists:
        snapshot._pylist(column)
    for segments in paths:
        snapshot.path(segments)
    return snapshot


def _track(tasks: dict[str, asyncio.Task[Any]], name: str, task: asyncio.Task[Any], failed: str) -> None:
    """Hold ``task`` in ``tasks`` under ``name`` until it ends, and log ``failed`` if it raised."""
    tasks[name] = task

    def done(finished: asyncio.Task[Any]) -> None:
        if tasks.get(name) is finished:
            del tasks[name]
        error = None if finished.cancelled() else finished.exception()
        if error is not None:
            log.warning(failed, name, exc_info=error)

    task.add_done_callback(done)


def _key(table: Any, version: Hashable) -> tuple[int, Hashable]:
    """What a copy is tied to: the store's handle (a replaced table gets a new one) and its version."""
    return id(table), version


class MemoryIndex:
    """A store's in-memory copies of its small collections, within one memory budget.

    Lives on turnkit's background loop like the rest of the store's state.
    """

    def __init__(self, config: MemoryCache | None) -> None:
        self.config = config
        self._snapshots: OrderedDict[str, _Snapshot] = OrderedDict()
        self._too_big: dict[str, Hashable] = {}  # collections known to be over the limits, by key
        self._locks: dict[str, asyncio.Lock] = {}
        self._refreshing: dict[str, asyncio.Task[Any]] = {}
        self._first_reads: set[str] = set()  # of `_refreshing`: copies read behind the index (`_read_behind`)
        self._read_inline: set[str] = set()  # a first read behind failed: the next reads inline, and raises
        # Copies to read after a search, with what searches of the stale copy had made of it.
        self._stale: dict[str, tuple[Any, Hashable, int, Metric, _Used]] = {}
        # The planner's choice per collection, the facts it was made from (`plan`), and whether
        # memory answers the searches a graph does not (more than 10 results).
        self._plans: dict[str, tuple[tuple[Any, ...], SearchPlan | None, bool]] = {}
        # HNSW graphs over the copies (`_memory_graph.py`): the work under way, the collection's kept
        # queries, `Asked.noted` when the last one started, and what became of each collection's graph.
        self._graph_tasks: dict[str, asyncio.Task[None]] = {}
        self._asked: dict[str, tuple[Asked, float]] = {}
        self._graph_looked: dict[str, int] = {}
        self._graph_reasons: dict[str, str] = {}
        self._graph_declined: dict[str, int] = {}  # rows of the copy a graph was measured not to pay on
        self._answering: dict[str, _Snapshot] = {}  # the newest copy whose graph answered, to follow from
        self._graph_walks: dict[str, tuple[int, float]] = {}  # rows and ms of the last graph that answered
        self._graph_waits: dict[str, int] = {}  # planned searches while a graph was pending, no build running
        # A search from memory plans in its caller's thread while builds start on turnkit's loop: a
        # decline for want of a build, and a build's start, take this so one sees the other.
        self._graph_lock = threading.Lock()

    def plan(
        self,
        name: str,
        rows: int,
        dimension: int,
        metric: Metric,
        curve: RecallCurve | None,
        target: float,
        queries_kept: bool = True,
    ) -> SearchPlan | None:
        """The path for ``name``'s unfiltered searches, decided again when the facts changed.

        ``queries_kept``: the store keeps its collections' queries (``recall_from_queries``),
        which a graph is measured on; without them none is built.
        """
        config = self.config
        if config is None:
            return None
        graph = self._graph_cost(name, rows) if queries_kept else None
        facts = (curve, rows, dimension, target, graph)
        known = self._plans.get(name)
        if known is not None and known[0] == facts:
            return known[1]
        threads = config.threads or scan_threads()
        extra = graph_bytes(rows, dimension, metric) if graph == "pending" else 0
        fits = config.fits(rows, dimension, extra)
        if not fits and graph == "pending":  # no room for a graph: the exact pass and the index decide
            graph, fits = None, config.fits(rows, dimension)
        chosen = plan(name, rows, dimension, curve, target, fits, threads, graph)
        # What a search the graph does not answer (more than 10 results, MMR's pools) is worth:
        # the exact pass, unless the index is estimated faster than it.
        exact = chosen if graph is None else plan(name, rows, dimension, curve, target, fits, threads)
        self._plans[name] = (facts, chosen, exact is None or exact.path == "memory")
        if chosen is not None and chosen.path == "memory":
            self._too_big.pop(name, None)  # measured worth holding, whatever the size cap said
        return chosen

    def _graph_cost(self, name: str, rows: int) -> GraphCost:
        """What the planner weighs of ``name``'s graph: a measured walk, one still to measure, or none.

        Asked on every planned search. A graph still to measure gives up after `_PATIENCE`
        searches with no build under way (its queries repeat, are asked by id, or writes keep
        stopping its builds): it counts as declined, so the planner does not wait for ever.
        """
        answering = self._answering.get(name)
        if answering is not None and answering.graph is not None:
            return answering.graph.walk_ms
        config = self.config
        assert config is not None
        snapshot = self._snapshots.get(name)
        if snapshot is not None:
            rows = max(rows, snapshot.rows)  # a copy not read again since may hold fewer
        walked = self._graph_walks.get(name)
        if walked is not None and near(walked[0], rows):
            return walked[1]  # measured here before (the copy was evicted since): not built again to learn it
        if (
            config.graph_rows is None
            or rows < config.graph_rows
            or not available()
            or near(self._graph_declined.get(name), rows)
        ):
            return None
        with self._graph_lock:
            if name in self._graph_tasks or name in self._first_reads:  # a build, or the copy it needs
                return "pending"
            waited = self._graph_waits.get(name, 0) + 1
            self._graph_waits[name] = waited
            if waited <= _PATIENCE:
                return "pending"
            self._graph_waits.pop(name, None)
            self._decline(
                name,
                rows,
                f"declined: not measured after {_PATIENCE} searches with no build under way "
                f"(a graph needs {SAMPLE} distinct kept queries, and a copy that stays unchanged "
                "while it is built)",
            )
        return None

    def _read_behind(self, name: str) -> bool:
        """Whether ``name``'s first copy is read after LanceDB answers, not before.

        Where the planner chose memory over the collection's index, the index meets the recall
        target meanwhile, and a large copy takes seconds to read (a million rows of 256 floats: 4.5 s).
        """
        if self._planned_path(name) != "memory" or name in self._read_inline:
            return False
        _, rows, dimension, *_ = self._plans[name][0]
        return bool(rows * dimension > _READ_INLINE)

    def _planned_path(self, name: str) -> Path | None:
        """The path the planner last chose for ``name`` (``None``: no plan)."""
        known = self._plans.get(name)
        return None if known is None or known[1] is None else known[1].path

    async def search(
        self,
        name: str,
        table: Any,
        key: Hashable,
        dimension: int,
        metric: Metric,
        spec: QuerySpec,
        vector: npt.NDArray[Any],
        columns: list[str],
    ) -> list[VectorMatch] | None:
        """Exact matches from memory, or ``None`` when LanceDB must answer.

        ``key`` identifies the table's version as the store tracks it (commits
        of this process and, under ``read_consistency_interval``, of others):
        a different one reloads.
        """
        if self._declines(spec, name):
            return None
        config = self.config
        assert config is not None  # `_declines` otherwise
        key = _key(table, key)
        if self._too_big.get(name) == key:
            return None
        snapshot = self._snapshots.get(name)
        if snapshot is None or snapshot.key != key:
            if name in self._refreshing or name in self._stale:
                return None  # LanceDB answers while the copy is read again
            if config.refresh == "background" and (snapshot is not None or self._read_behind(name)):
                # Dropping the stale copy and reading the new one wait for `after_search`, so neither
                # competes with the LanceDB search that answers this one.
                used = ((), ()) if snapshot is None else (tuple(snapshot.lists), tuple(snapshot.paths))
                self._stale[name] = (table, key, dimension, metric, used)
                return None
            snapshot = await self._load(name, table, key, dimension, metric)
            if snapshot is None:
                return None
        self._snapshots.move_to_end(name)
        return await self.answer(snapshot, spec, vector, columns)

    def loaded(self, name: str, table: Any, key: Hashable, spec: QuerySpec) -> _Snapshot | None:
        """The current copy of a collection when one is loaded and can answer ``spec``, else ``None``.

        Lets a caller search without the hop to turnkit's loop thread (`answer`,
        or the snapshot's own ``search`` in the caller's thread).
        """
        if self._declines(spec, name):
            return None
        snapshot = self._snapshots.get(name)
        return snapshot if snapshot is not None and snapshot.key == _key(table, key) else None

    def nothing_due(self, name: str, table: Any, key: Hashable, spec: QuerySpec) -> bool:
        """Whether LanceDB answers ``spec`` with nothing for memory to do around it.

        Nothing to read or drop: the cache is off or declines the filter, or
        the collection is too big at this version, and no copy waits to be read.
        """
        if name in self._stale or name in self._refreshing:
            return False
        return self._declines(spec, name) or self._too_big.get(name) == _key(table, key)

    def _declines(self, spec: QuerySpec, name: str) -> bool:
        """Memory never answers ``spec``.

        The cache is off, the filter runs after the search, or the search is
        unfiltered and the planner measured the index cheaper.
        """
        if self.config is None:
            return True
        if spec.filter is not None:
            return not spec.prefiltered  # a masked pass is cheap: memory keeps filtered searches
        path = self._planned_path(name)
        if path == "memory" and spec.limit + spec.offset > K:  # a graph answers 10 at most
            return not self._plans[name][2]
        return path not in (None, "memory")

    @staticmethod
    async def answer(
        snapshot: _Snapshot, spec: QuerySpec, vector: npt.NDArray[Any], columns: list[str]
    ) -> list[VectorMatch] | None:
        """A snapshot's matches for a coroutine on any loop: small products inline, others off the loop.

        An unfiltered search alone on a copy of up to `LONE_INLINE_WORK` runs inline too.
        ``None`` when the snapshot cannot answer (a filter memory does not evaluate).
        """
        query = np.ascontiguousarray(vector, dtype=np.float32)
        # A walk takes about a millisecond: the hand-over to a worker thread and back would add two
        # thread wake-ups to it, and walks on two threads would not overlap (usearch 2.26 holds the
        # GIL through a search: two threads walking at once took no more CPU than one).
        if snapshot.matrix.size <= INLINE_WORK or snapshot.walker(spec) is not None:
            return snapshot.search(spec, query, columns)
        # A filter's first evaluation over the copy's metadata is not bounded by the matrix size.
        if snapshot.matrix.size > LONE_INLINE_WORK or spec.filter is not None:
            return await snapshot.search_async(spec, query, columns)
        with snapshot.lock:
            snapshot.in_flight += 1
        try:
            # One turn of the loop: searches already scheduled on it (a gather) start too, and
            # count. Alone, this one runs here; else they all go to the worker and share passes.
            await asyncio.sleep(0)
            if snapshot.in_flight == 1 and snapshot.product.idle():
                return snapshot.search(spec, query, columns)
            return await snapshot.search_async(spec, query, columns)
        finally:
            with snapshot.lock:
                snapshot.in_flight -= 1

    async def _load(
        self, name: str, table: Any, key: Hashable, dimension: int, metric: Metric, used: _Used = ((), ())
    ) -> _Snapshot | None:
        config = self.config
        assert config is not None
        lock = self._locks.setdefault(name, asyncio.Lock())
        async with lock:
            current = self._snapshots.get(name)
            if current is not None and current.key == key:
                return current
            self._snapshots.pop(name, None)
            with translate_errors("search", name):  # a table removed underneath: turnkit's error
                rows = await table.count_rows()
                if not config.admits(rows, dimension, self._planned_path(name) == "memory"):
                    self._too_big[name] = key
                    return None
                data = await table.query().select(list(_COLUMNS)).to_arrow()
            vectors = data.column("vector")
            # Nulls, or another table's vectors (recreated elsewhere with another dimension): LanceDB answers.
            if vectors.null_count or getattr(vectors.type, "list_size", dimension) != dimension:
                self._too_big[name] = key
                return None
            threads = config.threads or scan_threads()
            snapshot = await to_thread(_read, name, key, data, dimension, metric, threads, used)
            if snapshot.nbytes > config.max_bytes:  # fuller rows than `fits` supposes: LanceDB answers
                self._too_big[name] = key
                return None
            self._too_big.pop(name, None)
            self._read_inline.discard(name)
            self._snapshots[name] = snapshot
            self._evict(config.max_bytes)
            # The newest graph follows, while this copy answers exactly. Not only the replaced copy's:
            # after two quick writes that copy's own graph may still have been on its way.
            source = self._answering.get(name)
            if source is not None:
                self._start_graph(name, snapshot, source)
            else:
                if self._graph_reasons.get(name, "").startswith(("answers", "follows")):
                    del self._graph_reasons[name]  # no graph serves this copy
                if name in self._asked:  # queries were kept while it was read: a graph may be due
                    loop().call_soon_threadsafe(self.start_graph, name, *self._asked[name])
            return self._snapshots.get(name)

    def graph_wanted(self, name: str) -> bool:
        """Whether ``name``'s copy may get a graph (or is not read yet), so its queries are worth keeping."""
        config = self.config
        if config is None or config.graph_rows is None or not available():
            return False
        if name in self._too_big or self._planned_path(name) == "index":
            return False  # memory does not answer its unfiltered searches
        snapshot = self._snapshots.get(name)
        return snapshot is None or snapshot.rows >= config.graph_rows

    def graph_due(self, name: str, asked: Asked) -> bool:
        """Whether a graph for ``name`` should be built now (cheap: asked on every search)."""
        snapshot = self._snapshots.get(name)
        if snapshot is None:
            # A first copy on its way (the index answers meanwhile): `start_graph` keeps the queries,
            # and the copy's read starts the build, which waits for no further search.
            return name in self._first_reads and asked.noted - self._graph_looked.get(name, 0) >= SAMPLE
        if (
            snapshot.graph is not None
            or name in self._graph_tasks
            or asked.noted - self._graph_looked.get(name, 0) < SAMPLE
            or near(self._graph_declined.get(name), snapshot.rows)
            or not self.graph_wanted(name)
        ):
            return False
        config = self.config
        assert config is not None  # `graph_wanted` otherwise
        needed = snapshot.nbytes + graph_bytes(snapshot.rows, snapshot.matrix.shape[1], snapshot.metric)
        if needed > config.max_bytes:
            self._decline(
                name,
                snapshot.rows,
                f"not built: the copy and a graph (about {needed >> 20} MiB) would not fit "
                f"max_bytes ({config.max_bytes >> 20} MiB)",
            )
            return False
        return True

    def start_graph(self, name: str, asked: Asked, target: float) -> None:
        """Build a graph over ``name``'s copy, measured on ``asked`` (on turnkit's loop)."""
        if name not in self._plans:
            return  # forgotten (dropped or replaced) since this was scheduled: its queries go with it
        self._asked[name] = (asked, target)
        snapshot = self._snapshots.get(name)
        with self._graph_lock:
            if snapshot is not None and self.graph_due(name, asked) and not exiting():
                self._graph_looked[name] = asked.noted
                self._start_graph(name, snapshot, None)

    def _start_graph(self, name: str, snapshot: _Snapshot, old: _Snapshot | None) -> None:
        if old is not None:
            self._graph_reasons[name] = "follows the copy's changes"
        task = asyncio.ensure_future(self._graph(name, snapshot, old))
        # Optional work of many seconds (about 30 s at 100,000 rows of 256 floats): exit cancels it.
        cancel_before_exit(task)
        # A graph must never break searching: the exact pass serves.
        _track(self._graph_tasks, name, task, "turnkit: building a graph over %r's copy failed")

    async def _graph(self, name: str, snapshot: _Snapshot, old: _Snapshot | None) -> None:
        """Build (or carry over from ``old``) and measure a graph for ``snapshot``, then let it answer."""
        try:
            await self._graph_work(name, snapshot, old)
        except Exception as error:
            if self._snapshots.get(name) is not snapshot:
                raise  # an older copy's: the current one's graph stands
            self._decline(name, snapshot.rows, f"failed: {error!r}")
            raise

    async def _graph_work(self, name: str, snapshot: _Snapshot, old: _Snapshot | None) -> None:
        config = self.config
        assert config is not None

        def wanted() -> bool:  # the copy is still current, and the process is not exiting
            return self._snapshots.get(name) is snapshot and not exiting()

        threads = config.threads or scan_threads()
        ids = snapshot._pylist("id")
        graph = None
        if old is not None and old.graph is not None:
            graph = await to_thread(follow, old.graph, old.matrix, snapshot.matrix, ids, threads, wanted)
        queries: list[npt.NDArray[np.float32]] = []
        target = 0.0
        if graph is None or graph.expansion is None:
            asked, target = self._asked.get(name, (None, 0.0))
            queries = [] if asked is None else list(asked.distinct())
            if len(queries) < SAMPLE:
                self._graph_reasons[name] = f"waits for {SAMPLE} distinct kept queries ({len(queries)} now)"
                return
        if graph is None and wanted():
            self._graph_reasons[name] = f"building over {snapshot.rows} rows"
            graph = await to_thread(build, snapshot.matrix, ids, snapshot.metric, threads, wanted)
        if graph is None:
            return
        if graph.expansion is None:
            spec = QuerySpec(collection=name)
            found = graph  # for the closures: mypy does not narrow `graph` inside them

            def walk(query: npt.NDArray[np.float32]) -> Any:
                return snapshot.walk(found, spec, query)[0]

            def exact(query: npt.NDArray[np.float32]) -> Any:
                return snapshot.exact(spec, query)[0]

            await to_thread(measure, graph, snapshot.rows, queries, target, exact, walk)
        if not wanted():
            return
        if graph.expansion is not None and snapshot.nbytes + graph.nbytes > config.max_bytes:
            graph.expansion = None
            graph.reason = (
                f"declined: the copy and its graph ({(snapshot.nbytes + graph.nbytes) >> 20} MiB) "
                f"would not fit max_bytes ({config.max_bytes >> 20} MiB)"
            )
        if graph.expansion is None:
            self._decline(name, snapshot.rows, graph.reason)
        else:
            self._graph_reasons[name] = graph.reason
            snapshot.graph = graph
            self._answering[name] = snapshot
            self._graph_walks[name] = (snapshot.rows, graph.walk_ms)
            self._evict(config.max_bytes, keep=name)  # other copies make room; this one fits

    def _decline(self, name: str, rows: int, reason: str) -> None:
        """No graph serves ``name`` at about ``rows`` rows, for ``reason``.

        The planner weighs none until the rows change by a quarter (`near`).
        """
        self._graph_declined[name] = rows
        self._answering.pop(name, None)
        self._graph_walks.pop(name, None)
        self._graph_reasons[name] = reason

    def after_search(self, name: str) -> None:
        """LanceDB has answered a search of ``name``: start reading its changed copy, if one is due."""
        stale = self._stale.pop(name, None)
        if stale is None or name in self._refreshing:
            return
        task = asyncio.ensure_future(self._load(name, *stale))
        if name in self._snapshots:
            finish_before_exit(task)
        else:  # a first copy serves no search yet: a short-lived process's exit cancels its read
            cancel_before_exit(task)
            self._first_reads.add(name)
            task.add_done_callback(partial(self._first_read_done, name))
        # The next search reads the copy inline, and raises the error there.
        _track(self._refreshing, name, task, "turnkit: reading collection %r into memory failed")

    def _first_read_done(self, name: str, task: asyncio.Task[Any]) -> None:
        self._first_reads.discard(name)
        if not task.cancelled() and task.exception() is not None:
            self._read_inline.add(name)  # not read behind again and again: the next search raises

    def _evict(self, budget: int, keep: str | None = None) -> None:
        """Drop the least recently searched copies until the budget holds them (never ``keep``'s)."""
        while sum(s.nbytes for s in self._snapshots.values()) > budget:
            victim = next((name for name in self._snapshots if name != keep), None)
            if victim is None:
                return
            del self._snapshots[victim]
            self._answering.pop(victim, None)  # its graph goes with it
            self._graph_reasons.pop(victim, None)

    def forget(self, name: str) -> None:
        """Drop a collection's copy (it was dropped or replaced)."""
        held: tuple[dict[str, Any], ...] = (
            self._snapshots,
            self._too_big,
            self._stale,
            self._plans,
            self._asked,
            self._graph_looked,
            self._graph_reasons,
            self._graph_declined,
            self._answering,
            self._graph_walks,
            self._graph_waits,
        )
        for per_collection in held:
            per_collection.pop(name, None)
        self._first_reads.discard(name)
        self._read_inline.discard(name)
        for task in (self._refreshing.pop(name, None), self._graph_tasks.pop(name, None)):
            if task is not None:
                task.cancel()

    def stats(self) -> MemoryCacheStats:
        """What is cached now, and the limits."""
        config = self.config or MemoryCache(max_rows=0, max_vector_bytes=0, max_bytes=0)
        cached = tuple(
            CachedCollection(
                s.name,
                s.rows,
                s.nbytes,
                s.key[1] if isinstance(s.key, tuple) else s.key,
                s.loaded_seconds,
                s.graph.reason if s.graph is not None else self._graph_reasons.get(s.name, ""),
            )
            for s in self._snapshots.values()
        )
        plans = tuple(known[1] for known in self._plans.values() if known[1] is not None)
        return MemoryCacheStats(
            config.max_rows,
            config.max_bytes,
            sum(c.bytes for c in cached),
            cached,
            config.max_vector_bytes,
            plans,
        )
