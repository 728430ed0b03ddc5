"""Hybrid fusion: one ranking from the dense and the full-text leg, as small objects on one base.

Each fusion is a frozen value holding its weights (``alpha`` has Vertex's
meaning: 0 is lexical only, 1 is dense only) and one method, `Fusion.fuse`,
over the two legs' ``(id, score)`` lists in their own order; the store runs
the legs and calls `Fusion.fuse_matches`. A new fusion is a subclass with its
``fuse`` (and `Fusion.for_query` when it takes options of its own) and a name
in `FUSIONS`; `fusion_for` builds the one a `HybridSpec` names.

The contract every fusion keeps (``tests/ranking/test_fusion.py``): each id
once, best first, scores in [0, 1], every id of a leg with a non-zero weight
and none of a leg with a zero weight; ties keep the dense order, then the
lexical order. Fused scores rank; they do not measure relevance, so a
threshold never reads them (`store/_hybrid.py`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.query._ranking_specs import DEFAULT_ALPHA, DEFAULT_RRF_K, HybridSpec

__all__ = ["FUSIONS", "Fusion", "LinearFusion", "RRFFusion", "ZScoreFusion", "fusion_for"]

Pairs = Sequence[tuple[str, float]]


def _first(pairs: Pairs) -> dict[str, float]:
    """``{id: score}`` in the leg's order; the first occurrence of an id wins."""
    first: dict[str, float] = {}
    for doc, value in pairs:
        first.setdefault(doc, float(value))
    return first


def min_max_scaled(values: Sequence[float]) -> list[float]:
    """``values`` scaled to [0, 1] (all 1 when equal): the vector signal, and linear fusion's legs."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [1.0] * len(values)
    return [(v - low) / (high - low) for v in values]


@dataclass(frozen=True, slots=True)
class Fusion(ABC):
    """How a hybrid search turns its two legs into one ranking.

    Attributes:
        alpha: Weight of the dense leg, in [0, 1]; ``1 - alpha`` goes to the lexical leg.
    """

    alpha: float = DEFAULT_ALPHA

    @classmethod
    def for_query(cls, hybrid: HybridSpec, text: str | None, pool: int) -> Fusion:
        """The fusion with ``hybrid``'s options for a query whose full-text words are ``text``.

        ``pool`` is how many matches each leg is asked for.
        """
        return cls(hybrid.alpha_for(text))

    @abstractmethod
    def fuse(self, dense: Pairs, lexical: Pairs) -> list[tuple[str, float]]:
        """Fuse the legs into ``(id, score)`` pairs, best first.

        Args:
            dense: ``(id, similarity)`` in vector-search order.
            lexical: ``(id, bm25)`` in full-text order.
        """

    def fuse_matches(
        self, dense: Sequence[VectorMatch], lexical: Sequence[VectorMatch], bm25: Sequence[float]
    ) -> list[VectorMatch]:
        """The legs' matches in fused order, each scored by the fusion (the dense copy keeps its distance)."""
        fused = self.fuse(
            [(m.id, m.score or 0.0) for m in dense], list(zip([m.id for m in lexical], bm25, strict=True))
        )
        by_id = {m.id: m for m in (*lexical, *dense)}  # the dense copy wins
        return [replace(by_id[doc], score=score) for doc, score in fused]


@dataclass(frozen=True, slots=True)
class RRFFusion(Fusion):
    """Weighted reciprocal rank fusion: only the legs' ranks count, never their scores.

    A document scores ``alpha/(k + r_dense) + (1 - alpha)/(k + r_lexical)``
    (ranks from 1; a leg that missed it adds nothing), scaled by ``k + 1`` so a
    document ranked first by both legs scores 1.

    Attributes:
        k: Rank offset (>= 1); larger values flatten the head of each ranking.
    """

    k: int = DEFAULT_RRF_K

    @classmethod
    def for_query(cls, hybrid: HybridSpec, text: str | None, pool: int) -> Fusion:
        return cls(hybrid.alpha_for(text), k=hybrid.rrf_k)

    def fuse(self, dense: Pairs, lexical: Pairs) -> list[tuple[str, float]]:
        scores: dict[str, float] = {}
        order: dict[str, list[int]] = {}  # the document's dense and lexical ranks, for tie-breaking
        absent = 1 << 62  # rank of a leg that missed the document
        for weight, pairs, leg in ((self.alpha, dense, 0), (1.0 - self.alpha, lexical, 1)):
            if weight <= 0:
                continue
            for rank, doc in enumerate(_first(pairs), start=1):
                scores[doc] = scores.get(doc, 0.0) + weight * (self.k + 1) / (self.k + rank)
                order.setdefault(doc, [absent, absent])[leg] = rank
        ranked = sorted(scores, key=lambda d: (-scores[d], *order[d]))
        return [(doc, min(1.0, scores[doc])) for doc in ranked]


@dataclass(frozen=True, slots=True)
class LinearFusion(Fusion):
    """``alpha·dense + (1 - alpha)·lexical`` over each leg's scores min-max scaled to [0, 1].

    A document a leg did not return scores 0 there.
    """

    def fuse(self, dense: Pairs, lexical: Pairs) -> list[tuple[str, float]]:
        alpha = self.alpha
        legs = _first(dense), _first(lexical)
        dense_n, lexical_n = (dict(zip(leg, min_max_scaled(list(leg.values())), strict=True)) for leg in legs)
        position = {d: i for i, d in enumerate(dict.fromkeys([*legs[0], *legs[1]]))}
        docs = set(dense_n) if alpha >= 1 else set(lexical_n) if alpha <= 0 else set(dense_n) | set(lexical_n)
        scores = {d: alpha * dense_n.get(d, 0.0) + (1.0 - alpha) * lexical_n.get(d, 0.0) for d in docs}
        ranked = sorted(docs, key=lambda d: (-scores[d], position[d]))
        return [(d, min(1.0, max(0.0, scores[d]))) for d in ranked]


@dataclass(frozen=True, slots=True)
class ZScoreFusion(Fusion):
    """Each leg's raw scores z-scored over both legs' candidates, blended by ``alpha`` (the default).

    A document a leg did not return scores that leg's floor: the dense leg's
    lowest similarity, and BM25 0 for the lexical leg when it came back short
    of ``pool`` (it then returned every document holding a query term), else
    its lowest score. So a lone exact lexical hit stays far ahead instead of
    being pulled down to the dense leg's ranks, which is what RRF does. The
    blend is mapped into (0, 1) by the logistic function, which keeps the order.

    With ``lead``, the lexical leg's best hit comes first whenever its own
    z-score (over the same candidates) is at least ``lead``: a confident
    full-text hit is never pulled below a dense one. It then scores as much
    as the best fused score, so scores still fall in order.

    Attributes:
        pool: How many results each leg was asked for (``None``: the lexical
            leg is taken as complete).
        lead: The lexical z-score from which the lexical leg's best hit leads
            (``None``: never; ignored when ``alpha`` is 1).
    """

    pool: int | None = None
    lead: float | None = None

    @classmethod
    def for_query(cls, hybrid: HybridSpec, text: str | None, pool: int) -> Fusion:
        return cls(hybrid.alpha_for(text), pool=pool, lead=hybrid.lead_for(text))

    def fuse(self, dense: Pairs, lexical: Pairs) -> list[tuple[str, float]]:
        alpha = self.alpha
        dense_s, lexical_s = _first(dense), _first(lexical)
        # Ties keep the dense order, then the lexical order (only the lexical order when it alone counts).
        leading = [*lexical_s] if alpha <= 0 else [*dense_s, *lexical_s]
        position = {d: i for i, d in enumerate(dict.fromkeys(leading))}
        docs = list(dense_s) if alpha >= 1 else list(lexical_s) if alpha <= 0 else list(position)
        if not docs:
            return []
        floors = (
            min(dense_s.values(), default=0.0),
            0.0 if self.pool is None or len(lexical_s) < self.pool else min(lexical_s.values(), default=0.0),
        )
        fused = np.zeros(len(docs), dtype=np.float64)
        zs: list[np.ndarray[Any, Any]] = []
        for weight, leg, floor in ((alpha, dense_s, floors[0]), (1.0 - alpha, lexical_s, floors[1])):
            values = np.array([leg.get(d, floor) for d in docs], dtype=np.float64)
            std = float(values.std())
            z = (values - values.mean()) / std if std > 1e-12 else np.zeros(len(docs))
            zs.append(z)
            if weight > 0:
                fused += weight * z
        leader = -1
        if self.lead is not None and alpha < 1 and lexical_s:
            best = docs.index(max(lexical_s, key=lambda d: lexical_s[d]))  # the first of equal best
            if zs[1][best] >= self.lead:
                leader = best
                fused[best] = max(fused[best], float(fused.max()))
        ranked = sorted(range(len(docs)), key=lambda i: (-fused[i], i != leader, position[docs[i]]))
        return [(docs[i], float(1.0 / (1.0 + np.exp(-fused[i])))) for i in ranked]


FUSIONS: dict[str, type[Fusion]] = {"rrf": RRFFusion, "linear": LinearFusion, "zscore": ZScoreFusion}
"""The fusion each ``fusion=`` name stands for (`HybridSpec.fusion`)."""


def fusion_for(hybrid: HybridSpec, text: str | None, pool: int) -> Fusion:
    """The fusion ``hybrid`` names, for a query with the full-text words ``text`` (`Fusion.for_query`)."""
    return FUSIONS[hybrid.fusion].for_query(hybrid, text, pool)
