"""Which path answers a collection's unfiltered searches: an exact pass from memory or the HNSW index.

A fixed size cap cannot choose for every data set: the exact pass costs
the same for any data of a shape (``scan_seconds``), while the ``ef`` an index
needs for the recall target, and so its cost, depends on how the data is
clustered. So where the index's cost was measured (``RecallCurve.costs``,
after its build), the planner compares the two estimates: the index
answers only when it is estimated more than ``_MARGIN`` times faster, since
the exact pass meets any recall target and the index only at the measured
``ef``. Without a measurement the memory tier's own limits decide, as they
always did. Where the copy may get an HNSW graph (``_memory_graph.py``),
memory answers while the graph is built and measured, and then the graph's
measured walk is what the index is compared with.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from turnkit.batteries.vector.store._memory_batch import BatchedProduct, kth_smallest
from turnkit.batteries.vector.store._memory_int8 import Int8Copy, pays
from turnkit.batteries.vector.store._recall import K, RecallCurve

__all__ = ["GraphCost", "Path", "SearchPlan", "plan", "scan_seconds"]

Path = Literal["memory", "index"]
# What the memory tier knows of a copy's graph: its measured walk in ms, "pending", or None.
GraphCost = float | Literal["pending"] | None
# Two shapes: a pass costs per row (its top 10, and the product's own work per row) and per
# multiply-add, and over int8 codes the first dominates (65,536 rows took 1.08 ms at 64 dimensions
# and 1.23 at 256), so one shape alone misjudged others (2.1x at 300,000 x 256). The second is wide
# so that its multiply-adds stand out of the timings' noise (at 256 they did not: 6-40 ps apart).
_SHAPES, _PASSES = ((65_536, 64), (16_384, 1_024)), 9
# The index wins only by more than this: the exact pass returns the true top 10, and each estimate
# was off by 10-30% in the bench's runs (memory 7.77 ms estimated against 7.04 measured, the index
# 7.33 against 9.65), so a near tie goes to the exact answer.
_MARGIN = 1.25
_calibrated: dict[int, tuple[float, float]] = {}  # threads -> seconds per row, per multiply-add
_calibrating = threading.Lock()


@dataclass(frozen=True, slots=True)
class SearchPlan:
    """How one collection's unfiltered searches are answered now, and why.

    Attributes:
        collection: The collection's name.
        path: ``"memory"`` (the exact pass over the in-memory copy) or
            ``"index"`` (LanceDB's HNSW index at ``ef``).
        reason: Why, in one sentence.
        memory_ms: Milliseconds of one search from memory: the exact pass's
            estimate, or the walk of the copy's graph as measured.
        index_ms: Measured milliseconds of one index search at ``ef``.
        ef: The ``ef`` that meets the store's recall target on the measured curve.
    """

    collection: str
    path: Path
    reason: str
    memory_ms: float | None
    index_ms: float | None
    ef: int


def scan_seconds(rows: int, dimension: int, threads: int) -> float:
    """Seconds of the memory tier's unfiltered pass over ``rows`` x ``dimension`` on this machine.

    The tier's own product (`BatchedProduct`, split over ``threads``, over an
    int8 copy where that is what the tier uses on this machine) and a top-10,
    timed once per process over two random matrices, 65,536 x 64 and
    16,384 x 1,024 (16 and 64 MiB of float32), the fastest of nine passes
    each. A pass's time is rows x (a cost per row + dimension x a cost per
    multiply-add), and the two shapes give both. The fastest, not the median:
    a pass is only ever slowed by other work on the machine, and one
    calibration decides every plan of the process (a median taken on a busy
    machine put the pass at 1.6-2.7x its cost).
    """
    if threads not in _calibrated:
        with _calibrating:
            if threads not in _calibrated:
                rng = np.random.default_rng(0)
                (_, narrow), (_, wide) = _SHAPES
                per_narrow_row, per_wide_row = (
                    _fastest(rng.random(shape, dtype=np.float32) - np.float32(0.5), threads) / shape[0]
                    for shape in _SHAPES
                )
                per_madd = max(per_wide_row - per_narrow_row, 0.0) / (wide - narrow)
                _calibrated[threads] = (max(per_narrow_row - narrow * per_madd, 0.0), per_madd)
    per_row, per_madd = _calibrated[threads]
    return rows * (per_row + dimension * per_madd)


def _fastest(matrix: npt.NDArray[np.float32], threads: int) -> float:
    """The fastest of `_PASSES` passes over ``matrix``, as a copy of it would make them."""
    # The pass a copy makes on this machine: over its int8 copy where numkong's SIMD kernels run.
    coarse = Int8Copy.of(matrix) if pays() else None
    product = BatchedProduct(matrix, threads=threads, coarse=coarse)
    rng = np.random.default_rng(0)
    fastest = np.inf
    for _ in range(_PASSES):
        query = rng.standard_normal((matrix.shape[1],), dtype=np.float32)
        started = time.perf_counter()
        product.run(query, lambda dots, _: kth_smallest(dots, K - 1))  # the cut a search's top 10 makes
        fastest = min(fastest, time.perf_counter() - started)
    return float(fastest)


def plan(
    name: str,
    rows: int,
    dimension: int,
    curve: RecallCurve | None,
    target: float,
    fits: bool,
    threads: int,
    graph: GraphCost = None,
) -> SearchPlan | None:
    """The path for ``name``'s unfiltered 10-result searches (``None``: no measured index cost).

    ``fits``: a copy of the collection fits the memory budget (with a graph, where ``graph`` is
    ``"pending"``). ``graph``: the milliseconds of a walk of the copy's graph, as measured
    where one answers; ``"pending"`` where one is still to be built and measured; else ``None``.
    """
    if curve is None:
        return None
    ef = curve.ef_for(target, rows, K)
    index = curve.cost_at(ef)
    if index is None:
        return None
    if not fits:
        return SearchPlan(name, "index", "a copy would not fit the memory budget", None, index * 1e3, ef)
    memory = scan_seconds(rows, dimension, threads)
    if graph == "pending":
        # Only the copy can tell whether a graph pays (on the collection's own queries): the exact
        # pass answers meanwhile, and the path is chosen again once the graph is measured.
        reason = "a graph over the copy is built and measured on the collection's queries first"
        return SearchPlan(name, "memory", reason, memory * 1e3, index * 1e3, ef)
    walk = "memory"
    if graph is not None:
        memory, walk = graph / 1e3, "the graph over the copy (measured)"
    reached = max(recall for _, recall in curve.points)
    if reached < target:
        reason = f"the index reached recall@10 {reached} at most, under the target {target}"
        return SearchPlan(name, "memory", reason, memory * 1e3, index * 1e3, ef)
    if index * _MARGIN < memory:
        reason = f"the index is estimated {memory / index:.2f}x faster than {walk} at recall {target}"
        return SearchPlan(name, "index", reason, memory * 1e3, index * 1e3, ef)
    why = "exact" if graph is None else "measured on the collection's own queries"
    reason = (
        f"{walk} is estimated {index / memory:.2f}x the index's speed at recall {target}, and {why}"
        if index >= memory
        else f"the index is estimated only {memory / index:.2f}x faster than {walk}, which is {why}"
    )
    return SearchPlan(name, "memory", reason, memory * 1e3, index * 1e3, ef)
