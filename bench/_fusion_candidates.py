"""Candidate fusions of the two hybrid legs, as pure functions (measured by bench/quality.py).

Every candidate takes the dense leg ``[(id, similarity)]`` and the lexical leg
``[(id, score)]``, each best first, and returns ``[(id, score)]`` best first.
The lexical scores may be any increasing affine map of BM25 (turnkit's
``hybrid(alpha=0, fusion="linear")`` returns them min-max scaled); every
candidate here except ``minmax`` is invariant to such a map.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np

from turnkit.batteries.vector.store._hybrid import linear_fuse, rrf_fuse

Leg = Sequence[tuple[str, float]]
Fused = list[tuple[str, float]]
Fuser = Callable[..., Fused]  # (query, dense, lexical, *, pool) -> fused


def _first(leg: Leg) -> dict[str, float]:
    out: dict[str, float] = {}
    for doc, value in leg:
        out.setdefault(doc, float(value))
    return out


def _z(leg: Leg) -> tuple[dict[str, float], float]:
    """Z-scores within the leg, and the z a document the leg did not return gets (its lowest)."""
    scores = _first(leg)
    if not scores:
        return {}, 0.0
    values = np.fromiter(scores.values(), dtype=np.float64)
    std = float(values.std())
    if std <= 1e-12:
        return dict.fromkeys(scores, 0.0), 0.0
    z = (values - values.mean()) / std
    return dict(zip(scores, z.tolist(), strict=True)), float(z.min())


def _zu(leg: Leg, union: Sequence[str], floor: float) -> tuple[dict[str, float], float]:
    """Z-scores over every candidate of either leg; one this leg did not return scores ``floor``.

    A leg that returned a single hit still says something: that hit stands
    out from the other leg's candidates, which it scored at the floor.
    """
    scores = _first(leg)
    if not union:
        return {}, 0.0
    values = np.array([scores.get(d, floor) for d in union], dtype=np.float64)
    std = float(values.std())
    if std <= 1e-12:
        return dict.fromkeys(union, 0.0), 0.0
    z = (values - values.mean()) / std
    return dict(zip(union, z.tolist(), strict=True)), float((floor - values.mean()) / std)


def _zlegs(
    dense: Leg, lexical: Leg, pool: int
) -> tuple[tuple[dict[str, float], float], tuple[dict[str, float], float]]:
    """Both legs' union z-scores: a dense miss sits at the leg's lowest similarity; a lexical miss
    at BM25 0 when the leg came back short of ``pool`` (it returned every document with a term),
    else at its lowest score."""
    union = list(dict.fromkeys([d for d, _ in dense] + [d for d, _ in lexical]))
    dfloor = min((s for _, s in dense), default=0.0)
    lfloor = 0.0 if len(lexical) < pool else min((s for _, s in lexical), default=0.0)
    return _zu(dense, union, dfloor), _zu(lexical, union, lfloor)


def _combine(dense: Leg, lexical: Leg, parts: list[tuple[float, dict[str, float], float]]) -> Fused:
    position = {d: i for i, d in enumerate(dict.fromkeys([d for d, _ in dense] + [d for d, _ in lexical]))}
    scores = {d: sum(w * leg.get(d, floor) for w, leg, floor in parts if w > 0) for d in position}
    return sorted(scores.items(), key=lambda kv: (-kv[1], position[kv[0]]))


def rrf(query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5) -> Fused:
    return rrf_fuse([d for d, _ in dense], [d for d, _ in lexical], alpha=alpha)


def minmax(query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5) -> Fused:
    return linear_fuse(dense, lexical, alpha=alpha)


def zscore(query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5) -> Fused:
    """Each leg z-scored over its own hits; a miss gets the leg's lowest z."""
    (zd, fd), (zl, fl) = _z(dense), _z(lexical)
    return _combine(dense, lexical, [(alpha, zd, fd), (1 - alpha, zl, fl)])


def dbsf(query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5) -> Fused:
    """Distribution-based score fusion: each leg scaled so mean ± 3 sd maps to [0, 1]; a miss scores 0."""

    def scaled(leg: Leg) -> dict[str, float]:
        scores = _first(leg)
        if not scores:
            return {}
        v = np.fromiter(scores.values(), dtype=np.float64)
        lo, span = v.mean() - 3 * v.std(), max(6 * v.std(), 1e-12)
        return dict(zip(scores, np.clip((v - lo) / span, 0, 1).tolist(), strict=True))

    return _combine(dense, lexical, [(alpha, scaled(dense), 0.0), (1 - alpha, scaled(lexical), 0.0)])


def uz(query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5) -> Fused:
    """Union z-score fusion (see `_zlegs`) with a fixed dense weight."""
    (zd, fd), (zl, fl) = _zlegs(dense, lexical, pool)
    return _combine(dense, lexical, [(alpha, zd, fd), (1 - alpha, zl, fl)])


def _top_z(z: dict[str, float]) -> float:
    """How far a leg's best hit stands out from the candidates (its z-score); 0 for an empty leg."""
    return max(z.values()) if z else 0.0


def _gap(leg: Leg, n: int = 10) -> float:
    """The relative gap between a leg's 1st and ``n``-th hit: (s1 - sn) / (s1 - s_last)."""
    values = list(_first(leg).values())
    if len(values) < 2 or values[0] - values[-1] <= 1e-12:
        return 1.0 if values else 0.0
    return (values[0] - values[min(n, len(values)) - 1]) / (values[0] - values[-1])


_IDENT = re.compile(r"[A-Za-z0-9]_|[a-z][A-Z]|\w\.\w|\d|[\"'`]")


def shaped(query: str) -> bool:
    """A lookup-shaped query: an identifier, digits, quotes, or one or two words."""
    return len(query.split()) <= 2 or bool(_IDENT.search(query))


def uzconf(
    query: str,
    dense: Leg,
    lexical: Leg,
    *,
    pool: int = 30,
    scale: float = 1.0,
    shape: bool = False,
    long: int = 0,
) -> Fused:
    """Union z with per-query weights: each leg weighted by how far its top hit stands out.

    ``scale`` multiplies the dense share (1 keeps it); ``shape`` halves it for
    lookup-shaped queries; ``long`` > 0 restores the plain share for queries of
    more than ``long`` words (a passage used as the query).
    """
    (zd, fd), (zl, fl) = _zlegs(dense, lexical, pool)
    cd, cl = max(_top_z(zd), 1e-6), max(_top_z(zl), 1e-6)
    wd = cd / (cd + cl)
    if not (long and len(query.split()) > long):
        wd *= scale
        if shape and shaped(query):
            wd /= 2
    return _combine(dense, lexical, [(wd, zd, fd), (1 - wd, zl, fl)])


def uzgap(query: str, dense: Leg, lexical: Leg, *, pool: int = 30) -> Fused:
    """Union z with leg weights from each leg's 1st-to-10th score gap."""
    (zd, fd), (zl, fl) = _zlegs(dense, lexical, pool)
    gd, gl = max(_gap(dense), 1e-6), max(_gap(lexical), 1e-6)
    return _combine(dense, lexical, [(gd / (gd + gl), zd, fd), (gl / (gd + gl), zl, fl)])


def uzagree(query: str, dense: Leg, lexical: Leg, *, pool: int = 30) -> Fused:
    """``uzconf``, but when the legs' top 10 barely overlap the more confident leg leads (0.8)."""
    (zd, fd), (zl, fl) = _zlegs(dense, lexical, pool)
    cd, cl = max(_top_z(zd), 1e-6), max(_top_z(zl), 1e-6)
    wd = cd / (cd + cl)
    if len({d for d, _ in dense[:10]} & {d for d, _ in lexical[:10]}) < 2:
        wd = 0.8 if cd >= cl else 0.2
    return _combine(dense, lexical, [(wd, zd, fd), (1 - wd, zl, fl)])


def uzshape(
    query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5, long: int = 0
) -> Fused:
    """Union z at ``alpha``, 0.25 for lookup-shaped queries; 0.5 for queries over ``long`` words."""
    a = 0.5 if long and len(query.split()) > long else (0.25 if shaped(query) else alpha)
    return uz(query, dense, lexical, pool=pool, alpha=a)


def uzlen(
    query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.2, long: int = 40
) -> Fused:
    """Union z at ``alpha`` for a short query, 0.5 for a passage (more than ``long`` words)."""
    return uz(query, dense, lexical, pool=pool, alpha=0.5 if len(query.split()) > long else alpha)


def _with(f: Fuser, **kw: object) -> Fuser:
    return lambda query, dense, lexical, *, pool=30: f(query, dense, lexical, pool=pool, **kw)


CANDIDATES: dict[str, Fuser] = {
    "rrf a=0.5 (old default)": rrf,
    "rrf a=0.2": _with(rrf, alpha=0.2),
    "min-max linear a=0.5": minmax,
    "min-max linear a=0.2": _with(minmax, alpha=0.2),
    "z (own hits) a=0.5": zscore,
    "DBSF a=0.5": dbsf,
    "union z a=0.5": uz,
    "union z a=0.3": _with(uz, alpha=0.3),
    "union z a=0.2": _with(uz, alpha=0.2),
    "union z, conf weights": uzconf,
    "union z, gap weights": uzgap,
    "union z, conf + disagreement": uzagree,
    "union z a=0.3, shape": _with(uzshape, alpha=0.3),
    "union z, conf + shape": _with(uzconf, shape=True),
    "union z, conf x0.5 + shape": _with(uzconf, scale=0.5, shape=True),
    "union z, conf x0.5 + shape, long=passage": _with(uzconf, scale=0.5, shape=True, long=40),
    "union z a=0.3, shape, long=passage": _with(uzshape, alpha=0.3, long=40),
    "union z a=0.2, long=passage": uzlen,
    "union z a=0.1, long=passage": _with(uzlen, alpha=0.1),
    "union z a=0.05, long=passage": _with(uzlen, alpha=0.05),
}
