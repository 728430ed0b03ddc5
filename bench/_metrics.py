"""Metrics of bench/quality.py: R@k over distinct documents, graded nDCG@10 on Lee."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
from _sets import Query


def first_sentence(text: str) -> str:
    """A short topical query from a Lee document: its first sentence, at most 40 words."""
    head = re.split(r"(?<=[.!?])\s+", text.strip(), maxsplit=1)[0]
    return " ".join(head.split()[:40])


def doc_order(chunk_ids: Sequence[str], chunk_doc: dict[str, str]) -> list[str]:
    return list(dict.fromkeys(chunk_doc[c] for c in chunk_ids))


def recall_at(runs: list[tuple[Query, list[str]]], k: int) -> float:
    return sum(q.target in docs[:k] for q, docs in runs) / max(1, len(runs))


def ndcg10(ranked: list[int], i: int, human: np.ndarray) -> float:
    gains = [human[i, j] for j in ranked[:10]]
    ideal = sorted((human[i, j] for j in range(len(human)) if j != i), reverse=True)[:10]
    dcg = sum(g / math.log2(r + 2) for r, g in enumerate(gains))
    return float(dcg / sum(g / math.log2(r + 2) for r, g in enumerate(ideal)))
