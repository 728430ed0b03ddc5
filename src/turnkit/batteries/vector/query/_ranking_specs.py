"""What a query asks of ranking: the hybrid and diversity options a spec carries (no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union, get_args

from turnkit._checks import is_int, is_number
from turnkit.batteries.vector.query._spec import MAX_LIMIT

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_FUSION",
    "PASSAGE_ALPHA",
    "PASSAGE_WORDS",
    "SHORT_QUERY_ALPHA",
    "DEFAULT_LAMBDA",
    "LEXICAL_LEAD_Z",
    "DEFAULT_RRF_K",
    "FusionName",
    "HybridOption",
    "HybridSpec",
    "MmrSpec",
    "coerce_hybrid",
]

FusionName = Literal["rrf", "linear", "zscore"]
"""The fusions ``fusion=`` names (``ranking/_fusion.py`` holds each)."""
DEFAULT_FUSION: FusionName = "zscore"
DEFAULT_ALPHA = 0.5
# The default alpha follows the query's length (docs/ranking.md, "Measured"): a short query is
# usually a lookup, where the full-text leg is right far more often; a passage is "more like this".
SHORT_QUERY_ALPHA = 0.2
PASSAGE_ALPHA = 0.5
PASSAGE_WORDS = 40
# With the default alpha, a short query's best full-text hit stays first when it stands this many
# standard deviations above the candidates (docs/ranking.md): the dense leg then cannot pull a
# confident lookup down, which is where fused search lost to plain BM25.
LEXICAL_LEAD_Z = 2.5
DEFAULT_RRF_K = 60
_MIN_POOL = 30


@dataclass(frozen=True, slots=True)
class HybridSpec:
    """How a query mixes full-text and vector search (see ``QueryBuilder.hybrid``).

    Attributes:
        alpha: Weight of the dense leg; ``1 - alpha`` goes to the lexical leg.
            ``None`` (the default) picks it from the query: ``SHORT_QUERY_ALPHA``
            (0.2) up to ``PASSAGE_WORDS`` (40) words, ``PASSAGE_ALPHA`` (0.5) above;
            a short query's confident full-text hit then also leads (`lead_for`).
        fusion: ``"zscore"`` (default: scores z-scored over both legs' candidates),
            ``"linear"`` (min-max normalized scores) or ``"rrf"`` (reciprocal rank fusion).
        rrf_k: RRF's rank offset (60 in the original paper and in LanceDB).
        text: The full-text query; ``None`` uses the ``near_text`` text.
        candidates: Matches fetched per leg before fusing; ``None`` picks
            ``max(30, 3 × (limit + offset))``.
    """

    alpha: float | None = None
    fusion: FusionName = DEFAULT_FUSION
    rrf_k: int = DEFAULT_RRF_K
    text: str | None = None
    candidates: int | None = None

    def alpha_for(self, text: str | None) -> float:
        """The dense leg's weight for a query with this full-text ``text``."""
        if self.alpha is not None:
            return self.alpha
        words = len(text.split()) if text else 0
        return SHORT_QUERY_ALPHA if words <= PASSAGE_WORDS else PASSAGE_ALPHA

    def lead_for(self, text: str | None) -> float | None:
        """The lexical z-score from which the full-text leg's best hit leads (``None``: no lead).

        Only the default alpha has one, and only for a short query (a lookup);
        with an explicit ``alpha`` the fusion is exactly the weighted blend.
        """
        if self.alpha is not None or self.fusion != "zscore":
            return None
        words = len(text.split()) if text else 0
        return LEXICAL_LEAD_Z if words <= PASSAGE_WORDS else None

    def pool(self, limit: int, offset: int) -> int:
        """Matches to fetch per leg for a page of ``limit`` after ``offset``."""
        wanted = self.candidates if self.candidates is not None else max(_MIN_POOL, 3 * (limit + offset))
        return min(MAX_LIMIT, max(wanted, limit + offset))

    @classmethod
    def checked(
        cls,
        alpha: Any = None,
        fusion: Any = DEFAULT_FUSION,
        rrf_k: Any = DEFAULT_RRF_K,
        text: str | None = None,
        candidates: Any = None,
    ) -> HybridSpec:
        """A spec of these values, or a `ValueError` naming the first bad one (the caller words the error)."""
        if alpha is not None and not is_number(alpha, 0.0, 1.0):
            raise ValueError(
                f"alpha must be a number in [0, 1] (0 full-text only, 1 vector only), got {alpha!r}"
            )
        if fusion not in get_args(FusionName):
            raise ValueError(f"fusion must be 'rrf', 'linear' or 'zscore', got {fusion!r}")
        for key, number, ceiling in (("rrf_k", rrf_k, 10_000), ("candidates", candidates, MAX_LIMIT)):
            if number is not None and not is_int(number, 1, ceiling):
                raise ValueError(f"{key} must be an integer in [1, {ceiling}], got {number!r}")
        alpha = None if alpha is None else float(alpha)
        return cls(alpha=alpha, fusion=fusion, rrf_k=rrf_k, text=text, candidates=candidates)

    @classmethod
    def from_option(cls, value: HybridOption, *, option: str = "hybrid") -> HybridSpec | None:
        """A `HybridOption` as a spec, or ``None`` when hybrid search is off.

        Raises:
            InvalidRankingConfigError: ``value`` is not a usable option (the
                message names ``option``).
        """
        return coerce_hybrid(value, option=option)


HybridOption = Union["HybridSpec", Mapping[str, Any], bool, float, None]
"""How options spell hybrid search: ``True`` (the defaults), an ``alpha``, a
dict of `HybridSpec` fields (``alpha``, ``fusion``, ``rrf_k``, ``candidates``),
a `HybridSpec`, or ``None``/``False`` (vector search only)."""

_HYBRID_KEYS = ("alpha", "fusion", "rrf_k", "candidates")


def coerce_hybrid(value: HybridOption, *, option: str = "hybrid") -> HybridSpec | None:
    """Validate a hybrid option into a `HybridSpec` (``None`` when hybrid search is off).

    Raises:
        InvalidRankingConfigError: an unknown key or a value out of range.
    """
    from turnkit.batteries.vector._errors import InvalidRankingConfigError

    def bad(detail: str) -> InvalidRankingConfigError:
        return InvalidRankingConfigError(f"{option}: {detail}", field=option)

    if value is None or value is False:
        return None
    if value is True:
        return HybridSpec()
    if isinstance(value, int | float):
        data: dict[str, Any] = {"alpha": value}
    elif isinstance(value, HybridSpec):
        data = {k: getattr(value, k) for k in _HYBRID_KEYS}
        if value.text is not None:
            raise bad("set no text: the query text is the full-text query.")
    elif isinstance(value, Mapping):
        data = dict(value)
        unknown = sorted(map(str, set(data) - set(_HYBRID_KEYS)))
        if unknown:
            raise bad(f"unknown keys {unknown}; use {', '.join(_HYBRID_KEYS)}.")
    else:
        raise bad(f"must be true, an alpha, a dict or a HybridSpec, got {type(value).__name__}.")
    try:
        return HybridSpec.checked(**data)
    except ValueError as exc:
        raise bad(f"{exc}.") from None


DEFAULT_LAMBDA = 0.5
_MIN_MMR_POOL = 20


@dataclass(frozen=True, slots=True)
class MmrSpec:
    """How a query diversifies its results (see ``QueryBuilder.diversify``).

    Attributes:
        lambda_mult: 1 is pure relevance, 0 is pure diversity.
        fetch_k: Candidates fetched before picking; ``None`` picks
            ``max(20, 4 × (limit + offset))``.
    """

    lambda_mult: float = DEFAULT_LAMBDA
    fetch_k: int | None = None

    @classmethod
    def checked(cls, lambda_mult: Any = DEFAULT_LAMBDA, fetch_k: Any = None) -> MmrSpec:
        """A spec of these values, or a `ValueError` naming the first bad one (the caller words the error)."""
        if not is_number(lambda_mult, 0.0, 1.0):
            raise ValueError(f"lambda_mult must be a number in [0, 1], got {lambda_mult!r}")
        if fetch_k is not None and not is_int(fetch_k, 1, MAX_LIMIT):
            raise ValueError(f"fetch_k must be an integer in [1, {MAX_LIMIT}], got {fetch_k!r}")
        return cls(lambda_mult=float(lambda_mult), fetch_k=fetch_k)

    def pool(self, limit: int, offset: int) -> int:
        """Candidates to fetch for a page of ``limit`` after ``offset``."""
        wanted = self.fetch_k if self.fetch_k is not None else max(_MIN_MMR_POOL, 4 * (limit + offset))
        return min(MAX_LIMIT, max(wanted, limit + offset))
