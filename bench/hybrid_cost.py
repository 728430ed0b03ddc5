"""The default retrieval's latency against vector-only search, at 10k and 100k rows (goal: p50 <= 2x).

    python bench/hybrid_cost.py                        # 10,000 and 100,000 rows, 120 questions each
    python bench/hybrid_cost.py --sizes 10000 --queries 60
    python bench/hybrid_cost.py --sizes 10000 --queries 60 --lexical-from lancedb   # the leg as before

Each row holds real text (sentences of the Python language reference and of the
installed packages' READMEs, 100 to 300 words a row, seeded) so the full-text
leg scans posting lists of realistic length, and a precomputed 256-d vector
(clustered, seeded) so loading 100,000 rows takes seconds; queries are encoded
by ``HashEncoder(256)``, whose cost every system pays alike. The queries are
the developer questions of ``bench/data/devq_questions.json``, cycled.

Systems, alternated in a new order for every query (``_common.alternate``),
each asked for 5 results with id, document and metadata:

- ``near_text()``: the builder's vector-only search, the baseline;
- ``.near_text().hybrid()``: the builder's hybrid search with turnkit's fusion;
- the callbacks' vector-only setting (``hybrid=False``), ``fetch_retrievables``
  on a turn: the same surface as the default, so the ratio against it is the
  default ranking's own cost (the callbacks also read the turn's message and
  map matches to records);
- the default: ``create_vector_retrievable_callbacks(...)`` with no options.
  It runs whatever the callbacks do by default, so its ratio follows the default.

The full-text index is built by a warm-up query before timing. No vector
index is built unless ``--index`` is given (a store has none until asked).
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import alternate, median_ms, p95_ms, peak_rss_mb, table
from _sets import pkgdocs_docs, pydoc_docs

from turnkit import InMemoryMessageStore, Message, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import (
    HashEncoder,
    MemoryCache,
    VectorStore,
    create_vector_retrievable_callbacks,
    create_vector_store,
)
from turnkit.batteries.vector.store._memory_bm25 import plain

QUESTIONS = Path(__file__).resolve().parent / "data" / "devq_questions.json"
TOP_K = 5
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def sentence_pool() -> list[str]:
    out = []
    for doc in [*pydoc_docs(), *pkgdocs_docs()]:
        for s in _SENTENCE.split(re.sub(r"\s+", " ", doc.text)):
            if 5 <= len(s.split()) <= 60:
                out.append(s)
    return out


def rows(n: int, dim: int, pool: list[str], seed: int) -> list[dict[str, object]]:
    rnd = random.Random(seed)
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(64, dim)).astype(np.float32)
    noise = rng.normal(scale=0.6, size=(n, dim)).astype(np.float32)
    vectors = centres[rng.integers(0, len(centres), n)] + noise
    out: list[dict[str, object]] = []
    for i in range(n):
        words: list[str] = []
        target = rnd.randint(100, 300)
        while len(words) < target:
            words += rnd.choice(pool).split()
        out.append(
            {
                "id": f"r{seed}-{i}",
                "document": " ".join(words[:target]),
                "vector": vectors[i],
                "metadata": {"source_uri": f"file:///docs/{i % 997}.md", "part": i % 7},
            }
        )
    return out


def load(vs: VectorStore, coll: str, n: int, dim: int, pool: list[str]) -> float:
    started = time.perf_counter()
    for start in range(0, n, 10_000):
        vs(coll).upsert_sync(rows(min(10_000, n - start), dim, pool, seed=start))
    vs(coll).optimize_sync()
    return time.perf_counter() - started


def turn_fetch(
    vs: VectorStore, coll: str, queries: list[str], loop: asyncio.AbstractEventLoop, **options: Any
) -> Callable[[int], int]:
    """A function of a query's number that fetches through the retrieval callbacks on a turn."""
    callbacks = create_vector_retrievable_callbacks(
        store=vs, collection=coll, trust_tier="first-party", **options
    )
    history = InMemoryMessageStore()
    runner = TurnRunner(
        TurnRunnerConfig(
            model=ScriptedModel(["ok"]),
            fetch_messages=history.fetch_messages,
            store_message=history.store_message,
            **callbacks,
        )
    )
    contexts = []
    for n, q in enumerate(queries):  # the turns exist before timing; only the fetch is timed
        ctx = runner.new_context(conversation_id=f"q{n}")
        loop.run_until_complete(history.store_message(ctx, Message(role="user", content=q)))
        contexts.append(ctx)
    return lambda n: len(loop.run_until_complete(contexts[n].fetch_retrievables()))


def vector_only_options() -> dict[str, Any]:
    """The callbacks' vector-only setting: ``hybrid=False``, or a settings value if that is the spelling."""
    if "hybrid" in inspect.signature(create_vector_retrievable_callbacks).parameters:
        return {"hybrid": False}
    from turnkit.batteries import vector

    return {"settings": vector.RetrievalSettings(hybrid=False)}


def measure(
    vs: VectorStore, coll: str, queries: list[str], loop: asyncio.AbstractEventLoop
) -> dict[str, list[float]]:
    """Seconds per query of each system on one collection, the systems alternated per query."""
    base = vs(coll).select("id", "document", "metadata").limit(TOP_K)
    systems = {
        VECTOR_ONLY: lambda n: len(base.near_text(queries[n]).search_sync()),
        ".near_text().hybrid()": lambda n: len(base.near_text(queries[n]).hybrid().search_sync()),
        CALLBACKS_VECTOR_ONLY: turn_fetch(vs, coll, queries, loop, **vector_only_options()),
        DEFAULT: turn_fetch(vs, coll, queries, loop),
    }
    for fn in systems.values():  # warm-up: builds the full-text index, opens the table
        fn(0)
    # The in-memory full-text leg is built off the searches' path after the first hybrid search: wait
    # for it (or for its refusal), so the timed searches measure the steady state.
    started = time.perf_counter()
    while time.perf_counter() - started < 300:
        snapshot = vs._memory._snapshots.get(coll)
        lexical = None if snapshot is None else snapshot.lexical
        if lexical is False or (lexical is not None and hasattr(lexical, "vocab")):
            print(f"  full-text leg in memory: {lexical is not False}", file=sys.stderr)
            break
        if vs._memory.config is None or not vs._memory.config.full_text:
            break
        systems[".near_text().hybrid()"](0)
        time.sleep(0.05)
    samples, found = alternate(systems, range(len(queries)))
    assert all(x == TOP_K for v in found.values() for x in v), "a system returned fewer than top_k"
    return samples


DEFAULT = "default: callbacks, no options"
CALLBACKS_VECTOR_ONLY = "callbacks, vector only"
VECTOR_ONLY = "near_text(), vector only"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated row counts")
    parser.add_argument("--queries", type=int, default=120)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--index", action="store_true", help="build the default vector index first")
    parser.add_argument(
        "--lexical-from",
        choices=("memory", "lancedb"),
        default="memory",
        help="where the full-text leg is answered for a cached collection (MemoryCache.full_text)",
    )
    parser.add_argument(
        "--plain-text",
        action="store_true",
        help="draw rows only from sentences without non-ASCII letters (the text memory scores exactly)",
    )
    args = parser.parse_args()

    questions = [q["question"] for q in json.loads(QUESTIONS.read_text())["questions"]]
    queries = [questions[i % len(questions)] for i in range(args.queries)]
    pool = sentence_pool()
    if args.plain_text:
        pool = [s for s in pool if plain(s)]
    print(f"{len(pool)} sentences to draw rows from; {len(queries)} queries per size", file=sys.stderr)
    out_rows: list[tuple[str, ...]] = []
    loop = asyncio.new_event_loop()
    with tempfile.TemporaryDirectory() as tmp:
        cache = MemoryCache(full_text=args.lexical_from == "memory")
        vs = create_vector_store(
            uri=tmp, encoder=HashEncoder(args.dim), auto_optimize=None, memory_cache=cache
        )
        for size in (int(s) for s in args.sizes.split(",")):
            coll = f"rows{size}"
            took = load(vs, coll, size, args.dim, pool)
            if args.index:
                print(f"  index: {vs(coll).create_index_sync('auto')}", file=sys.stderr)
            print(f"  loaded {size} rows in {took:.1f} s", file=sys.stderr)
            samples = measure(vs, coll, queries, loop)
            base_ms = median_ms(samples[VECTOR_ONLY])
            same_surface_ms = median_ms(samples[CALLBACKS_VECTOR_ONLY])
            for name, s in samples.items():
                p50 = median_ms(s)
                ratios = (
                    f"{p50 / base_ms:.2f}",
                    f"{p50 / same_surface_ms:.2f}" if "callbacks" in name else "",
                )
                out_rows.append((f"{size:,}", name, f"{p50:.2f}", f"{p95_ms(s):.2f}", *ratios))
    loop.close()
    header = ("rows", "system", "p50 ms", "p95 ms", "p50 / near_text()", "p50 / callbacks vector only")
    print(table(out_rows, header))
    print(f"peak RSS {peak_rss_mb():.0f} MiB; goal: the default's p50 at most 2x vector-only's")


if __name__ == "__main__":
    main()
