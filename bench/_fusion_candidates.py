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

from turnkit.batteries.vector import LinearFusion, RRFFusion, ZScoreFusion

Leg = Sequence[tuple[str, float]]
Fused = list[tuple[str, float]]
Fuser = Callable[..., Fused]  # (query, dense, lexical, *, pool) -> fused


def _first(leg: Leg) -> dict[str, float]:
    out: dict[str, float] = {}
    for doc, value in leg:
        out.setdefault(doc, float(value))
    return out


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
    return RRFFusion(alpha).fuse(dense, lexical)


def minmax(query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5) -> Fused:
    return LinearFusion(alpha).fuse(dense, lexical)


def uz(query: str, dense: Leg, lexical: Leg, *, pool: int = 30, alpha: float = 0.5) -> Fused:
    """Union z-score fusion (see `_zlegs`) with a fixed dense weight."""
    (zd, fd), (zl, fl) = _zlegs(dense, lexical, pool)
    return _combine(dense, lexical, [(alpha, zd, fd), (1 - alpha, zl, fl)])


def _top_z(z: dict[str, float]) -> float:
    """How far a leg's best hit stands out from the candidates (its z-score); 0 for an empty leg."""
    return max(z.values()) if z else 0.0


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


def uzlead(
    query: str,
    dense: Leg,
    lexical: Leg,
    *,
    pool: int = 30,
    alpha: float = 0.2,
    long: int = 40,
    lead: float = 2.5,
) -> Fused:
    """``uzlen``, and a short query's best full-text hit stays first when its union z is at least ``lead``.

    This is turnkit's default (`ZScoreFusion` with ``lead``): a confident lexical
    hit is never pulled below a dense one; passages (over ``long`` words) are
    fused as ``uzlen`` fuses them.
    """
    short = len(query.split()) <= long
    a = alpha if short else 0.5
    return ZScoreFusion(a, pool=pool, lead=lead if short else None).fuse(dense, lexical)


def uz_many(query: str, denses: Sequence[Leg], lexical: Leg, *, pool: int = 30, lead: float = 2.5) -> Fused:
    """``uzlead`` over several dense legs: they share the dense weight equally (z-scored over the union)."""
    short = len(query.split()) <= 40
    alpha = 0.2 if short else 0.5
    union = list(dict.fromkeys([d for leg in denses for d, _ in leg] + [d for d, _ in lexical]))
    parts = [(alpha / len(denses), *_zu(leg, union, min((s for _, s in leg), default=0.0))) for leg in denses]
    lfloor = 0.0 if len(lexical) < pool else min((s for _, s in lexical), default=0.0)
    zl, fl = _zu(lexical, union, lfloor)
    fused = _combine([p for leg in denses for p in leg], lexical, [*parts, (1 - alpha, zl, fl)])
    if short and lexical and zl.get(lexical[0][0], 0.0) >= lead and fused[0][0] != lexical[0][0]:
        top = dict(fused)[lexical[0][0]]
        fused = [(lexical[0][0], max(top, fused[0][1])), *[p for p in fused if p[0] != lexical[0][0]]]
    return fused


CANDIDATES: dict[str, Fuser] = {
    "rrf a=0.5 (old default)": rrf,
    "min-max linear a=0.2": _with(minmax, alpha=0.2),
    "union z a=0.5": uz,
    "union z, conf weights": uzconf,
    "union z a=0.3, shape, long=passage": _with(uzshape, alpha=0.3, long=40),
    "union z a=0.2, long=passage": uzlen,
    "union z a=0.1, long=passage": _with(uzlen, alpha=0.1),
    "union z a=0.2, long=passage, lead z 2.0": _with(uzlead, lead=2.0),
    "union z a=0.2, long=passage, lead z 2.5": uzlead,
    "union z a=0.2, long=passage, lead z 3.0": _with(uzlead, lead=3.0),
}
