"""The rerank prototype measured by bench/quality.py: MiniLM second-opinion vectors stored per window."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from _common import median_ms, table
from _metrics import doc_order, ndcg10, recall_at
from _sets import Query

from turnkit.batteries.vector import (
    EncoderScorer,
    MiniLMEncoder,
    RerankOptions,
    VectorMatch,
    rerank_sync,
)
from turnkit.ingest import split_text

Fused = list[tuple[str, float]]


class WindowScorer:
    """Relevance from MiniLM vectors computed once per chunk at write time: the best window's cosine.

    ``first_only`` keeps only each chunk's first window, which is what today's
    scorer sees after truncating a chunk to 256 tokens.
    """

    def __init__(self, encoder: MiniLMEncoder, texts: dict[str, str], *, first_only: bool = False) -> None:
        self.encoder = encoder
        self.windows: dict[str, np.ndarray] = {}
        flat: list[str] = []
        spans: list[tuple[str, int, int]] = []
        for text in dict.fromkeys(texts.values()):
            pieces = split_text(text, chunk_size=180, chunk_overlap=40) or [text]
            pieces = pieces[:1] if first_only else pieces
            spans.append((text, len(flat), len(flat) + len(pieces)))
            flat.extend(pieces)
        vectors = np.asarray(encoder.encode(flat, kind="document"), dtype=np.float32)
        self.windows = {text: vectors[a:b] for text, a, b in spans}
        self.count = len(flat)

    def score(self, query: str, passages: Sequence[str], /) -> list[float | None]:
        q = np.asarray(self.encoder.encode([query], kind="query"), dtype=np.float32)[0]
        return [
            None
            if p not in self.windows
            else float(min(1.0, max(0.0, (1 + float((self.windows[p] @ q).max())) / 2)))
            for p in passages
        ]


def rerank_section(
    benches: list[Any],
    encoders: dict[str, object],
    pools: dict[tuple[str, str], list[tuple[Query, Fused]]],
    human: np.ndarray,
) -> None:
    """Rerank the new default's top 40 on pydoc and Lee (MiniLM encodes every window: kept small)."""
    minilm = encoders["minilm"]
    assert isinstance(minilm, MiniLMEncoder)
    print("\n## Rerank of the new default's top 40 (WordLlama store), MiniLM second opinion, default blend\n")
    rows = []
    lat_best: list[float] = []
    for b in [x for x in benches if x.name in ("pydoc", "lee")]:
        t0 = time.perf_counter()
        best = WindowScorer(minilm, b.texts)
        write_s = time.perf_counter() - t0
        first = WindowScorer(minilm, b.texts, first_only=True)
        runs: dict[str, list[tuple[Query, list[str]]]] = {
            "none": [],
            "first 256 tokens": [],
            "best window": [],
        }
        for q, fused in pools[("wordllama", b.name)]:
            matches = [VectorMatch(id=d, score=s, document=b.texts[d]) for d, s in fused[:40]]
            runs["none"].append((q, [m.id for m in matches]))
            for label, scorer in (("first 256 tokens", first), ("best window", best)):
                t0 = time.perf_counter()
                out = rerank_sync(q.text, matches, RerankOptions(top_k=10), scorer=scorer)
                if label == "best window":
                    lat_best.append(time.perf_counter() - t0)
                runs[label].append((q, [r.match.id for r in out]))
        for label, rr in runs.items():
            if b.name == "lee":
                quality = [
                    ndcg10([int(x.split("-")[1]) for x in ids], int(q.target.split("-")[1]), human)
                    for q, ids in rr
                ]
                cells = ("-", "-", f"{np.mean(quality):.3f}")
            else:
                docs = [(q, doc_order(ids, b.chunk_doc)) for q, ids in rr]
                cells = (f"{recall_at(docs, 1):.2f}", f"{recall_at(docs, 5):.2f}", "-")
            cost = f"{write_s:.0f} s for {best.count} windows" if label == "best window" else "-"
            rows.append((b.name, label, *cells, cost))
    print(table(rows, ("set", "rerank", "R@1", "R@5", "nDCG@10", "write-time MiniLM encoding")))
    # today's scorer re-encodes the 40 candidates per query: time a few queries
    b = benches[0]
    scorer = EncoderScorer(minilm)
    lat_live = []
    for q, fused in pools[("wordllama", b.name)][:5]:
        matches = [VectorMatch(id=d, score=s, document=b.texts[d]) for d, s in fused[:40]]
        t0 = time.perf_counter()
        rerank_sync(q.text, matches, RerankOptions(top_k=10), scorer=scorer)
        lat_live.append(time.perf_counter() - t0)
    print(
        "\nper-query rerank latency, 40 candidates: "
        f"live MiniLM scorer {median_ms(lat_live):.0f} ms median (5 queries), "
        f"stored window vectors {median_ms(lat_best):.1f} ms median ({len(lat_best)} queries); "
        f"ratio {median_ms(lat_live) / max(median_ms(lat_best), 1e-9):.0f}x"
    )
