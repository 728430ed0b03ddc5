"""Shared helpers for the benchmark scripts (not part of the package)."""

from __future__ import annotations

import os
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

os.environ.setdefault("LANCEDB_LOG", "error")


def peak_rss_mb() -> float:
    """Peak resident memory of this process, in MiB."""
    # ru_maxrss is KiB on Linux and bytes on macOS.
    divisor = 1024 * 1024 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / divisor


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def p95_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] * 1000


def table(rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = "  ".join("-" * w for w in widths)
    out = ["  ".join(str(h).ljust(w) for h, w in zip(header, widths, strict=True)), line]
    out += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def alternate(
    systems: dict[str, Callable[[Any], Any]], queries: Iterable[Any]
) -> tuple[dict[str, list[float]], dict[str, list[Any]]]:
    """Run each query through every system, in a new order each time; seconds and answers per system.

    The order is shuffled (seeded), not rotated: in a rotation each system
    always follows the same one, and a system run right after a long scan of
    memory measured up to 1.4x slower than right after a short one.
    """
    samples: dict[str, list[float]] = {s: [] for s in systems}
    found: dict[str, list[Any]] = {s: [] for s in systems}
    names = list(systems)
    rng = random.Random(0)
    for q in queries:
        for name in rng.sample(names, len(names)):
            t = time.perf_counter()
            found[name].append(systems[name](q))
            samples[name].append(time.perf_counter() - t)
    return samples, found
