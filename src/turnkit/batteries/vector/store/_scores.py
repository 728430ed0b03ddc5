"""Turning LanceDB distances into scores that mean the same for every metric."""

from __future__ import annotations

import math
from typing import Literal

__all__ = ["METRICS", "Metric", "distance_bound", "normalize_metric", "score_from_distance"]

Metric = Literal["cosine", "l2", "dot"]
METRICS: tuple[Metric, ...] = ("cosine", "l2", "dot")
_ALIASES: dict[str, Metric] = {"cosine": "cosine", "l2": "l2", "euclidean": "l2", "dot": "dot"}


def normalize_metric(name: str) -> Metric:
    """Map a metric name (``cosine``, ``l2``/``euclidean``, ``dot``) to its canonical form."""
    try:
        return _ALIASES[name.lower()]
    except (KeyError, AttributeError):
        raise ValueError(f"unknown metric {name!r}; use one of {', '.join(METRICS)}") from None


def score_from_distance(metric: Metric, distance: float) -> float:
    """Similarity in [0, 1], higher is closer.

    - ``cosine``: LanceDB's distance is ``1 - cos`` in [0, 2]; score ``1 - d/2``.
    - ``dot``: distance is ``1 - q·v``; score ``(1 + q·v) / 2`` = ``1 - d/2``,
      exact for unit vectors and clamped otherwise.
    - ``l2``: distance is the *squared* Euclidean distance; score ``1 / (1 + d)``.
    """
    if metric == "l2":
        value = 1.0 / (1.0 + max(distance, 0.0))
    else:
        value = 1.0 - distance / 2.0
    return min(1.0, max(0.0, value))


def distance_bound(metric: Metric, min_score: float) -> float:
    """The largest distance whose score is still ``>= min_score`` (inf when any distance qualifies)."""
    if min_score <= 0:
        return math.inf
    if metric == "l2":
        return 1.0 / min_score - 1.0
    return 2.0 * (1.0 - min_score)
