"""One retrieval pipeline: search → threshold → rerank → cut to ``top_k``.

Every surface runs a retrieval through `retrieve`: the retrieval callbacks,
the vector query tool, ``retrieve_contexts`` (and so MCP) and ``turnkit
query``. Each surface builds its query (near clause, filters, hybrid,
diversify, projection) and its options; the steps after the search, and the
score a threshold reads, live here only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import TYPE_CHECKING

from turnkit._aio import sync_form
from turnkit.batteries.vector._errors import CollectionNotFoundError
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.query._spec import NearText
from turnkit.batteries.vector.ranking._rerank import RelevanceScorer, RerankedMatch, RerankOptions, rerank
from turnkit.batteries.vector.ranking._rerank_options import check_min_score
from turnkit.batteries.vector.store._hybrid import dense_scores

if TYPE_CHECKING:
    from turnkit._models import ChatModel
    from turnkit.batteries.vector.query._builder import QueryBuilder

__all__ = ["Retrieval", "RetrieveOptions", "retrieve", "retrieve_sync"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RetrieveOptions:
    """The steps after the search, as one value (see `retrieve`).

    Attributes:
        top_k: Matches kept at the end.
        min_score: Keep matches whose *dense* similarity (in [0, 1]) clears
            it. Under hybrid search that is the score the match has in a plain
            vector search, never the fused score, which only ranks.
        max_distance: Keep matches whose raw metric distance clears it (a
            match the dense leg did not return has no distance and is dropped).
        strict: Compare strictly (``>`` / ``<``), as Vertex's thresholds do;
            otherwise ``>=`` / ``<=``.
        rerank: Over-fetch ``rerank.pool(top_k)`` candidates and rerank them.
        rerank_model: A `turnkit.ChatModel` used as the LLM judge.
        rerank_scorer: A `RelevanceScorer` (neither: retrieval scores only).
        rerank_text: The rerank query when the search has no text (a vector query).
        missing_ok: A missing collection gives no matches instead of an error.
    """

    top_k: int = 5
    min_score: float | None = None
    max_distance: float | None = None
    strict: bool = False
    rerank: RerankOptions | None = None
    rerank_model: ChatModel | None = None
    rerank_scorer: RelevanceScorer | None = None
    rerank_text: str | None = None
    missing_ok: bool = False

    def __post_init__(self) -> None:
        if self.min_score is not None:
            object.__setattr__(self, "min_score", check_min_score(self.min_score))

    def pool(self) -> int:
        """Candidates to search for: ``top_k``, or the rerank pool."""
        return self.top_k if self.rerank is None else self.rerank.pool(self.top_k)


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What `retrieve` found.

    Attributes:
        matches: The result, best first, at most ``top_k``. Under hybrid
            search ``score`` is the fused score; after a rerank it is the
            blended rerank score.
        candidates: Every searched match before the threshold, with ``score``
            set to the score the threshold reads (the dense similarity).
        reranked: How many candidates went to the reranker (0 when it did not run).
        ranked: The reranker's view of ``matches`` (each leg's score), when it ran.
    """

    matches: list[VectorMatch]
    candidates: list[VectorMatch] = field(default_factory=list)
    reranked: int = 0
    ranked: list[RerankedMatch] = field(default_factory=list)


async def retrieve(query: QueryBuilder, options: RetrieveOptions | None = None) -> Retrieval:
    """Run ``query`` and the steps after it: threshold, rerank, cut to ``top_k``.

    The builder's ``limit`` is replaced by ``options.pool()``; its filters,
    hybrid and diversify settings are used as they are.

    Example:
        ```python
        from turnkit.batteries.vector import HashEncoder, RetrieveOptions, create_vector_store, retrieve_sync

        vs = create_vector_store(uri="memory://", encoder=HashEncoder())
        vs("docs").upsert_sync([{"id": "a", "document": "the cat sat"}, {"id": "b", "document": "dogs bark"}])
        q = vs("docs").near_text("the cat sat").select("id", "document")
        print([m.id for m in retrieve_sync(q, RetrieveOptions(top_k=1, min_score=0.9)).matches])
        #> ['a']
        ```
    """
    opts = options if options is not None else RetrieveOptions()
    spec = query.spec
    try:
        found = await query.limit(opts.pool()).search()
    except CollectionNotFoundError:
        if opts.missing_ok:
            return Retrieval([])
        raise
    text = spec.near.text if isinstance(spec.near, NearText) else None
    if spec.hybrid is not None and spec.hybrid.text is not None:
        text = spec.hybrid.text
    gauged = found
    thresholded = opts.min_score is not None or opts.max_distance is not None
    if found and spec.hybrid is not None and text and thresholded:
        # A fused score only ranks (an off-topic query still tops out near 1): gauge the dense similarity.
        similar = await dense_scores(query.store, spec.collection, text, found)
        gauged = [dc_replace(m, score=s) for m, s in zip(found, similar, strict=True)]
    matches = [m for m, g in zip(found, gauged, strict=True) if _passes(g, opts)]
    reranked, ranked = 0, list[RerankedMatch]()
    rerank_text = opts.rerank_text or text
    if opts.rerank is not None and matches and rerank_text:
        reranked = len(matches)
        ranked = await rerank(
            rerank_text,
            matches,
            dc_replace(opts.rerank, top_k=opts.top_k),
            model=opts.rerank_model,
            scorer=opts.rerank_scorer,
        )
        matches = [r.as_match() for r in ranked]
    return Retrieval(matches[: opts.top_k], gauged, reranked, ranked[: opts.top_k])


retrieve_sync = sync_form(retrieve)


def _passes(match: VectorMatch, opts: RetrieveOptions) -> bool:
    if opts.min_score is not None:
        if match.score is None:
            return False
        if match.score < opts.min_score or (opts.strict and match.score == opts.min_score):
            return False
    if opts.max_distance is not None:
        if match.distance is None:
            return False
        if match.distance > opts.max_distance or (opts.strict and match.distance == opts.max_distance):
            return False
    return True
