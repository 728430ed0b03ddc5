"""Reranking: blend a relevance scorer, the retrieval score and the original position.

``final = w_semantic·semantic + w_vector·vector + w_position·position`` where
``semantic`` comes from a pluggable `RelevanceScorer` (an LLM judge through
the `turnkit.ChatModel` protocol, or a local embedding scorer), ``vector`` is
the match's retrieval score, and ``position`` is ``1 - i/n``. Every signal is
higher-is-better. ``semantic`` is the scorer's absolute relevance in [0, 1],
used as it is: a judge that finds nothing relevant gives 0 to every passage,
and 0.90 stays 0.90. ``vector`` is min-max normalized within the pool (the
best retrieval score is 1, the worst 0), because retrieval scores (cosine
similarity, fused hybrid scores) sit in a narrow band whose absolute level
says little about relevance.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from turnkit._aio import sync_form
from turnkit.batteries.vector._errors import VectorStoreRuntimeError
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.ranking._fusion import min_max_scaled
from turnkit.batteries.vector.ranking._judge import LLMJudge, _valid, parse_judge_scores
from turnkit.batteries.vector.ranking._rerank_options import (
    DEFAULT_RERANK_WEIGHTS,
    RerankedMatch,
    RerankOptions,
    RerankWeights,
    _bad,
)
from turnkit.batteries.vector.ranking._scorers import EncoderScorer, RelevanceScorer, local_scorer

if TYPE_CHECKING:
    from turnkit._models import ChatModel
    from turnkit.batteries.vector.query._builder import QueryBuilder


__all__ = [
    "DEFAULT_RERANK_WEIGHTS",
    "EncoderScorer",
    "LLMJudge",
    "RelevanceScorer",
    "RerankOptions",
    "RerankWeights",
    "RerankedMatch",
    "local_scorer",
    "parse_judge_scores",
    "rerank",
    "rerank_search",
    "rerank_sync",
]


def _resolve_scorer(
    scorer: RelevanceScorer | None, model: ChatModel | None, weights: RerankWeights
) -> RelevanceScorer | None:
    if scorer is not None and model is not None:
        raise _bad("Pass a scorer or a model to rerank, not both.", field="scorer")
    if scorer is not None:
        if not callable(getattr(scorer, "score", None)):
            raise _bad(f"scorer must have .score(query, passages), got {type(scorer).__name__}.")
        return scorer
    if model is not None:
        return LLMJudge(model)
    if weights.semantic > 0:
        raise _bad(
            f"The semantic weight is {weights.semantic:g} but there is no scorer: pass model= (an LLM "
            "judge), scorer= (e.g. EncoderScorer(MiniLMEncoder())), or weights with semantic=0.",
            field="scorer",
        )
    return None


async def _semantic(
    scorer: RelevanceScorer, query: str, passages: list[str], on_error: str
) -> list[float | None]:
    from turnkit._context import invoke  # pydantic models: loaded only when a scorer runs

    try:
        values = list(await invoke(scorer.score, query, passages))
        if len(values) != len(passages):
            raise ValueError(f"returned {len(values)} scores for {len(passages)} passages")
    except Exception as exc:
        if on_error == "fallback":
            return [None] * len(passages)
        raise VectorStoreRuntimeError(
            f"The relevance scorer {getattr(scorer, 'name', scorer)!r} failed: {type(exc).__name__}: {exc}",
            code="E_VECTOR_RERANK_FAILED",
            scorer=str(getattr(scorer, "name", "")),
        ) from exc
    return [_valid(v) for v in values]


async def rerank(
    query: str,
    matches: Sequence[VectorMatch],
    options: RerankOptions | None = None,
    *,
    model: ChatModel | None = None,
    scorer: RelevanceScorer | None = None,
) -> list[RerankedMatch]:
    """Reorder ``matches`` (in retrieval order) for ``query`` and keep the best ``options.top_k``.

    Example:
        ```python
        from turnkit.batteries.vector import RerankOptions, VectorMatch, rerank_sync

        matches = [VectorMatch(id="a", score=0.9, document="x"), VectorMatch(id="b", score=0.8, document="y")]
        opts = RerankOptions(weights={"semantic": 0, "vector": 0.5, "position": 0.5}, top_k=1)
        print([r.match.id for r in rerank_sync("q", matches, opts)])
        #> ['a']
        ```

    Args:
        query: The question the matches answer.
        matches: Retrieval results, best first (over-fetch them: see `rerank_search`).
        options: Weights, ``top_k`` and error policy (default `RerankOptions()`).
        model: A `turnkit.ChatModel`, used as a batched `LLMJudge`.
        scorer: Any `RelevanceScorer` instead of ``model``.

    Returns:
        At most ``top_k`` `RerankedMatch`, best first; ties keep retrieval order.

    Raises:
        InvalidRankingConfigError: the semantic weight is above 0 with no
            scorer or model, or both were given.
        VectorStoreRuntimeError: ``E_VECTOR_RERANK_FAILED``: the scorer raised (with ``on_error="raise"``).
    """
    opts = options if options is not None else RerankOptions()
    if not isinstance(opts, RerankOptions):
        raise _bad(f"options must be RerankOptions, got {type(opts).__name__}.")
    judge = _resolve_scorer(scorer, model, opts.weights)
    if not matches:
        return []
    n = len(matches)
    retrieval = [m.score if m.score is not None and math.isfinite(m.score) else 0.0 for m in matches]
    vector = min_max_scaled(retrieval)
    position = [1.0 - i / n for i in range(n)]
    semantic: list[float | None] = [None] * n
    if judge is not None and opts.weights.semantic > 0:
        raw = await _semantic(judge, query, [m.document or "" for m in matches], opts.on_error)
        # Absolute, never rescaled within the pool: a judge that finds nothing relevant
        # must not hand the best of a bad pool a full semantic score. Nothing to judge: no evidence.
        semantic = [s if m.document else None for s, m in zip(raw, matches, strict=True)]
    w = opts.weights
    out = []
    for match, judged, vec, pos in zip(matches, semantic, vector, position, strict=True):
        total = w.semantic * (vec if judged is None else judged) + w.vector * vec + w.position * pos
        out.append(RerankedMatch(match, min(1.0, max(0.0, total)), judged, vec, pos))
    return sorted(out, key=lambda r: -r.score)[: opts.top_k]  # a stable sort: ties keep retrieval order


rerank_sync = sync_form(rerank)


async def rerank_search(
    builder: QueryBuilder,
    options: RerankOptions | None = None,
    *,
    query: str | None = None,
    model: ChatModel | None = None,
    scorer: RelevanceScorer | None = None,
) -> list[RerankedMatch]:
    """Over-fetch with ``builder`` (``options.pool()`` candidates), then `rerank` to ``top_k``.

    The builder's own ``limit`` is replaced by the pool size; its text query
    is the rerank query unless ``query`` is given. ``document`` is added to the
    selection when missing, since scorers read it.

    Raises:
        InvalidRankingConfigError: no query text (a ``near_vector`` search
            without ``query=``) or unusable options.
    """
    from turnkit.batteries.vector.query._spec import NearText

    opts = options if options is not None else RerankOptions()
    _resolve_scorer(scorer, model, opts.weights)  # fail before searching
    near = builder.spec.near
    text = query if query is not None else near.text if isinstance(near, NearText) else None
    if not text:
        raise _bad("rerank_search needs the query text: use near_text() or pass query=.", field="query")
    select = builder.spec.select or ("id", "document", "metadata")
    if "*" not in select and "document" not in select:
        select = (*select, "document")
    matches = await builder.select(*select).limit(opts.pool()).search()
    return await rerank(text, matches, opts, model=model, scorer=scorer)
