"""One retrieval pipeline: search → threshold → collapse → rerank → cut to ``top_k``.

Every surface runs a retrieval through `retrieve` with one `RetrievalSettings`:
the retrieval callbacks, the vector query tool, ``retrieve_contexts`` (and so
MCP), ``turnkit query``, the framework adapters and the demo. A surface builds
the near clause and its own guard; the settings add hybrid search, diversify,
the filter and the index knobs (`RetrievalSettings.apply`), and the steps
after the search, and the score a threshold reads, live here only.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace
from typing import TYPE_CHECKING

from turnkit._aio import sync_form
from turnkit.batteries.vector._errors import CollectionNotFoundError
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector._settings import RetrievalSettings, SettingsInput
from turnkit.batteries.vector.query._spec import MAX_LIMIT, NearText
from turnkit.batteries.vector.ranking._collapse import collapse_duplicates
from turnkit.batteries.vector.ranking._rerank import RerankedMatch, local_scorer, rerank
from turnkit.batteries.vector.store._hybrid import dense_scores

if TYPE_CHECKING:
    from turnkit.batteries.vector.query._builder import QueryBuilder

__all__ = ["Retrieval", "retrieve", "retrieve_sync"]


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What `retrieve` found.

    Attributes:
        matches: The result, best first, at most ``top_k``. Under hybrid
            search ``score`` is the fused score; after a rerank it is the
            blended rerank score. A match whose text other candidates repeat
            carries them in ``duplicates``.
        candidates: Every searched match before the threshold, with ``score``
            set to the score the threshold reads (the dense similarity).
        reranked: How many candidates went to the reranker (0 when it did not run).
        ranked: The reranker's view of ``matches`` (each leg's score), when it ran.
        settings: The settings the retrieval ran with.
    """

    matches: list[VectorMatch]
    candidates: list[VectorMatch] = field(default_factory=list)
    reranked: int = 0
    ranked: list[RerankedMatch] = field(default_factory=list)
    settings: RetrievalSettings | None = None


async def retrieve(
    query: QueryBuilder,
    settings: SettingsInput = None,
    *,
    text: str | None = None,
    missing_ok: bool = False,
) -> Retrieval:
    """Run ``query`` with ``settings``: search, threshold, collapse copies, rerank, cut to ``top_k``.

    With no settings this is turnkit's measured-best retrieval: hybrid
    search with turnkit's fusion and duplicate texts collapsed. The
    builder's own steps win over the settings' (a builder with
    ``.hybrid(0.7)`` keeps that alpha); its ``limit`` is replaced by
    `RetrievalSettings.pool`.

    Args:
        query: A builder with a near clause (and the surface's guard, if any).
        settings: `RetrievalSettings`, a dict of its fields, or ``None`` (the defaults).
        text: The question's words when the near clause is a vector (an
            encoder of the surface's own, ``derive_query`` returning a
            vector): the full-text leg and the reranker read them.
        missing_ok: A missing collection gives no matches instead of an error.

    Example:
        ```python
        from turnkit.batteries.vector import HashEncoder, create_vector_store, retrieve_sync

        vs = create_vector_store(uri="memory://", encoder=HashEncoder())
        vs("docs").upsert_sync([{"id": "a", "document": "the cat sat"}, {"id": "b", "document": "dogs bark"}])
        print([m.id for m in retrieve_sync(vs("docs").near_text("the cat sat"), {"top_k": 1}).matches])
        #> ['a']
        ```
    """
    opts = RetrievalSettings.of(settings)
    spec = query.spec
    words = text if text is not None else spec.near.text if isinstance(spec.near, NearText) else None
    query = opts.apply(query, words)
    try:
        found = await query.search()
    except CollectionNotFoundError:
        if missing_ok:
            return Retrieval([], settings=opts)
        raise
    hybrid = query.spec.hybrid
    if hybrid is not None and hybrid.text is not None:
        words = hybrid.text
    thresholded = opts.min_score is not None or opts.max_distance is not None
    while True:
        gauged = found
        if found and hybrid is not None and words and thresholded:
            # A fused score only ranks (an off-topic query still tops out near 1): gauge the dense similarity.
            similar = await dense_scores(query.store, spec.collection, words, found, query.spec.filter)
            gauged = [dc_replace(m, score=s) for m, s in zip(found, similar, strict=True)]
        matches = [m for m, g in zip(found, gauged, strict=True) if _passes(g, opts)]
        if not opts.collapse_duplicates:
            break
        matches = collapse_duplicates(matches)
        # The pool was all copies of fewer than top_k texts, and the search may hold more: a pool
        # four times larger (15 candidates of one text left 2 results at 300,000 rows of the bench).
        pool = query.spec.limit
        if len(matches) >= opts.top_k or len(found) < pool or pool >= MAX_LIMIT:
            break
        query = query.limit(min(MAX_LIMIT, 4 * pool))
        found = await query.search()
    reranked, ranked = 0, list[RerankedMatch]()
    if opts.rerank is not None and matches and words:
        reranked = len(matches)
        scorer = opts.rerank_scorer
        if opts.rerank_model is None and (scorer is None or isinstance(scorer, str)):
            scorer = local_scorer(query.store.encoder, scorer or "auto")  # type: ignore[arg-type]
        ranked = await rerank(words, matches, opts.rerank, model=opts.rerank_model, scorer=scorer)
        matches = [r.as_match() for r in ranked]
    return Retrieval(matches[: opts.top_k], gauged, reranked, ranked[: opts.top_k], opts)


retrieve_sync = sync_form(retrieve)


def _passes(match: VectorMatch, opts: RetrievalSettings) -> bool:
    # A score must reach min_score and a distance stay within max_distance (strictly, with strict_thresholds).
    for bound, value, worse in (
        (opts.min_score, match.score, operator.lt),
        (opts.max_distance, match.distance, operator.gt),
    ):
        if bound is not None and (
            value is None or worse(value, bound) or (opts.strict_thresholds and value == bound)
        ):
            return False
    return True
