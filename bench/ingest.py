"""Benchmark: ingest a generated corpus of Markdown files through turnkit.ingest.

Prints documents/s and chunks/s for a full ingest, the time spent in the
encoder vs. the rest (store writes, reading, chunking, bookkeeping), and the
encoder alone on the same chunk texts with the ratio between the two, and the
floor that ratio has on this machine: ingest does the encoder's work plus the
loading and chunking, so on N cores it takes at least their CPU seconds / N,
and where the encoder alone already keeps most cores busy that floor is above
1x. Also the encoder thread's own CPU seconds in
both (so slower encoding inside ingest can be told apart from waiting for the
GIL or a core). Also an unchanged re-run, and peak RSS.

    .venv/bin/python bench/ingest.py                 # 10,000 files, WordLlama if installed
    .venv/bin/python bench/ingest.py --files 2000 --encoder hash
    .venv/bin/python bench/ingest.py --files 2000 --engine ray   # also Ray on this machine (turnkit[ray])

A script, not a test: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.ingest import chunk_document, ingest_sync, load_document

WORDS = (
    "agent memory vector index retrieval chunk token embedding query filter store document section "
    "heading page score distance cosine batch upsert commit fragment table schema metadata source "
    "model context prompt budget turn runner callback tool server client cache latency throughput "
    "the a of to and in is for on with as by at from that this it be are was or an which"
).split()


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, k=rng.randint(6, 18))
    return " ".join(words).capitalize() + rng.choice([".", ".", ".", "?", "!"])


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(2, 7)))


def markdown_file(rng: random.Random, n: int) -> str:
    parts = [f"# Document {n}\n", paragraph(rng)]
    for s in range(rng.randint(1, 4)):
        parts.append(f"\n## Section {s}\n")
        for sub in range(rng.randint(0, 2)):
            parts.append(f"\n### Part {s}.{sub}\n")
            parts.extend(paragraph(rng) for _ in range(rng.randint(1, 4)))
        parts.extend(paragraph(rng) for _ in range(rng.randint(1, 3)))
    if rng.random() < 0.2:
        parts.append("\n```python\nprint('hello')\n# a comment, not a heading\n```\n")
    return "\n\n".join(parts) + "\n"


def generate(root: Path, files: int, seed: int) -> int:
    rng = random.Random(seed)
    total = 0
    for n in range(files):
        folder = root / f"d{n // 500:03d}"
        folder.mkdir(parents=True, exist_ok=True)
        text = markdown_file(rng, n)
        (folder / f"doc{n:05d}.md").write_text(text)
        total += len(text.encode())
    return total


class TimedEncoder:
    """Delegates to an encoder and adds up the seconds spent inside it (thread-safe)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.dimension = inner.dimension
        self.batch_size = getattr(inner, "batch_size", 256)
        self.seconds = 0.0
        self.cpu_seconds = 0.0  # CPU of the calling thread only: the encoder's own work, not its waits
        self.texts = 0
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str], *, kind: Any) -> Any:
        start, cpu = time.perf_counter(), time.thread_time()
        out = self.inner.encode(texts, kind=kind)
        with self._lock:
            self.seconds += time.perf_counter() - start
            self.cpu_seconds += time.thread_time() - cpu
            self.texts += len(texts)
        return out


def pick_encoder(choice: str) -> Any:
    if choice in ("auto", "wordllama"):
        try:
            import wordllama  # noqa: F401

            from turnkit.batteries.vector import WordLlamaEncoder

            return WordLlamaEncoder()
        except ImportError:
            if choice == "wordllama":
                raise
    return HashEncoder(256)


def process_cpu() -> float:
    """CPU seconds of every thread of this process (the encoder's native threads too)."""
    t = os.times()
    return t.user + t.system


def thread_cpu() -> dict[str, float]:
    """CPU seconds by thread, keyed by thread id and name; empty where /proc is missing (not Linux).

    Python threads are named after their role (``turnkit-ingest_0`` -> ``turnkit-ingest``: the
    worker threads that read and chunk files; ``asyncio``: the thread that calls the encoder;
    ``turnkit-loop``); native threads keep the name the OS
    has for them (``python`` for the tokenizer's, ``lancedb-tokio-w`` and ``lance-cpu``).
    """
    names = {str(t.native_id): t.name.split("_")[0] for t in threading.enumerate()}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    out: dict[str, float] = {}
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat, open(f"/proc/self/task/{tid}/comm") as comm:
                fields, name = stat.read().rsplit(")", 1)[1].split(), comm.read().strip()
        except OSError:
            continue  # the thread ended
        out[f"{tid} {names.get(tid, name)}"] = (int(fields[11]) + int(fields[12])) / tick
    return out


class ThreadSampler:
    """Reads every thread's CPU every 200 ms while it runs: threads that end mid-run (a run's
    own worker pool) keep the last figure read, which a single reading at the end would miss.

    Every 50 ms, it took 0.2-0.6 s of CPU (and the GIL) in a 4-8 s ingest, which the encoder-alone
    timing does not pay; 200 ms takes a quarter of that and loses at most 200 ms of a pool's
    last CPU from the by-thread figures (the process CPU and the wall time are whole)."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.seen.update(thread_cpu())

    def __enter__(self) -> ThreadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.seen.update(thread_cpu())


def cpu_by_role(before: dict[str, float], after: dict[str, float]) -> str:
    roles: dict[str, float] = {}
    for key, seconds in after.items():
        role = key.split(" ", 1)[1]
        roles[role] = roles.get(role, 0.0) + seconds - before.get(key, 0.0)
    return ", ".join(f"{r} {v:.2f} s" for r, v in sorted(roles.items(), key=lambda kv: -kv[1]) if v >= 0.01)


def peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--files", type=int, default=10_000, help="Markdown files to generate (default 10000)"
    )
    parser.add_argument("--encoder", choices=["auto", "wordllama", "hash"], default="auto")
    parser.add_argument("--chunk-size", type=int, default=1024)
    parser.add_argument("--chunk-overlap", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=512)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-progress", action="store_true")
    parser.add_argument(
        "--engine", choices=["local", "ray"], default="local", help="ray: also ingest with turnkit.ingest.ray"
    )
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="turnkit-bench-ingest-"))
    try:
        corpus = tmp / "corpus"
        t0 = time.perf_counter()
        size = generate(corpus, args.files, args.seed)
        print(
            f"corpus: {args.files} Markdown files, {size / 1e6:.1f} MB, generated in "
            f"{time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )

        inner = pick_encoder(args.encoder)
        inner.encode(["warm up the model"], kind="document")  # load weights outside the timings
        encoder = TimedEncoder(inner)
        vs = create_vector_store(uri=str(tmp / "db"), encoder=encoder)
        settings = {"chunk_size": args.chunk_size, "chunk_overlap": args.chunk_overlap}
        # One-off costs outside the timings too, as the encoder's weights: importing LanceDB (about
        # 1 s of CPU) and loading the chunker's token ranks. They are reported on their own.
        start = time.perf_counter()
        vs.list_collections_sync()
        chunk_document(load_document(next(corpus.rglob("*.md"))), **settings)
        warm_s = time.perf_counter() - start

        options: dict[str, Any] = {
            "store": vs,
            "collection": "bench",
            "batch_size": args.batch_size,
            "workers": args.workers,
            **settings,
        }
        threads_before = thread_cpu()
        with ThreadSampler() as sampler:
            start, proc = time.perf_counter(), process_cpu()
            report = ingest_sync(corpus, progress=not args.no_progress, **options)
            wall = time.perf_counter() - start
            ingest_cpu = process_cpu() - proc
        by_role = cpu_by_role(threads_before, sampler.seen)
        rss_ingest = peak_rss_mb()
        assert report.ok, report
        encode_s = encoder.seconds

        start = time.perf_counter()
        rerun = ingest_sync(corpus, progress=False, **options)
        rerun_s = time.perf_counter() - start
        assert rerun.chunks_written == 0, rerun

        # Lower bounds on the same work: chunking alone (one thread) and the encoder alone.
        start, proc = time.perf_counter(), process_cpu()
        texts: list[str] = []
        for path in sorted(corpus.rglob("*.md")):
            texts.extend(c.text for c in chunk_document(load_document(path), **settings))
        chunk_s = time.perf_counter() - start
        chunk_cpu = process_cpu() - proc
        assert len(texts) == report.chunks_written
        start, cpu, proc = time.perf_counter(), time.thread_time(), process_cpu()
        step = getattr(inner, "batch_size", 256)
        for i in range(0, len(texts), step):
            inner.encode(texts[i : i + step], kind="document")
        alone_s = time.perf_counter() - start
        alone_cpu = time.thread_time() - cpu
        alone_proc = process_cpu() - proc

        docs, chunks = report.files_written, report.chunks_written
        # Ingest does at least the encoder's work and the loading and chunking; on this many cores,
        # perfectly overlapped and with free writes, it could not take less than this.
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        floor_s = max(alone_s, (alone_proc + chunk_cpu) / cores)
        rows = [
            ("encoder", f"{inner!r} ({inner.dimension}-d)"),
            (
                "files / chunks",
                f"{docs} / {chunks} (chunk_size {args.chunk_size}, overlap {args.chunk_overlap}, "
                f"batch {args.batch_size})",
            ),
            ("one-off: import LanceDB, load token ranks", f"{warm_s:.2f} s (not in the times below)"),
            ("ingest wall time", f"{wall:.2f} s"),
            ("  documents/s", f"{docs / wall:,.0f}"),
            ("  chunks/s", f"{chunks / wall:,.0f}"),
            ("  encode (in ingest)", f"{encode_s:.2f} s ({encode_s / wall:.0%} of wall)"),
            ("  store + pipeline (wall - encode)", f"{wall - encode_s:.2f} s"),
            ("load + chunk alone (1 thread)", f"{chunk_s:.2f} s ({docs / chunk_s:,.0f} docs/s)"),
            ("encoder alone, same texts", f"{alone_s:.2f} s ({chunks / alone_s:,.0f} chunks/s)"),
            ("ratio ingest / encoder alone", f"{wall / alone_s:.2f}x"),
            (
                f"  floor on {cores} cores (CPU of encoder + load/chunk)",
                f"{floor_s:.2f} s, {floor_s / alone_s:.2f}x: "
                f"({alone_proc:.2f} + {chunk_cpu:.2f}) s CPU / {cores}",
            ),
            (
                "encoder thread CPU: in ingest / alone",
                f"{encoder.cpu_seconds:.2f} s / {alone_cpu:.2f} s ({encoder.cpu_seconds / alone_cpu:.2f}x)",
            ),
            (
                "process CPU: ingest / encoder alone",
                f"{ingest_cpu:.2f} s / {alone_proc:.2f} s ({ingest_cpu / alone_proc:.2f}x); "
                f"cores busy {ingest_cpu / wall:.2f} / {alone_proc / alone_s:.2f}",
            ),
            ("  CPU by thread (ingest)", by_role or "n/a"),
            ("unchanged re-run", f"{rerun_s:.2f} s ({docs / rerun_s:,.0f} files/s, 0 writes)"),
            ("peak RSS after ingest", f"{rss_ingest:,.0f} MB"),
            ("peak RSS overall", f"{peak_rss_mb():,.0f} MB"),
        ]
        if args.engine == "ray":
            import ray

            from turnkit.ingest.ray import RayEngine

            start = time.perf_counter()
            ray.init(num_cpus=args.workers or None, include_dashboard=False, log_to_driver=False)
            ray_start_s = time.perf_counter() - start
            ray_vs = create_vector_store(uri=str(tmp / "db_ray"), encoder=inner)
            ray_opts: dict[str, Any] = {
                "store": ray_vs,
                "collection": "bench",
                "engine": RayEngine(workers=args.workers),
            }
            start = time.perf_counter()
            ray_report = ingest_sync(corpus, **ray_opts, **settings)
            ray_wall = time.perf_counter() - start
            assert ray_report.ok and ray_report.chunks_written == chunks, ray_report
            start = time.perf_counter()
            ray_rerun = ingest_sync(corpus, **ray_opts, **settings)
            ray_rerun_s = time.perf_counter() - start
            assert ray_rerun.chunks_written == 0, ray_rerun
            ray.shutdown()
            rows += [
                ("starting Ray (once per run or cluster)", f"{ray_start_s:.2f} s"),
                ("ray engine wall time (actors included)", f"{ray_wall:.2f} s"),
                ("  chunks/s", f"{chunks / ray_wall:,.0f}"),
                ("  ratio ray / single-process (chunks/s)", f"{wall / ray_wall:.2f}x"),
                ("  unchanged re-run", f"{ray_rerun_s:.2f} s (0 writes)"),
            ]
        width = max(len(k) for k, _ in rows)
        print()
        for key, value in rows:
            print(f"{key:<{width}}  {value}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
