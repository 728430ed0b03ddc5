"""The HNSW ``ef`` a recall target needs, measured on the collection's own vectors.

How much ``ef`` a recall target needs depends on how the data is clustered,
not only on the row count: a rule of rows alone over-spends on one data set
and falls short on another. So after each HNSW build the store measures
recall@10 against exact search at a ladder of ``ef`` values, with a sample
of the stored vectors as queries (each query's own row left out of both
answers). The curve is recorded in the collection (the vector column's field
metadata), where every process and every later open reads it, and a search
uses the smallest ``ef`` whose measured recall meets the store's
``recall_target``.

The same queries, timed one at a time, give the index's cost per query at
each measured ``ef`` (``RecallCurve.costs``): the planner (``_planner.py``)
weighs it against an exact pass from memory.
"""

from __future__ import annotations

import asyncio
import json
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from turnkit._aio import to_thread
from turnkit.batteries.vector.store._index_policy import apply_knobs, search_knobs

__all__ = [
    "DEFAULT_RECALL_TARGET",
    "RecallCurve",
    "lower_bound",
    "measure_on_queries",
    "measure_recall_curve",
]

DEFAULT_RECALL_TARGET = 0.98
"""The recall@10 a search aims for when the query sets no ``ef`` of its own."""

# Steps at most 4/3 apart (from 48), multiples of 16 as `ef_for` rounds: the ef chosen costs at
# most a third more than the target needs.
LADDER: tuple[int, ...] = (32, 48, 64, 80, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768)
LADDER += (1024, 1280, 1536, 2048, 2560, 3072, 4096, 5120, 6144, 8192)
K = 10
TIMED = 16  # queries timed one at a time per ef: the median of 16 is steady to a few percent
SAMPLE = 100  # queries of each kind: the standard error of a recall near 0.98 is about 0.004
_FIT = 1_000  # stored vectors the normal of the second kind is fitted to
_ENOUGH = 0.999  # the ladder stops here: no target asks for more
_Z = 1.645  # a one-sided 95% interval
_SCAN = 16_384  # rows a batch of the exact pass reads: 200 queries' distances to it take 26 MiB
_KEY = "turnkit.recall"  # in the vector field's metadata
Vector = np.ndarray[Any, Any]


@dataclass(frozen=True, slots=True)
class RecallCurve:
    """Measured recall@10 of one HNSW index at each ``ef``, and the rows it held then.

    Attributes:
        rows: Rows in the collection when it was measured.
        points: ``(ef, recall@10)`` pairs, ``ef`` ascending.
        costs: Median seconds of one search at each ``ef`` of ``points``
            (empty: measured before costs were, or not known).
        queries: How many of the collection's own recent queries it was
            measured on (0: measured at the build, on stored vectors).
    """

    rows: int
    points: tuple[tuple[int, float], ...]
    costs: tuple[float, ...] = ()
    queries: int = 0

    def cost_at(self, ef: int) -> float | None:
        """Estimated seconds of one search at ``ef``: linear between the measured ones (``None``: none)."""
        if len(self.costs) != len(self.points):
            return None
        known = [(e, c) for (e, _), c in zip(self.points, self.costs, strict=True)]
        if ef <= known[0][0]:
            return known[0][1]
        for (e0, c0), (e1, c1) in zip(known, known[1:], strict=False):
            if ef <= e1:
                return c0 + (c1 - c0) * (ef - e0) / (e1 - e0)
        # Past the ladder's end (rows added since): a search visits about ef nodes.
        last_ef, last_cost = known[-1]
        return last_cost * ef / last_ef

    def ef_for(self, target: float, rows: int, wanted: int) -> int:
        """The ``ef`` for a search of ``wanted`` (limit + offset) results at ``target`` over ``rows`` rows.

        The smallest measured ``ef`` meeting ``target`` (the largest measured,
        where none does), grown like ``rows ** 0.5`` when rows were added since
        the measurement and in proportion to ``wanted`` beyond 10.
        """
        ef = next((ef for ef, recall in self.points if recall >= target), self.points[-1][0])
        grown = math.sqrt(max(1.0, rows / max(1, self.rows))) * max(1.0, wanted / K)
        return int(min(LADDER[-1], 16 * math.ceil(ef * grown / 16)))

    @staticmethod
    def field_metadata(curve: RecallCurve | None) -> dict[str, str]:
        """``curve`` as the vector field's metadata entry (empty: no curve, e.g. too few rows)."""
        if curve is None:
            return {_KEY: ""}
        return {_KEY: json.dumps({"rows": curve.rows, "points": curve.points, "costs": curve.costs})}

    @classmethod
    def of_field(cls, metadata: Mapping[bytes, bytes] | None) -> RecallCurve | None:
        """The curve recorded in the vector field's metadata, if any (unreadable counts as none)."""
        raw = (metadata or {}).get(_KEY.encode())
        if not raw:
            return None
        try:
            data = json.loads(raw)
            points = tuple((int(ef), float(recall)) for ef, recall in data["points"])
            # A curve recorded before costs were measured has none: it still gives the ef.
            costs = tuple(float(c) for c in data.get("costs") or ())
            if len(costs) != len(points) or not all(math.isfinite(c) and c > 0 for c in costs):
                costs = ()
            return cls(int(data["rows"]), points, costs) if points else None
        except (ValueError, KeyError, TypeError):
            return None


async def measure_recall_curve(table: Any, metric: str, index_type: str, rows: int) -> RecallCurve | None:
    """Measure recall@10 of ``table``'s HNSW index at each ``ef`` of the ladder, up to 0.999.

    ``None`` when the collection has too few rows to measure (fewer than 2 x 10).
    """
    if rows < 2 * K:
        return None
    rng = np.random.default_rng(rows)  # the same sample for the same size: a rebuild compares like with like
    offsets = sorted(int(i) for i in rng.choice(rows, size=min(_FIT, rows), replace=False))
    sample = await table.take_offsets(offsets).select(["vector"]).to_arrow()
    fit = np.asarray(sample.column("vector").to_pylist(), dtype=np.float32)
    fit = np.stack([_unit(v, metric) for v in fit])

    # A stored vector is a node of the graph, and the search walks straight to it and its
    # neighbours: as a query it overstates recall (0.999 at ef 32 where held-out queries got
    # 0.62). So there are two kinds of query, and each ef must serve both:
    # - near the data: a stored vector moved by its distance to its nearest neighbour in a
    #   random direction, off the graph, as far from the data as a new vector of the same kind;
    # - between the data: drawn from a normal fitted to each coordinate, as a query unlike
    #   any stored vector is (0.56 at the ef the first kind alone chose, on clustered data).
    count = min(SAMPLE, len(fit))
    steps = rng.normal(size=(count, fit.shape[1])).astype(np.float32)
    drawn = fit.mean(axis=0) + fit.std(axis=0) * rng.normal(size=(count, fit.shape[1])).astype(np.float32)
    _, neighbours = _done(await _exact_top(table, metric, fit[:count], 2))  # itself, then its nearest
    other = np.stack([_unit(v, metric) for v in neighbours[:, 1]])
    gap = np.linalg.norm(fit[:count] - other, axis=1) / np.maximum(np.linalg.norm(steps, axis=1), 1e-30)
    moved = fit[:count] + steps * gap[:, None].astype(np.float32)
    queries = np.stack([_unit(q, metric) for q in np.concatenate([moved, drawn])])
    tenths, _ = _done(await _exact_top(table, metric, queries, K))
    bounds = [(q, float(t[-1])) for q, t in zip(queries, tenths, strict=True)]
    kinds = [bounds[:count], bounds[count:]]

    return await _ladder(table, metric, index_type, rows, kinds, lower=False)


async def measure_on_queries(
    table: Any,
    metric: str,
    index_type: str,
    rows: int,
    queries: Vector,
    keep_going: Callable[[], bool] = lambda: True,
) -> RecallCurve | None:
    """Measure recall@10 of ``table``'s HNSW index at each ``ef`` on ``queries``, the collection's own.

    The recall at each ``ef`` is the lower end of a one-sided 95% interval of
    the mean over the queries (`lower_bound`), so a small or lucky sample does
    not choose an ``ef`` the next queries fall short at. ``None`` when the
    collection has too few rows to measure, or ``keep_going()`` turned false
    between two steps of the ladder.
    """
    if rows < 2 * K or len(queries) == 0:
        return None
    unit = np.stack([_unit(q, metric) for q in np.asarray(queries, dtype=np.float32)])
    top = await _exact_top(table, metric, unit, K, keep_going=keep_going)
    if top is None:
        return None
    tenths, _ = top
    pairs = [(q, float(t[-1])) for q, t in zip(unit, tenths, strict=True)]
    curve = await _ladder(table, metric, index_type, rows, [pairs], lower=True, keep_going=keep_going)
    return None if curve is None else replace(curve, queries=len(pairs))


def lower_bound(hits: Sequence[int]) -> float:
    """The lower end of a one-sided 95% interval of mean recall@10, from each query's hits of 10.

    ``mean - 1.645 x standard error``, where the error is the larger of the
    queries' own and a binomial one over every neighbour with one miss added:
    when every query found all 10 the queries' error is 0, and 100 queries do
    not show recall 1.0 for sure.
    """
    found = np.asarray(hits, dtype=np.float64) / K
    n = len(found)
    spread = float(found.std(ddof=1)) / math.sqrt(n) if n > 1 else 0.0
    p = float(found.sum()) * K / (n * K + 1)
    floor = math.sqrt(p * (1 - p) / (n * K + 1))
    return float(found.mean()) - _Z * max(spread, floor)


async def _ladder(
    table: Any,
    metric: str,
    index_type: str,
    rows: int,
    kinds: list[list[tuple[Vector, float]]],
    *,
    lower: bool,
    keep_going: Callable[[], bool] = lambda: True,
) -> RecallCurve | None:
    """Recall@10 and the cost of one search at each ``ef`` of the ladder, up to 0.999.

    ``kinds``: groups of ``(query, distance of its 10th nearest row)``; each
    ``ef``'s recall is the lowest group's, and with ``lower`` the lower end of
    the group's one-sided 95% interval (`lower_bound`) rather than its mean.
    ``None`` when ``keep_going()`` turns false between two steps.
    """

    def search(vector: Vector) -> Any:
        return table.vector_search(vector).column("vector").distance_type(metric).limit(K)

    async def hits(q: Vector, tenth: float, ef: int) -> int:
        knobs = search_knobs(index_type, rows, K, None, None, ef)
        found = (await apply_knobs(search(q).select(["id"]), knobs).to_arrow()).column("_distance")
        # By distance, not id: rows as near as the 10th are equally right.
        return sum(1 for d in found.to_pylist() if d <= tenth + 1e-5 * max(1.0, abs(tenth)))

    async def cost(ef: int) -> float:
        # One at a time, as a lone search runs: the concurrent recall queries share the cores.
        knobs = search_knobs(index_type, rows, K, None, None, ef)
        pairs = [p for pairs in kinds for p in pairs[: TIMED // len(kinds)]]
        seconds = []
        for q, _ in pairs:
            started = time.perf_counter()
            await apply_knobs(search(q).select(["id"]), knobs).to_arrow()
            seconds.append(time.perf_counter() - started)
        return statistics.median(seconds)

    # Concurrent: LanceDB searches on its own threads, so the measurement uses every core.
    points: list[tuple[int, float]] = []
    costs: list[float] = []
    for ef in LADDER:
        if not keep_going():
            return None
        recalls, means = [], []
        for pairs in kinds:
            found = await asyncio.gather(*(hits(q, b, ef) for q, b in pairs))
            means.append(sum(found) / (K * len(found)))
            recalls.append(lower_bound(found) if lower else means[-1])
        points.append((ef, round(max(0.0, min(recalls)), 4)))
        costs.append(round(max(await cost(ef), 1e-7), 7))
        # By the mean: 100 perfect queries bound recall at 0.998 only, and the ladder would run to its end.
        if min(means) >= _ENOUGH:
            break
    return RecallCurve(rows, tuple(points), tuple(costs))


async def _exact_top(
    table: Any,
    metric: str,
    queries: Vector,
    k: int,
    scan: int = _SCAN,
    keep_going: Callable[[], bool] = lambda: True,
) -> tuple[Vector, Vector] | None:
    """Each query's ``k`` smallest distances (as LanceDB reports them) and their vectors, ascending.

    One pass over the table in batches of ``scan`` rows, every query at once: its memory does not
    grow with the collection, where a brute-force LanceDB search per query held the whole vector
    column each (100 at once took over 20 GiB at 300,000 rows). Each batch's arithmetic (about
    0.1 s for 200 queries) runs on a worker thread, so searches on the loop are not held behind
    it; ``None`` when ``keep_going()`` turned false between two batches.
    """
    q = queries.astype(np.float64)
    best = np.full((len(q), k), np.inf)
    kept = np.zeros((len(q), k, q.shape[1]), dtype=np.float32)
    reader = await table.query().select(["vector"]).to_batches(max_batch_length=scan)
    async for batch in reader:
        if not keep_going():
            return None
        column = batch.column("vector")
        best, kept = await to_thread(_fold, metric, q, k, best, kept, column)
    return best, kept


def _done(top: tuple[Vector, Vector] | None) -> tuple[Vector, Vector]:
    assert top is not None  # a pass without `keep_going` always ends
    return top


def _fold(metric: str, q: Vector, k: int, best: Vector, kept: Vector, column: Any) -> tuple[Vector, Vector]:
    """``best`` and ``kept`` with one batch of rows (a pyarrow vector column) taken in."""
    block = column.flatten().to_numpy(zero_copy_only=False).reshape(len(column), -1).astype(np.float32)
    dist = _distances(metric, q, block.astype(np.float64))
    take = min(k, len(block))
    near = np.argpartition(dist, take - 1, axis=1)[:, :take]
    both = np.concatenate([best, np.take_along_axis(dist, near, axis=1)], axis=1)
    vectors = np.concatenate([kept, block[near]], axis=1)
    order = np.argsort(both, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(both, order, axis=1), np.take_along_axis(vectors, order[:, :, None], axis=1)


def _distances(metric: str, q: Vector, block: Vector) -> Vector:
    """LanceDB's distances from each of ``q`` to each row of ``block``, in float64 (no cancellation)."""
    dots: Vector = q @ block.T
    if metric == "cosine":
        norms = np.linalg.norm(q, axis=1)[:, None] * np.linalg.norm(block, axis=1)[None, :]
        return 1.0 - dots / np.where(norms > 0, norms, 1.0)
    if metric == "dot":
        return 1.0 - dots
    squared: Vector = (q * q).sum(axis=1)[:, None] - 2.0 * dots + (block * block).sum(axis=1)[None, :]
    return np.maximum(squared, 0.0)


def _unit(vector: Vector, metric: str) -> Vector:
    """``vector`` scaled to length 1 under cosine (where length does not count), else as it is."""
    norm = float(np.linalg.norm(vector))
    return vector / norm if metric == "cosine" and norm > 0 else vector
