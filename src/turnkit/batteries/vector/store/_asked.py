"""The queries a collection is asked, and the HNSW recall measured on them.

The ``ef`` a build measures (``_recall.py``) is estimated on stand-ins for
questions: stored vectors moved off the graph, and draws from a normal fitted
to the data. Real questions can sit closer to the data than either, or
further. On ``bench/peers.py``'s text set at 300,000 rows (13% real text, the
rest clustered padding) the stand-ins asked for ``ef`` 2,048, where held-out
passages of text met 0.98 at 48; the build's estimate is a floor for data
unlike its stand-ins, not a fit to what is asked.

So each collection keeps its last ``_KEEP`` query vectors in memory (text
once encoded, and vectors; not ``near_id``, whose query is a stored vector and
overstates recall). Once ``SAMPLE`` have been noted since the last look, and
the index is one the store has not yet measured them on (a new build, or the
collection's rows changed by more than a quarter), the distinct ones are measured the
way a build is, in the background, and searches use that curve: the ``ef``
the recall target needs on the questions this collection gets. The vectors
are never written anywhere, and the curve lives in this process only.

LanceDB searches rows outside the index exactly, so a measurement with many
of them would show recall the graph loses once they are folded in: it waits
until at most 1% of the rows are outside the index. It stops between two
steps when the collection is dropped, replaced or rebuilt; exit cancels it
(`cancel_before_exit`: optional work, not worth holding an exit for).
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from turnkit._aio import cancel_before_exit, exiting, loop
from turnkit.batteries.vector.store._common import log
from turnkit.batteries.vector.store._index_policy import vector_index
from turnkit.batteries.vector.store._recall import RecallCurve, measure_on_queries

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = ["SAMPLE", "Asked", "note"]

SAMPLE = 100  # distinct queries a measurement needs: the error of a recall near 0.98 is then ~0.005
_KEEP = 200  # the most recent queries kept, 200 KiB at 256 dimensions
_DRIFT = 1.25  # rows may change by this factor before the curve is measured again
_UNINDEXED = 0.01  # the most rows outside the index, as a share of those in it, a measurement allows


@dataclass(slots=True)
class Asked:
    """A collection's recent query vectors, and the recall curve measured on them."""

    recent: deque[np.ndarray[Any, Any]] = field(default_factory=lambda: deque(maxlen=_KEEP))
    noted: int = 0  # queries noted so far (approximate under threads: it only paces the looks)
    looked_at: int = 0  # `noted` at the last look
    curve: RecallCurve | None = None  # measured on `recent`, beside the build's curve `base`
    base: RecallCurve | None = None
    rows: int = 0  # the collection's rows (`index_rows`) when `curve` was measured
    task: asyncio.Task[None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)  # sync searches note from their threads

    def distinct(self) -> np.ndarray[Any, Any]:
        """The kept queries, each once, one a row (the same question asked again would weigh it twice)."""
        with self.lock:
            kept = list(self.recent)
        return np.unique(np.stack(kept), axis=0) if kept else np.empty((0, 0), np.float32)

    def current(self, built: RecallCurve | None) -> RecallCurve | None:
        """The curve searches use: the one measured on queries where it is of this build, else ``built``."""
        if built is None or self.curve is None or not _same(self.base, built):
            return built
        return self.curve


def _same(base: RecallCurve | None, built: RecallCurve | None) -> bool:
    # Every search asks this: the same object (the usual case) skips comparing the points.
    return base is built or base == built


def note(store: VectorStore, coll: _Collection, vector: np.ndarray[Any, Any]) -> None:
    """Keep ``vector``, a query ``coll`` was asked, and start a measurement on the kept ones if one is due.

    Kept where they are measured on: an HNSW index with a recall curve, or a
    memory copy a graph may serve (`MemoryIndex.graph_wanted`).
    """
    if not store.recall_from_queries:
        return
    memory = store._memory
    graph = memory.graph_wanted(coll.name)
    if coll.built_curve is None and not graph:
        return
    asked = coll.asked
    kept = np.array(vector, dtype=np.float32)  # a copy: the caller may reuse its array
    with asked.lock:
        asked.recent.append(kept)
        asked.noted += 1
    if coll.built_curve is not None and _due(coll):
        loop().call_soon_threadsafe(_start, coll)
    if graph and memory.graph_due(coll.name, asked):
        loop().call_soon_threadsafe(memory.start_graph, coll.name, asked, coll.recall_target)


def _due(coll: _Collection) -> bool:
    asked = coll.asked
    if asked.noted - asked.looked_at < SAMPLE or (asked.task is not None and not asked.task.done()):
        return False
    if asked.curve is None or not _same(asked.base, coll.built_curve):
        return True
    return not asked.rows / _DRIFT <= coll.index_rows <= asked.rows * _DRIFT


def _start(coll: _Collection) -> None:
    """Start the measurement on turnkit's loop (one at a time per collection)."""
    if _due(coll) and not exiting():
        coll.asked.looked_at = coll.asked.noted
        coll.asked.task = asyncio.ensure_future(_measure(coll))
        # Optional work of many seconds (about 45 s at 1,000,000 rows): exit cancels it rather than
        # wait, and none starts once the main thread has returned (`exiting`).
        cancel_before_exit(coll.asked.task)


async def _measure(coll: _Collection) -> None:
    asked = coll.asked
    built, index_type, generation = coll.built_curve, coll.index_type, coll.tracker.generation
    rows = coll.index_rows  # the count `ef_for` and `_due` compare with, unindexed rows included
    queries = asked.distinct()
    if built is None or index_type is None or len(queries) < SAMPLE:
        return  # the same question asked again and again: look again after SAMPLE more

    def current() -> bool:  # not dropped, replaced or rebuilt meanwhile (exit cancels the task)
        return coll.tracker.generation == generation and coll.built_curve == built

    try:
        indexed, unindexed = await _indexed_rows(coll.table)
        # LanceDB searches rows outside the index exactly, so with many of them the curve would show
        # recall the graph does not have once they are folded in: measure the graph alone.
        if unindexed > indexed * _UNINDEXED:
            return  # looks again after SAMPLE more queries
        curve = await measure_on_queries(coll.table, coll.metric, index_type, rows, queries, current)
    except Exception:  # a measurement must never break searching; the build's curve serves
        if current() and not exiting():
            log.warning("turnkit: measuring recall on %r's queries failed", coll.name, exc_info=True)
        else:
            log.debug(
                "turnkit: collection %r changed, or the process exits, while its queries were measured",
                coll.name,
            )
        return
    if curve is not None and current():
        asked.curve, asked.base, asked.rows = curve, built, rows


async def _indexed_rows(table: Any) -> tuple[int, int]:
    """Rows in the vector index, and rows outside it."""
    index = vector_index(await table.list_indices())
    stats = None if index is None else await table.index_stats(index.name)
    return (0, 0) if stats is None else (int(stats.num_indexed_rows), int(stats.num_unindexed_rows))
