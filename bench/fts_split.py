"""The full-text leg from LanceDB: its boolean query of words and phrases against turnkit's split clauses.

    python bench/fts_split.py                          # 100,000 rows
    python bench/fts_split.py --rows 300000 --db DIR   # DIR keeps the table for a later run

The rows are ``bench/hybrid_cost.py``'s (real sentences, 100 to 300 words a
row) with LanceDB's full-text index as turnkit builds it (positions kept).
Each developer question of ``bench/data/devq_questions.json`` that has a
phrase clause (an identifier such as ``pygame.key.set_repeat``, or quoted
text) is asked for 15 rows both ways, alternated per question, 3 times:

- LanceDB: ``full_text_query(text, True)``, one boolean query, as turnkit ran it before;
- turnkit: ``full_text_rows``, the words and each phrase as queries of their
  own, summed in Python, plus a query by row id where a row holding a phrase
  could still make the pool.

Prints p50/p95 of each and the ratio, and checks that both return the same
rows with the same scores (equal scores may come in another order). A
question whose phrase more than ``PHRASE_ROWS`` rows hold runs the boolean
query either way; it is counted apart. A script, not a test: nothing here
asserts on timings.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table
from hybrid_cost import QUESTIONS, rows, sentence_pool

from turnkit._aio import run_sync
from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.batteries.vector.ranking._phrases import query_phrases
from turnkit.batteries.vector.store import _hybrid
from turnkit.batteries.vector.store._hybrid import ensure_fts_index, full_text_query, full_text_rows

POOL = 15


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--db", default=None, help="keep the table here and reuse it")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        uri = str(Path(args.db) / f"fts-{args.rows}") if args.db else scratch
        vs = create_vector_store(uri=uri, encoder=HashEncoder(256), auto_optimize=None, memory_cache=None)
        if "h" not in vs.list_collections_sync():
            pool = sentence_pool()
            started = time.perf_counter()
            for start in range(0, args.rows, 10_000):
                vs("h").upsert_sync(rows(min(10_000, args.rows - start), 256, pool, seed=start))
            print(f"loaded {args.rows:,} rows in {time.perf_counter() - started:.1f} s", flush=True)

        async def handle() -> Any:
            coll = await vs._collection("h")
            await ensure_fts_index(coll)
            return coll

        coll = run_sync(handle())
        questions = [q["question"] for q in json.loads(QUESTIONS.read_text())["questions"]]
        asked = [q for q in questions if query_phrases(q)]

        async def boolean(text: str) -> list[dict[str, Any]]:
            query = coll.table.query().nearest_to_text(full_text_query(text, True))
            found: list[dict[str, Any]] = await query.select(["id", "_score"]).limit(POOL).to_list()
            return found

        def held_by_many(text: str) -> bool:
            async def count() -> bool:
                from lancedb.query import PhraseQuery  # noqa: TID251 - the baseline is LanceDB's query

                for phrase in query_phrases(text):
                    clause = PhraseQuery(phrase, "document", slop=0, document_granularity=None)
                    query = coll.table.query().nearest_to_text(clause).select(["_score"])
                    if len(await query.limit(_hybrid.PHRASE_ROWS + 1).to_list()) > _hybrid.PHRASE_ROWS:
                        return True
                return False

            return run_sync(count())

        times: dict[str, list[float]] = {"LanceDB boolean": [], "turnkit split": []}
        same = differ = 0
        whole = [q for q in asked if held_by_many(q)]
        for _ in range(args.rounds):
            for n, text in enumerate(asked):
                if text in whole:
                    continue
                runs = [("LanceDB boolean", boolean), ("turnkit split", None)]
                for name, fn in runs if n % 2 else runs[::-1]:
                    started = time.perf_counter()
                    if fn is None:
                        got = run_sync(full_text_rows(coll, text, None, True, ["id"], POOL))
                    else:
                        theirs = run_sync(fn(text))
                    times[name].append(time.perf_counter() - started)
                mine = [(r["id"], float(r["_score"])) for r in got]
                ref = [(r["id"], float(r["_score"])) for r in theirs]
                last = ref[-1][1] if ref else 0.0
                scores_equal = np.allclose([s for _, s in mine], [s for _, s in ref], rtol=1e-6, atol=0)
                untied = {i for i, s in mine if not np.isclose(s, last, rtol=1e-6, atol=0)} == {
                    i for i, s in ref if not np.isclose(s, last, rtol=1e-6, atol=0)
                }
                if len(mine) == len(ref) and scores_equal and untied:
                    same += 1
                else:
                    differ += 1
                    print(f"  differs: {text!r}\n    turnkit {mine[:5]}\n    LanceDB {ref[:5]}")
    out = []
    base = float(np.median(times["LanceDB boolean"]))
    for name, samples in times.items():
        p50, p95 = float(np.median(samples)) * 1000, float(np.percentile(samples, 95)) * 1000
        out.append((name, f"{p50:.2f}", f"{p95:.2f}", f"{np.median(samples) / base:.2f}"))
    print(
        f"{args.rows:,} rows; {len(asked)} of {len(questions)} questions have a phrase clause, "
        f"{len(whole)} of them one held by over {_hybrid.PHRASE_ROWS} rows (the boolean query either way); "
        f"{args.rounds} rounds; same rows and scores {same}, different {differ}"
    )
    print(table(out, ("system", "p50 ms", "p95 ms", "p50 ÷ LanceDB")))


if __name__ == "__main__":
    main()
