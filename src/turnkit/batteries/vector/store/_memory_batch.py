"""Concurrent searches of one in-memory collection share passes over its matrix.

A single query's product with the matrix costs about 5 ms for 100,000 × 256
floats (einsum). When more searches of the same collection arrive while
products are running, they queue; the next free worker takes the whole queue,
multiplies the matrix by all its query vectors in one pass (a matrix-matrix
product, several times cheaper per query) and finishes each search (top-k and
matches) with its row of distances. One worker runs at a time by default: the
pass is bound by memory bandwidth, and with 16 searches in flight one worker
serving batches of about 15 gave 1.8x the throughput of two workers serving
batches of about 5 (docs/performance.md). A sync caller that finds the worker
free works in its own thread (a lone query pays no hand over); an async
caller's work goes to a worker thread while its loop waits on a future, so a
queue of async searches holds no thread each.

The batched product is BLAS's and rounds differently from einsum (by about
``dimension × 2⁻²⁴`` relative, bounded by `dot_tolerance`); a search served in
a batch recomputes its candidates near the cut with the same einsum as a lone
search (``_Snapshot.top``), so results are the same either way, to the bit.

A lone pass over a large copy reads its int8 copy instead where one was made
(``_memory_int8.py``): a quarter of the bytes, and the rows near the cut
computed again with einsum, so again the same answer to the bit. Queued
searches of such a copy share numkong's packed int8 product instead of the
float32 one, up to 16 at a time (``Int8Copy.dots_many``): at 300,000 x 256,
16 queries took 0.24x the time of 16 lone int8 passes, and 16 lone int8 passes
0.55x the float32 product of 16.

A pass over a large matrix is split by rows across ``threads`` (the usable
cores by default, see `scan_threads`): each row's dot product is computed by
the same kernel whatever the split, so the values are the same bits, and the
caller computes any part no helper has started yet, so a busy machine costs at
most one hand over, never a wait behind other work.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from turnkit.batteries.vector.store._memory_int8 import BLOCK

if TYPE_CHECKING:
    from turnkit.batteries.vector.store._memory_int8 import Int8Copy, Prepared

__all__ = ["MAX_SCAN_THREADS", "BatchedProduct", "dot_tolerance", "kth_smallest", "scan_threads"]

# OpenBLAS runs a product of at most 65,536 x 4 multiply-adds on the calling thread; larger ones
# spread over its own threads, which is several times slower on a machine busy with other work.
# Slices of the matrix this small keep each call single-threaded.
_SINGLE_THREAD_WORK = 262_144
# Below this many multiply-adds per part, handing a part to another thread costs more than it saves.
_MIN_PART_WORK = 524_288
_DEFAULT_MAX_THREADS = 4
# Queries per packed int8 product: 16 took 17 ms over 300,000 x 256 codes (one thread), 32 took 50.
_CODED_BATCH = 16
MAX_SCAN_THREADS = 16
"""The most threads one pass may be split across (`MemoryCache.threads`)."""

_helpers: ThreadPoolExecutor | None = None
_helpers_lock = threading.Lock()


def _forget_pool() -> None:
    # A forked child inherits the pool but not its threads: it starts its own on first use.
    global _helpers, _helpers_lock
    _helpers, _helpers_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def scan_threads() -> int:
    """The threads a pass is split across by default: the cores this process may use, at most 4.

    The cores it may run on, fewer under a cgroup CPU quota (a container limited to 1.5 CPUs gets 2).
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as limits:
            quota, period = limits.read().split()[:2]
        if quota != "max":
            cores = min(cores, -(-int(quota) // int(period)))
    except (OSError, ValueError):  # no cgroup v2 limit to read
        pass
    return max(1, min(_DEFAULT_MAX_THREADS, cores))


def _pool() -> ThreadPoolExecutor:
    global _helpers
    with _helpers_lock:
        if _helpers is None:  # threads start as parts arrive, up to the most any split asks for
            _helpers = ThreadPoolExecutor(MAX_SCAN_THREADS - 1, thread_name_prefix="turnkit-scan")
        return _helpers


def _split(rows: int, work_per_row: int, threads: int, align: int = 1) -> list[tuple[int, int]]:
    """Row ranges for up to ``threads`` parts of `_MIN_PART_WORK` or more, starts multiples of ``align``."""
    parts = max(1, min(threads, rows * work_per_row // _MIN_PART_WORK))
    size = max(1, -(-rows // parts))
    size = -(-size // align) * align
    return [(start, min(rows, start + size)) for start in range(0, rows, size)] or [(0, 0)]


def _in_parts(work: Callable[[int, int], object], ranges: list[tuple[int, int]]) -> None:
    """``work(start, stop)`` for each range: the first here, the others on helpers (here if none started)."""
    pending: list[Future[object] | None] = []
    for start, stop in ranges[1:]:
        try:
            pending.append(_pool().submit(work, start, stop))
        except RuntimeError:  # the interpreter is shutting down: no new threads
            pending.append(None)
    try:
        work(*ranges[0])
        for future, (start, stop) in zip(pending, ranges[1:], strict=True):
            if future is None or future.cancel():  # no helper took it (they are busy): do it here
                work(start, stop)
            else:
                future.result()
    finally:  # after a failure, parts not started yet are not run for nothing
        for future in pending:
            if future is not None:
                future.cancel()


# finish(dots, spread): the search's answer from its dot products. spread is None when einsum
# computed them for this query only (exactly the lone search's values); 0.0 when a batched product
# did (off by float rounding, `dot_tolerance`); above 0 when they are an int8 copy's, each off by at
# most spread (in the copy's weighted units, `_memory_int8.py`) beyond that rounding.
Finish = Callable[[npt.NDArray[np.float32], float | None], Any]


def dot_tolerance(dimension: int) -> float:
    """A bound on how far two float32 dot products of ``dimension`` terms differ, relative to |q| |v|."""
    # Each is within dimension x 2^-24 of the exact value whatever the order of summation; wide margin.
    return 1e-6 * (dimension + 16)


class _Job:
    __slots__ = ("finish", "future", "query")

    def __init__(self, query: npt.NDArray[np.float32], finish: Finish) -> None:
        self.query, self.finish = query, finish
        self.future: Future[Any] = Future()


def _answer(job: _Job, dots: npt.NDArray[np.float32], spread: float | None) -> None:
    """Settle ``job`` with its finish of ``dots``; a failed finish fails only this search."""
    try:
        job.future.set_result(job.finish(dots, spread))
    except BaseException as error:
        job.future.set_exception(error)


def _fail(jobs: list[_Job], error: BaseException) -> None:
    """Settle each of ``jobs`` not settled yet with ``error``."""
    for job in jobs:
        if not job.future.done():
            job.future.set_exception(error)


class BatchedProduct:
    """Searches that need ``matrix @ query``, queued ones served together."""

    def __init__(
        self,
        matrix: npt.NDArray[np.float32],
        workers: int = 1,
        threads: int = 1,
        coarse: Int8Copy | None = None,
    ) -> None:
        self.matrix = matrix
        self.coarse = coarse  # a lone pass reads this int8 copy instead, where one was made
        self.workers = max(1, workers)
        self.threads = max(1, threads)
        self._cond = threading.Condition()
        self._busy = 0
        self._queue: list[_Job] = []

    def run(self, query: npt.NDArray[np.float32], finish: Finish) -> Any:
        """``finish(dots, spread)`` for ``query``, in this thread when a worker is free."""
        job = _Job(query, finish)
        with self._cond:
            self._queue.append(job)
            while not job.future.done():
                if self._busy < self.workers and self._queue:
                    self._busy += 1
                    break
                self._cond.wait()
            else:
                return job.future.result()
        self._work(until=job)
        return job.future.result()

    async def run_async(self, query: npt.NDArray[np.float32], finish: Finish) -> Any:
        """`run` for a coroutine: the work happens on a worker thread, the caller awaits a future."""
        job = _Job(query, finish)
        with self._cond:
            self._queue.append(job)
            start = self._busy < self.workers
            if start:
                self._busy += 1
        if start:
            self._start_worker()
        return await asyncio.wrap_future(job.future)

    def idle(self) -> bool:
        """Whether no pass is running or queued: a search started now would run alone."""
        return not self._busy and not self._queue

    def _start_worker(self) -> None:
        # A thread of the helpers' pool, not a new thread: starting one cost the caller about
        # 65 us of CPU per search, and a thread waiting in the pool is woken as fast.
        try:
            _pool().submit(self._work)
        except RuntimeError:  # the interpreter is shutting down: the pool takes no new work
            threading.Thread(target=self._work, name="turnkit-memory", daemon=True).start()

    def _work(self, until: _Job | None = None) -> None:
        # Holds one of the `workers` places: serves the queue until it is empty (or, for a sync
        # caller, until its own job is done: then a new thread takes the rest over).
        while True:
            with self._cond:
                if not self._queue or (until is not None and until.future.done()):
                    if self._queue:
                        self._start_worker()
                    else:
                        self._busy -= 1
                    self._cond.notify_all()
                    return
                # A job whose caller stopped waiting (a cancelled task) is dropped here.
                batch = [job for job in self._queue if job.future.set_running_or_notify_cancel()]
                self._queue = []
            if batch:
                try:
                    self._serve(batch)
                except BaseException as error:  # a search never waits for ever, nor the next ones
                    _fail(batch, error)
            with self._cond:
                self._cond.notify_all()

    def _serve(self, batch: list[_Job]) -> None:
        coarse = self.coarse
        if coarse is not None and len(batch) > 1:
            # Over the int8 copy: numkong's packed product where it has one, else one pass each
            # (its lone kernel took as long for 16 queries at once as for 16 one by one). A failure
            # coding them fails the batch (`_work`).
            prepared = [coarse.prepare(job.query) for job in batch]
            coded = [(job, p) for job, p in zip(batch, prepared, strict=True) if p is not None]
            if coarse.blocks is not None and len(coded) > 1:
                for start in range(0, len(coded), _CODED_BATCH):
                    self._serve_coded(coded[start : start + _CODED_BATCH])
                batch = [job for job, p in zip(batch, prepared, strict=True) if p is None]
            for job in batch:
                self._serve([job])
            return
        try:
            products, spread = self._product([job.query for job in batch])
        except BaseException as error:  # every search of the batch sees it
            _fail(batch, error)
            return
        for job, dots in zip(batch, products, strict=True):
            _answer(job, dots, spread)

    def _serve_coded(self, chunk: list[tuple[_Job, Prepared]]) -> None:
        coarse = self.coarse
        assert coarse is not None and coarse.blocks is not None
        prepared = [p for _, p in chunk]
        try:
            out = np.empty((len(chunk), self.matrix.shape[0]), dtype=np.float32)
            _in_parts(
                lambda first, last: coarse.dots_many(prepared, out, first, last),
                _split(len(coarse.blocks), BLOCK * self.matrix.shape[1] * len(chunk), self.threads),
            )
        except BaseException as error:  # every search of the chunk sees it
            _fail([job for job, _ in chunk], error)
            return
        for (job, p), dots in zip(chunk, out, strict=True):
            _answer(job, dots, p.spread)

    def _product(
        self, queries: list[npt.NDArray[np.float32]]
    ) -> tuple[list[npt.NDArray[np.float32]], float | None]:
        """Each query's dot products with every row, and their spread (see `Finish`)."""
        matrix = self.matrix
        n, dimension = matrix.shape
        if len(queries) == 1:
            query = queries[0]
            dots = np.empty(n, dtype=np.float32)
            coarse = self.coarse
            prepared = None if coarse is None else coarse.prepare(query)
            if coarse is not None and prepared is not None:

                def lone(start: int, stop: int) -> None:
                    coarse.dots(prepared, dots, start, stop)

            else:

                def lone(start: int, stop: int) -> None:
                    # einsum, not BLAS: multi-threaded OpenBLAS is several times slower on a busy machine.
                    np.einsum("ij,j->i", matrix[start:stop], query, out=dots[start:stop])

            _in_parts(lone, _split(n, dimension, self.threads))
            return [dots], None if prepared is None else prepared.spread
        stacked = np.ascontiguousarray(np.stack(queries).T)
        out = np.empty((n, len(queries)), dtype=np.float32)
        step = max(1, _SINGLE_THREAD_WORK // (len(queries) * max(1, dimension)))

        def batch(start: int, stop: int) -> None:
            for first in range(start, stop, step):
                last = min(stop, first + step)
                np.matmul(matrix[first:last], stacked, out=out[first:last])

        _in_parts(batch, _split(n, dimension * len(queries), self.threads, align=step))
        return [np.ascontiguousarray(out[:, k]) for k in range(len(queries))], 0.0


def kth_smallest(values: npt.NDArray[Any], kth: int) -> Any:
    """``np.partition(values, kth)[kth]``, mostly without partitioning all of ``values``.

    The ``kth + 1``-th smallest of an evenly spaced sample is at least the answer (that many values
    are at most it), so the answer has the same rank among the values at most it: about
    ``sqrt(len × (kth + 1))`` of them. 0.09 ms against 1.8 ms for 300,000 float32 at ``kth`` 9.
    """
    n = len(values)
    stride = int(np.sqrt(n / (kth + 1)))
    if stride >= 4:
        bound = np.partition(values[::stride], kth)[kth]
        near = values[values <= bound]
        if len(near) > kth:  # fewer only where a NaN in the sample made its bound NaN
            return np.partition(near, kth)[kth]
    return np.partition(values, kth)[kth]
