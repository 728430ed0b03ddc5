"""Cold start of ``turnkit query``: how much is LanceDB's import and how much is turnkit's own, in one run.

Every figure is a fresh process, started the same way a user starts one, with
bytecode cached as in an installed package. Per round, in rotating order:

- ``python -c pass``: the interpreter alone;
- ``python -c "import lancedb"``: the interpreter and LanceDB's import;
- ``python -c "import turnkit"``;
- ``python -m turnkit.cli query …`` on a small WordLlama collection (the docs pages);
- the same query behind ``import lancedb`` in one process, timing the part after
  the import: turnkit's own share measured directly (imports, model load, query).

``--compare SRC`` adds the last three for another source tree (e.g. an older
checkout's ``src``), alternated with this one, so before and after share a run.
Medians of wall and CPU (user + system) seconds; CPU is the steadier one on a
busy machine.

    python bench/cold_start.py [--runs 9] [--compare /path/to/old/src]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import table

ROOT = Path(__file__).resolve().parent.parent
QUERY = "how do I resume a killed ingest"

SPLIT = """
import contextlib, io, json, sys, time
w0, c0 = time.perf_counter(), time.process_time()
import lancedb
w1, c1 = time.perf_counter(), time.process_time()
from turnkit.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    assert main(["query", sys.argv[1], "--uri", sys.argv[2], "-c", "docs"]) == 0
w2, c2 = time.perf_counter(), time.process_time()
print(json.dumps([w1 - w0, c1 - c0, w2 - w1, c2 - c1]))
"""


def _collection(uri: str) -> None:
    """The repository's docs pages, one record per paragraph, embedded with WordLlama."""
    from turnkit.batteries.vector import WordLlamaEncoder, create_vector_store

    records = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        for i, para in enumerate(p for p in page.read_text(encoding="utf-8").split("\n\n") if p.strip()):
            records.append({"id": f"{page.stem}-{i}", "document": para, "metadata": {"page": page.stem}})
    create_vector_store(uri=uri, encoder=WordLlamaEncoder())("docs").upsert_sync(records)


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process, and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--compare", default=None, help="another source tree to time side by side")
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="turnkit-cold-")
    uri = os.path.join(tmp, "db")
    _collection(uri)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}
    base.update(LANCEDB_LOG="error", PYTHONPYCACHEPREFIX=os.path.join(tmp, "pycache"))
    trees = {"this tree": str(ROOT / "src")}
    if args.compare:
        trees["compared"] = str(Path(args.compare).resolve())
    py = sys.executable
    jobs: dict[str, tuple[list[str], dict[str, str]]] = {
        "interpreter": ([py, "-c", "pass"], base),
        "import lancedb": ([py, "-c", "import lancedb"], base),
    }
    for label, src in trees.items():
        env = {**base, "PYTHONPATH": src}
        jobs[f"import turnkit ({label})"] = ([py, "-c", "import turnkit"], env)
        jobs[f"turnkit query ({label})"] = (
            [py, "-m", "turnkit.cli", "query", QUERY, "--uri", uri, "-c", "docs"],
            env,
        )
        jobs[f"split ({label})"] = ([py, "-c", SPLIT, QUERY, uri], env)

    samples: dict[str, list[tuple[float, ...]]] = {name: [] for name in jobs}
    names = list(jobs)
    for round_ in range(args.runs + 1):  # round 0 warms the bytecode cache and the page cache
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            argv, env = jobs[name]
            wall, cpu, out = _run(argv, env)
            if round_ == 0:
                continue
            if name.startswith("split"):
                samples[name].append(tuple(json.loads(out.strip().splitlines()[-1])))
            else:
                samples[name].append((wall, cpu))
        print(f"round {round_} done", file=sys.stderr, flush=True)

    def med(name: str, i: int) -> float:
        return statistics.median(s[i] for s in samples[name])

    rows = []
    for name in names:
        if name.startswith("split"):
            continue
        rows.append((name, f"{med(name, 0):.3f}", f"{med(name, 1):.3f}"))
    print(f"{args.runs} rounds, medians, seconds")
    print(table(rows, ("process", "wall", "cpu")))
    print()
    rows = []
    for label in trees:
        split = f"split ({label})"
        query = f"turnkit query ({label})"
        lance_wall, lance_cpu = med(split, 0), med(split, 1)
        own_wall, own_cpu = med(split, 2), med(split, 3)
        total_wall, total_cpu = med(query, 0), med(query, 1)
        rows.append(
            (
                label,
                f"{total_wall:.3f} / {total_cpu:.3f}",
                f"{lance_wall:.3f} / {lance_cpu:.3f}",
                f"{own_wall:.3f} / {own_cpu:.3f}",
                f"{own_wall / total_wall:.0%} / {own_cpu / total_cpu:.0%}",
            )
        )
    print("`turnkit query`, wall / cpu seconds; the split runs `import lancedb` first, then turnkit")
    print(table(rows, ("tree", "whole process", "import lancedb", "turnkit's own", "own share")))
    if args.compare:
        pairs = list(zip(samples["split (this tree)"], samples["split (compared)"], strict=True))
        ratio_wall = statistics.median(a[2] / b[2] for a, b in pairs)
        ratio_cpu = statistics.median(a[3] / b[3] for a, b in pairs)
        print(
            f"\nturnkit's own share, this tree / compared (median of per-round ratios): "
            f"wall {ratio_wall:.2f}, cpu {ratio_cpu:.2f}"
        )


if __name__ == "__main__":
    main()
