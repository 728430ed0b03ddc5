"""An int8 copy of a large matrix: a lone pass reads a quarter of the bytes, then exact rows near the cut.

An unfiltered pass over 100,000 x 256 float32 streams 100 MB from memory and
is bound by that. The copy holds each row as int8 codes and one scale
(``v = s·c + r``: ``s`` is the row's largest coordinate over 127), the query
is coded the same way (``q = t·d + e``), and numkong's SIMD kernels give the
integer dot products ``c·d`` exactly (at most 256 x 127² a term: exact in
float32). Then

    |q·v - s·t·(c·d)| <= |q|·|r| + |e|·|s·c|

so each coarse distance is within the largest such bound (plus rounding) of
the float32 one. `_Snapshot.top` computes the float32 distances of the coarse
best with the float32 pass's own einsum; a row whose coarse distance is more
than one bound past their k-th cannot be in the top k, and the rows within it
are computed the same way, so the answer is the float32 pass's, to the bit
(on the bench's data sets 18 to 2,700 rows a search in the median).

numkong's kernels are SIMD where the CPU has them (AVX2 and later on x86,
NEON or SVE on Arm); its plain C kernels can be slower than numpy's einsum,
so a copy is made only where the SIMD ones run (`pays`). The copy also holds
its codes in numkong's packed layout (`row_bytes`: 1.3x the codes' bytes at
256 dimensions, more for narrow rows), whose matrix product serves several
queued queries in one read (`dots_many`). numkong sums in int32, so rows of
more than 133,144 dimensions get no copy.
Rows or queries of extreme magnitude (`_SAFE`) keep the float32 pass: their
scales' products would leave float32's normal range.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["BLOCK", "Int8Copy", "Prepared", "pays"]

BLOCK = 16_384  # rows coded (and packed) at a time: the temporaries stay small whatever the matrix
_SAFE = (2.0**-40, 2.0**40)  # largest coordinates (rows and queries) a copy codes; 0 is fine too
# numkong sums the products of codes in int32: 127² a term, so wider rows would wrap.
_MAX_DIMENSION = (2**31 - 1) // 127**2
_TINY = np.float32(2.0**-60)


@dataclass(frozen=True, slots=True)
class Prepared:
    """A query coded for one pass: its codes, its scale and the pass's error bound.

    Attributes:
        codes: The query's int8 codes, one row.
        scale: ``t`` in ``q = t·d + e``.
        spread: ``|q|·R + |e|·C``: how far a weighted coarse dot product may be from the exact one.
    """

    codes: npt.NDArray[np.int8]
    scale: np.float32
    spread: float


class Int8Copy:
    """``matrix`` as int8 codes and per-row scales, with what bounds their rounding."""

    __slots__ = ("blocks", "codes", "scales", "_coded", "_residual")

    def __init__(
        self, codes: Any, scales: Any, residual: float, coded: float, blocks: list[Any] | None = None
    ) -> None:
        self.codes: npt.NDArray[np.int8] = codes
        self.scales: npt.NDArray[np.float32] = scales
        self._residual, self._coded = residual, coded  # R and C of the bound, weighted
        # The codes again, `BLOCK` rows at a time in numkong's packed layout for its matrix product
        # (`dots_many`); None where this numkong has none.
        self.blocks = blocks

    @classmethod
    def of(
        cls, matrix: npt.NDArray[np.float32], weights: npt.NDArray[np.float32] | None = None
    ) -> Int8Copy | None:
        """The copy, or ``None`` when a row's magnitude or width is outside what a copy codes.

        ``weights``: the factor per row the metric multiplies a dot product by
        (cosine: each row's inverse norm), so the bound is in the units the
        distances are computed in; ``None`` is 1 for every row.
        """
        import numkong  # here: only a store with a large copy needs it loaded

        n, dimension = matrix.shape
        if dimension > _MAX_DIMENSION:
            return None
        codes = np.empty((n, dimension), dtype=np.int8)
        scales = np.empty(n, dtype=np.float32)
        residual = coded = 0.0
        pack = getattr(numkong, "dots_pack", None)
        blocks: list[Any] | None = [] if pack is not None else None
        for start in range(0, n, BLOCK):
            block = matrix[start : start + BLOCK]
            top = np.maximum(block.max(axis=1), -block.min(axis=1))  # no |block| temporary
            if np.any((top != 0) & ((top < _SAFE[0]) | (top > _SAFE[1]))):
                return None
            scale = top / np.float32(127.0)
            # |v_j| / s <= 127 (1 + 2^-23) after the reciprocal's rounding: rint stays within int8.
            inverse = np.where(scale > 0, np.float32(1.0) / np.maximum(scale, _TINY), np.float32(0.0))
            work = block * inverse[:, None]
            np.rint(work, out=work)
            codes[start : start + len(block)] = work
            scales[start : start + len(block)] = scale
            np.multiply(work, scale[:, None], out=work)
            np.subtract(block, work, out=work)  # r = v - s·c, in float32
            r = np.sqrt(np.einsum("ij,ij->i", work, work)).astype(np.float64)
            v = np.sqrt(np.einsum("ij,ij->i", block, block)).astype(np.float64)
            # float32 rounding of r (each term, the sum of squares) is within 2e-6 |v|; |s·c| <= |v| + |r|.
            r += 2e-6 * v
            c = v * (1 + 1e-5) + r
            if weights is not None:
                w = weights[start : start + len(block)].astype(np.float64)
                r, c = r * w, c * w
            residual = max(residual, float(r.max(initial=0.0)))
            coded = max(coded, float(c.max(initial=0.0)))
            if blocks is not None and pack is not None:
                blocks.append(pack(codes[start : start + len(block)]))
        return cls(codes, scales, residual, coded, blocks)

    @staticmethod
    def row_bytes(dimension: int) -> int:
        """At most the bytes a copy holds per row: its codes, their scale and their packed layout.

        numkong 7.8 pads a packed row to a multiple of 64 bytes (64 more at powers of two), adds 8,
        and 64 to each block; the last 8 here cover that where a block holds 8 rows or more.
        """
        return dimension + 4 + (dimension + 136) + 8

    @property
    def nbytes(self) -> int:
        packed = sum(block.nbytes for block in self.blocks) if self.blocks is not None else 0
        return int(self.codes.nbytes + self.scales.nbytes + packed)

    def prepare(self, query: npt.NDArray[np.float32]) -> Prepared | None:
        """``query`` coded for a pass (``None``: its magnitude is one the float32 pass must take)."""
        top = float(np.abs(query).max()) if len(query) else 0.0
        if top != 0 and not _SAFE[0] <= top <= _SAFE[1]:
            return None
        scale = np.float32(top / 127.0)
        codes = np.rint(query / (scale if scale > 0 else np.float32(1.0))).astype(np.int8)
        exact = query.astype(np.float64)
        error = float(np.linalg.norm(exact - codes.astype(np.float64) * np.float64(scale)))
        spread = float(np.linalg.norm(exact)) * self._residual + error * self._coded
        return Prepared(codes.reshape(1, -1), scale, spread * (1 + 1e-9))

    def dots(self, prepared: Prepared, out: npt.NDArray[np.float32], start: int, stop: int) -> None:
        """The coarse dot products of rows ``start:stop`` with the prepared query, into ``out``."""
        import numkong  # here: only a store with a large copy needs it loaded

        part = out[start:stop]
        if stop > start:
            numkong.cdist(prepared.codes, self.codes[start:stop], metric="dot", out=part.reshape(1, -1))
        part *= self.scales[start:stop]
        part *= prepared.scale

    def dots_many(
        self, prepared: list[Prepared], out: npt.NDArray[np.float32], first: int, last: int
    ) -> None:
        """`dots` for several queries (rows of ``out``), over blocks ``first:last`` of `blocks`.

        numkong's packed product reads each block once for all the queries: 16 queries took 0.24x
        the time of 16 lone passes at 300,000 x 256. Its integer dot products are exact, as `dots`'s
        are, so each row of ``out`` is within the same bound (its query's ``spread``).
        """
        import numkong

        assert self.blocks is not None
        codes = np.concatenate([p.codes for p in prepared])
        scales = np.array([p.scale for p in prepared], dtype=np.float32)[:, None]
        for index in range(first, last):
            start = index * BLOCK
            stop = start + self.blocks[index].width
            part = out[:, start:stop]
            products = np.asarray(numkong.dots_packed(codes, self.blocks[index]))  # int32, exact
            np.multiply(products, self.scales[start:stop], out=part)
            part *= scales


@functools.cache
def pays() -> bool:
    """Whether numkong has SIMD kernels for this CPU, so a pass over an int8 copy is the faster one.

    Decided by the CPU, not by timing a pass: a pass timed once per process
    under a burst of other work chose the float32 pass for the whole process
    (on a small probe the int8 pass took 0.49 to 1.02x the float32 one's time in
    three runs on a loaded 2-core machine; 0.59x in the 100,000 x 256 bench runs).
    """
    try:
        import numkong
    except ImportError:  # an install without it (a platform with no wheel): the float32 pass
        return False
    return any(on for kernel, on in numkong.get_capabilities().items() if kernel != "serial")
