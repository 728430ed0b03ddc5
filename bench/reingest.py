"""Re-ingest of an unchanged tree: wall time, and the rows it reads from the collection.

Generates N small Markdown files (default 10,000) from text that ships
offline: the Python reference topics (``pydoc_data.topics``) and the READMEs
of the installed distributions (as ``bench/_sets.py`` reads them), their reST
and Markdown headings kept as Markdown sections, each file a seeded window of
one source's paragraphs (400-3,000 characters of text under its title). Then,
in a child process per source tree:

1. ``turnkit ingest CORPUS --encoder hash:256`` into a new collection, timed
   (the hash encoder costs next to nothing, so the store and the pipeline are
   what is measured, not a model);
2. the same command again on the unchanged tree, ``--reruns`` times, timed
   (wall, and the process's CPU: user + system of all its threads); every
   file must come back unchanged and nothing be written;
3. once more with every LanceDB query counted (not timed).

Each run is ``turnkit.cli.main(["ingest", ...])`` in the child, so a run
opens its store as a new ``turnkit ingest`` process does, without the
interpreter's and LanceDB's import in the time.

*In lookups* is the wall time of those re-ingests spent in ingest's
look-up of the files' stored rows (``turnkit.ingest._pipeline.lookup``, a
private name, wrapped when the tree has it): the store's part of the run,
its queries and the turning of their rows into matches.

Rows read: during run 3 every query LanceDB executes (``AsyncQueryBase.to_batches``
and its overrides, which ``to_arrow`` and ``to_list`` go through) is also run
through LanceDB's ``analyze_plan()``, and the metrics of its plan are added up:

- *rows scanned*: the sum of ``rows_scanned`` over the plan's ``LanceRead``
  operators, i.e. the rows Lance read from the data files. A filtered scan
  counts the rows whose filter column it read plus the rows it then took the
  selected columns of; a query served by a scalar index counts the rows the
  index pointed at, plus the rows outside the index, which it scans;
- *rows returned*: ``output_rows`` of the plan's top operator;
- *MB read*: the sum of ``bytes_read`` over the ``LanceRead`` operators;
- *indexed*: queries whose plan used a scalar index (``ScalarIndexQuery``);
- *scanned ÷ rows*: rows scanned over the rows in the collection (the chunks
  the first ingest wrote).

``--show-queries`` lists each counted query with its rows and its filter.

*Not in index* is how many rows the first ingest left outside the scalar
index on ``source_uri`` (``-``: the tree declares no such index); a query
filtered on the column scans those rows as well.

LanceDB prints these metrics with two decimals of thousands or millions
(``7.11 K``), so a large per-query count is rounded to the nearest 10 or
10,000. ``count_rows`` calls are counted separately (a filtered one would
scan too).

``--compare SRC`` runs the same measurement for another source tree (e.g. a
worktree of an older commit's ``src``) in the same rounds, alternating which
tree goes first; the ratios are this tree ÷ the compared one, medians of
per-round ratios.

    python bench/reingest.py                                # 10,000 files, this tree
    python bench/reingest.py --compare ../before/src        # before and after in one run
    python bench/reingest.py --files 2000 --rounds 1 --reruns 1 --show-queries

A script, not a test: nothing here asserts on timings.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import contextvars
import hashlib
import io
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import table

ROOT = Path(__file__).resolve().parent.parent
ENCODER = "hash:256"
COLLECTION = "bench"

# -- the corpus ---------------------------------------------------------------------------------------

_UNDERLINE = re.compile(r"([=\-~*^\"#+'`])\1{2,}")
_ATX = re.compile(r"(#{1,6})\s+(.+?)\s*#*")


def _blocks(text: str) -> list[tuple[int, str]]:
    """A source text as ``(level, text)`` blocks: level 0 a paragraph, 1-3 a heading.

    reST headings (a line underlined, or over- and underlined, with one
    punctuation character) and Markdown ATX headings become levels in the
    order their styles appear; reST directives (badges, images) are dropped.
    """
    out: list[tuple[int, str]] = []
    levels: dict[str, int] = {}
    for block in re.split(r"\n[ \t]*\n", text.replace("\r\n", "\n")):
        lines = [line.rstrip() for line in block.strip("\n").splitlines()]
        if not lines or not "".join(lines).strip() or lines[0].lstrip().startswith(".. "):
            continue
        if len(lines) >= 3 and _UNDERLINE.fullmatch(lines[0]) and _UNDERLINE.fullmatch(lines[2]):
            lines = lines[1:]  # an overlined heading
        if len(lines) >= 2 and _UNDERLINE.fullmatch(lines[1]) and lines[0].strip():
            style = lines[1][0]
            out.append((levels.setdefault(style, min(len(levels) + 1, 3)), lines[0].strip()))
            lines = lines[2:]
        elif (atx := _ATX.fullmatch(lines[0])) is not None:
            out.append((min(len(atx.group(1)), 3), atx.group(2)))
            lines = lines[1:]
        rest = "\n".join(lines).strip("\n")
        if rest.strip():
            out.append((0, rest))
    return out


def _sources() -> list[tuple[str, list[tuple[int, str]]]]:
    """(title, blocks) of every source with some prose, in a fixed order."""
    from _sets import pkgdocs_docs, pydoc_docs

    out = []
    for doc in [*pydoc_docs(), *pkgdocs_docs(limit_chars=1_000_000)]:
        blocks = _blocks(doc.text)
        if sum(len(t) for level, t in blocks if level == 0) < 1000:
            continue
        first = next((t for level, t in blocks if level), None)
        out.append((first or doc.title, blocks))
    return out


def page(rng: random.Random, title: str, blocks: list[tuple[int, str]]) -> str:
    """One Markdown file: the source's title, then a window of its blocks (headings one level down)."""
    target = rng.randint(400, 3000)
    parts = [f"# {title}"]
    start, size = rng.randrange(len(blocks)), 0
    for step in range(len(blocks)):
        level, text = blocks[(start + step) % len(blocks)]
        if size >= target:
            break
        if level:
            parts.append(f"{'#' * (level + 1)} {text}")
        else:
            parts.append(text)
            size += len(text)
    return "\n\n".join(parts) + "\n"


def generate(root: Path, files: int, seed: int) -> tuple[int, str]:
    """Write the corpus; its size in bytes and a digest of its contents (same seed, same digest)."""
    sources = _sources()
    rng = random.Random(seed)
    digest = hashlib.sha256()
    total = 0
    for n in range(files):
        title, blocks = rng.choice(sources)
        text = page(rng, title, blocks)
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40] or "page"
        path = root / f"d{n // 200:03d}" / f"{slug}-{n:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = text.encode()
        path.write_bytes(data)
        digest.update(data)
        total += len(data)
    return total, digest.hexdigest()[:12]


# -- counting what LanceDB reads (in the child) --------------------------------------------------------

_METRIC = re.compile(r"\b(rows_scanned|bytes_read|output_rows)=([\d.]+)(?: ([KMGT]))?")
_SCALE = {None: 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def _metrics(line: str) -> dict[str, float]:
    return {m[1]: float(m[2]) * _SCALE[m[3]] for m in _METRIC.finditer(line)}


class ReadCounter:
    """Adds up the ``analyze_plan()`` metrics of every query LanceDB executes while ``active``."""

    def __init__(self) -> None:
        self.active = False
        self.queries = self.indexed = self.count_rows = self.count_rows_filtered = 0
        self.rows_scanned = self.rows_returned = self.bytes_read = 0.0
        self.shown: list[str] = []  # one line per query: rows scanned, returned, filter
        self._inside = contextvars.ContextVar("inside", default=False)

    def add(self, plan: str) -> None:
        self.queries += 1
        self.indexed += "ScalarIndexQuery" in plan
        returned, scanned, where = None, 0.0, "--"
        for line in plan.splitlines():
            found = _metrics(line)
            if returned is None and "output_rows" in found:
                returned = found["output_rows"]
            if "LanceRead:" in line:
                scanned += found.get("rows_scanned", 0)
                self.bytes_read += found.get("bytes_read", 0)
                where = re.search(r"full_filter=(.*?), refine_filter", line) or where
        self.rows_scanned += scanned
        self.rows_returned += returned or 0
        shown = where if isinstance(where, str) else where[1]
        index = " [scalar index]" if "ScalarIndexQuery" in plan else ""
        self.shown.append(f"scanned {scanned:>9,.0f}  returned {returned or 0:>9,.0f}  {shown[:150]}{index}")

    def install(self) -> None:
        import lancedb.query as lq  # noqa: TID251 - the bench counts what LanceDB itself reads
        import lancedb.table as lt  # noqa: TID251

        counter = self
        for cls in (lq.AsyncQueryBase, lq.AsyncFTSQuery, lq.AsyncVectorQuery, lq.AsyncHybridQuery):
            if "to_batches" not in vars(cls):
                continue
            original = vars(cls)["to_batches"]

            async def to_batches(query: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
                if not counter.active or counter._inside.get():
                    return await _original(query, *args, **kwargs)
                token = counter._inside.set(True)
                try:
                    counter.add(await query.analyze_plan())
                    return await _original(query, *args, **kwargs)
                finally:
                    counter._inside.reset(token)

            cls.to_batches = to_batches

        count_rows = lt.AsyncTable.count_rows

        async def counted(table: Any, *args: Any, **kwargs: Any) -> int:
            if counter.active:
                counter.count_rows += 1
                counter.count_rows_filtered += bool(args[0] if args else kwargs.get("filter"))
            return await count_rows(table, *args, **kwargs)

        lt.AsyncTable.count_rows = counted


class LookupTimer:
    """Wall seconds inside ingest's lookups of stored rows (``turnkit.ingest._pipeline.lookup``).

    A private name, wrapped only where it exists (both trees compared so far
    have it); the seconds include whatever else the event loop ran meanwhile.
    """

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self.found = False

    def install(self) -> None:
        from turnkit.ingest import _pipeline

        original = getattr(_pipeline, "lookup", None)
        if original is None:
            return
        self.found = True
        timer = self

        async def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await original(*args, **kwargs)
            finally:
                timer.seconds += time.perf_counter() - start
                timer.calls += 1

        _pipeline.lookup = timed


def _ingest(corpus: str, db: str) -> tuple[dict[str, Any], float, float]:
    """One ``turnkit ingest`` run in this process: its JSON report, wall and CPU seconds."""
    from turnkit.cli import main

    argv = ["ingest", corpus, "--uri", db, "-c", COLLECTION, "--encoder", ENCODER, "--json", "--no-progress"]
    out = io.StringIO()
    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    report = json.loads(out.getvalue())
    assert code == 0 and report["ok"], out.getvalue()
    return report, wall, cpu


async def _unindexed(db: str) -> int | None:
    """Rows outside the scalar index on ``source_uri``, or ``None`` when there is no such index."""
    import lancedb  # noqa: TID251

    table = await (await lancedb.connect_async(db)).open_table(COLLECTION)
    for index in await table.list_indices():
        if list(index.columns or []) == ["source_uri"]:
            stats = await table.index_stats(index.name)
            return None if stats is None else int(stats.num_unindexed_rows)
    return None


def child(corpus: str, db: str, reruns: int) -> dict[str, Any]:
    counter = ReadCounter()
    counter.install()
    timer = LookupTimer()
    timer.install()
    first, first_wall, first_cpu = _ingest(corpus, db)
    unindexed = asyncio.run(_unindexed(db))
    walls, cpus, lookups = [], [], []
    for _ in range(reruns + 1):
        counter.active = len(walls) == reruns  # the last run is counted, not timed
        timer.seconds = 0.0
        again, wall, cpu = _ingest(corpus, db)
        assert again["chunks_written"] == 0 and again["files_written"] == 0, again
        assert again["files_unchanged"] == first["files_written"], again
        if not counter.active:
            walls.append(wall)
            cpus.append(cpu)
            lookups.append(timer.seconds if timer.found else None)
    return {
        "files": first["files_written"],
        "rows": first["chunks_written"],
        "first_wall": first_wall,
        "first_cpu": first_cpu,
        "walls": walls,
        "cpus": cpus,
        "lookups": lookups,
        "skipped": again["files_unchanged"],
        "unindexed": unindexed,
        "queries": counter.queries,
        "indexed": counter.indexed,
        "count_rows": counter.count_rows,
        "count_rows_filtered": counter.count_rows_filtered,
        "rows_scanned": counter.rows_scanned,
        "rows_returned": counter.rows_returned,
        "bytes_read": counter.bytes_read,
        "shown": counter.shown,
    }


# -- the parent ----------------------------------------------------------------------------------------


def _run_tree(src: str, corpus: Path, db: Path, reruns: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env.update(LANCEDB_LOG="error", PYTHONPATH=os.pathsep.join([src, str(Path(__file__).parent)]))
    argv = [sys.executable, __file__, "--child", "--corpus", str(corpus), "--db", str(db)]
    proc = subprocess.run([*argv, "--reruns", str(reruns)], env=env, capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"the run for {src} failed:\n{proc.stderr[-4000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--files", type=int, default=10_000, help="Markdown files to generate (default 10000)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="fresh collections per tree (default 3)")
    parser.add_argument("--reruns", type=int, default=3, help="timed re-ingests per round (default 3)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--compare", default=None, help="another source tree (its src) measured alike")
    parser.add_argument("--show-queries", action="store_true", help="list each counted query and its filter")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--corpus", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.corpus, args.db, args.reruns)))
        return

    trees = {"this tree": str(ROOT / "src")}
    if args.compare:
        trees["compared"] = str(Path(args.compare).resolve())
    tmp = Path(tempfile.mkdtemp(prefix="turnkit-bench-reingest-"))
    try:
        corpus = tmp / "corpus"
        start = time.perf_counter()
        size, digest = generate(corpus, args.files, args.seed)
        print(
            f"corpus: {args.files} Markdown files, {size / 1e6:.1f} MB (digest {digest}), "
            f"generated in {time.perf_counter() - start:.1f} s",
            file=sys.stderr,
        )
        results: dict[str, list[dict[str, Any]]] = {label: [] for label in trees}
        names = list(trees)
        for round_ in range(args.rounds):
            for label in names[round_ % len(names) :] + names[: round_ % len(names)]:
                db = tmp / f"db-{round_}-{names.index(label)}"
                results[label].append(_run_tree(trees[label], corpus, db, args.reruns))
                shutil.rmtree(db, ignore_errors=True)
                got = results[label][-1]
                print(
                    f"round {round_ + 1}, {label}: first ingest {got['first_wall']:.2f} s, "
                    f"re-ingest {statistics.median(got['walls']):.2f} s",
                    file=sys.stderr,
                    flush=True,
                )
        report(results, trees, args)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(results: dict[str, list[dict[str, Any]]], trees: dict[str, str], args: argparse.Namespace) -> None:
    def med(label: str, key: str) -> float:
        values: list[float] = []
        for r in results[label]:
            values.extend(r[key] if isinstance(r[key], list) else [r[key]])
        return statistics.median(values)

    rows = []
    for label in trees:
        last = results[label][-1]
        rows.append(
            (
                label,
                f"{last['files']:,} / {last['rows']:,}",
                f"{med(label, 'first_wall'):.2f}",
                f"{med(label, 'walls'):.2f} / {med(label, 'cpus'):.2f}",
                "-" if None in last["lookups"] else f"{med(label, 'lookups'):.2f}",
                f"{last['skipped']:,}",
                "-" if last["unindexed"] is None else f"{last['unindexed']:,}",
                f"{last['queries']} ({last['indexed']})",
                f"{last['rows_scanned']:,.0f}",
                f"{last['rows_scanned'] / last['rows']:.2f}",
                f"{last['rows_returned']:,.0f}",
                f"{last['bytes_read'] / 1e6:.1f}",
            )
        )
    print(f"\n{args.rounds} rounds x {args.reruns} re-ingests, medians; encoder {ENCODER}")
    header = (
        "tree",
        "files / rows",
        "first ingest s",
        "re-ingest wall / CPU s",
        "in lookups s",
        "files skipped",
        "not in index",
        "queries (indexed)",
        "rows scanned",
        "scanned ÷ rows",
        "rows returned",
        "MB read",
    )
    print(table(rows, header))
    for label in trees:
        last = results[label][-1]
        if last["count_rows"]:
            print(
                f"{label}: also {last['count_rows']} count_rows calls, {last['count_rows_filtered']} "
                "with a filter (not in the rows above)"
            )
        if args.show_queries:
            print(f"{label}: the counted re-ingest's queries")
            print("\n".join(f"  {line}" for line in last["shown"]))
    if "compared" not in trees:
        return

    def ratio(key: str) -> float:
        pairs = zip(results["this tree"], results["compared"], strict=True)
        return statistics.median(
            statistics.median(a[key]) / statistics.median(b[key])
            if isinstance(a[key], list)
            else a[key] / b[key]
            for a, b in pairs
        )

    print("\nthis tree ÷ compared (median of per-round ratios):")
    print(
        table(
            [
                ("first ingest, wall", f"{ratio('first_wall'):.2f}"),
                ("re-ingest, wall", f"{ratio('walls'):.2f}"),
                ("re-ingest, CPU", f"{ratio('cpus'):.2f}"),
                ("re-ingest, in lookups", f"{ratio('lookups'):.2f}"),
                ("rows scanned", f"{ratio('rows_scanned'):.3f}"),
                ("MB read", f"{ratio('bytes_read'):.3f}"),
            ],
            ("measure", "ratio"),
        )
    )
    for label, src in trees.items():
        print(f"{label}: {src}")


if __name__ == "__main__":
    main()
