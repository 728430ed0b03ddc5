"""Maximal marginal relevance: trade a little relevance for less repetition.

Greedy MMR (Carbonell & Goldstein, 1998) over an over-fetched candidate pool:
each pick maximizes ``λ·relevance − (1 − λ)·max cosine(candidate, picked)``.
Relevance is the match's own score (vector similarity, or the fused score of
a hybrid query), so diversification works the same after any ranking.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from turnkit.batteries.vector._matches import VectorMatch

__all__ = ["DEFAULT_LAMBDA", "MmrSpec", "diversify", "mmr_select"]

from turnkit.batteries.vector.query._ranking_specs import DEFAULT_LAMBDA, MmrSpec


def mmr_select(
    relevance: Sequence[float], vectors: npt.ArrayLike, k: int, *, lambda_mult: float = DEFAULT_LAMBDA
) -> list[int]:
    """Pick ``k`` candidates by maximal marginal relevance; returns their indices in pick order.

    Args:
        relevance: Higher-is-better score of each candidate.
        vectors: One row per candidate (any scale; cosine is used).
        k: How many to pick (fewer when there are fewer candidates).
        lambda_mult: In [0, 1]; 1 returns the relevance order.

    Returns:
        Distinct indices; the first is always the most relevant candidate.
    """
    rel = np.asarray(relevance, dtype=np.float64)
    n = rel.size
    if n == 0 or k <= 0:
        return []
    matrix = np.asarray(vectors, dtype=np.float64).reshape(n, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms == 0, 1.0, norms)
    sims = unit @ unit.T
    picked: list[int] = []
    closest = np.full(n, -np.inf)  # max similarity of each candidate to anything picked
    available = np.ones(n, dtype=bool)
    for _ in range(min(k, n)):
        gain = lambda_mult * rel - (1.0 - lambda_mult) * closest if picked else rel.copy()
        gain[~available] = -np.inf
        best = int(np.argmax(gain))  # argmax takes the first of equal gains: stable
        picked.append(best)
        available[best] = False
        closest = np.maximum(closest, sims[best])
    return picked


def diversify(
    matches: Sequence[VectorMatch], k: int, *, lambda_mult: float = DEFAULT_LAMBDA
) -> list[VectorMatch]:
    """MMR over matches that carry a ``vector`` and a ``score``; returns ``k`` in pick order.

    Matches without a vector are treated as orthogonal to everything; a
    missing score counts as 0.
    """
    if not matches:
        return []
    dims = {len(m.vector) for m in matches if m.vector}
    dim = dims.pop() if len(dims) == 1 else 0
    rows = np.zeros((len(matches), max(dim, 1)))
    for i, match in enumerate(matches):
        if dim and match.vector:
            rows[i] = match.vector
    relevance = [m.score or 0.0 for m in matches]
    return [matches[i] for i in mmr_select(relevance, rows, k, lambda_mult=lambda_mult)]
