"""Abstention: when nothing retrieved is relevant enough, say so rather than guess.

`abstaining_fetch_stage` replaces the runner's default retrieval stage. It
keeps the records scoring at least ``min_score``; when none do, it stops the
turn before the model is called, with ``stop_reason == NO_GROUNDED_ANSWER``
(and an optional canned reply). `with_min_score` is the same cut as a plain
``fetch_retrievables`` wrapper, for callbacks used elsewhere.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from turnkit._context import TurnContext, invoke
from turnkit._retrievable import Retrievable
from turnkit._runner import GROUNDING_STASH_KEY, NO_GROUNDED_ANSWER
from turnkit.batteries.vector._errors import InvalidRankingConfigError
from turnkit.batteries.vector.ranking._rerank_options import check_min_score

__all__ = ["abstaining_fetch_stage", "grounding_verdict", "with_min_score"]

Middleware = Callable[[TurnContext, Callable[[], Awaitable[None]]], Awaitable[None]]


def _grounded(records: list[Retrievable], min_score: float) -> list[Retrievable]:
    # A record without a score cannot show it is relevant enough.
    return [r for r in records if r.score is not None and r.score >= min_score]


def grounding_verdict(
    fetched: list[Any], kept: list[Any], min_score: float, *, reply: str | None = None
) -> dict[str, Any]:
    """The ``ctx.stash[GROUNDING_STASH_KEY]`` record of one retrieval (see `turnkit.GROUNDING_STASH_KEY`).

    Args:
        fetched: What the search returned (objects with a ``score``).
        kept: What scored at least ``min_score``.
        min_score: The threshold used.
        reply: The canned reply for an abstaining turn, if any.
    """
    scores = [s for s in (getattr(r, "score", None) for r in fetched) if s is not None]
    return {
        "grounded": bool(kept),
        "min_score": min_score,
        "best_score": max(scores) if scores else None,
        "fetched": len(fetched),
        "kept": len(kept),
        "reply": reply,
    }


def abstaining_fetch_stage(min_score: float, *, reply: str | None = None) -> Middleware:
    """An input stage that retrieves and abstains when nothing scores ``min_score`` or more.

    Use it instead of the default stage:
    ``TurnRunnerConfig(input_pipeline=[abstaining_fetch_stage(0.6)], ...)``.
    On abstention the turn stops before the model call: the result has
    ``stopped=True``, ``stop_reason == NO_GROUNDED_ANSWER`` and ``reply`` (or
    ``None``). Scores are the retrieval scores in [0, 1] (see docs/ranking.md).

    Args:
        min_score: The lowest score that counts as grounding, in [0, 1].
        reply: Returned as the turn's reply when it abstains (stored as the assistant message,
            like any reply).

    Raises:
        InvalidRankingConfigError: ``min_score`` is not a number in [0, 1].
    """
    threshold = check_min_score(min_score)
    if reply is not None and not isinstance(reply, str):
        raise InvalidRankingConfigError(f"reply must be a string or None, got {type(reply).__name__}.")

    async def abstaining_fetch(ctx: TurnContext, next_: Callable[[], Awaitable[None]]) -> None:
        fetched = await ctx.fetch_retrievables()
        kept = _grounded(fetched, threshold)
        ctx.stash[GROUNDING_STASH_KEY] = grounding_verdict(fetched, kept, threshold, reply=reply)
        if not kept:
            if reply is not None:
                ctx.reply = reply
            ctx.abort(NO_GROUNDED_ANSWER)
            return
        ctx.turn_retrievables.extend(kept)
        await next_()

    return abstaining_fetch


def with_min_score(
    fetch: Callable[[TurnContext], Any], min_score: float
) -> Callable[[TurnContext], Awaitable[list[Retrievable]]]:
    """Wrap a ``fetch_retrievables`` callback so it returns only records scoring ``min_score`` or more.

    Raises:
        InvalidRankingConfigError: ``min_score`` is not a number in [0, 1].
    """
    threshold = check_min_score(min_score)

    async def fetch_grounded(ctx: TurnContext) -> list[Retrievable]:
        records: list[Retrievable] = list(await invoke(fetch, ctx))
        return _grounded(records, threshold)

    return fetch_grounded
