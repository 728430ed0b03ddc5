"""Fit a turn's prompt to its token budget: drop the lowest-ranked records, then the oldest history."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ._aio import to_thread
from ._context import TurnContext
from ._errors import UsageError
from ._messages import Message
from ._prompt import RenderedPrompt, TokenCounts, count_prompt_tokens, render_prompt
from ._retrievable import Retrievable, rank_order
from ._runner_config import TurnRunnerConfig

__all__ = ["fit_prompt"]


async def fit_prompt(
    ctx: TurnContext, cfg: TurnRunnerConfig
) -> tuple[RenderedPrompt, TokenCounts, tuple[Retrievable, ...], tuple[Message, ...]]:
    """Render the turn's prompt within ``cfg.token_budget``; also return what was left out."""
    turn_ids = {m.id for m in ctx.turn_messages}
    history = [m for m in await ctx.fetch_messages() if m.id not in turn_ids]
    if cfg.max_history_messages is not None:
        history = history[len(history) - cfg.max_history_messages :] if cfg.max_history_messages else []
    ranked = rank_order(ctx.turn_retrievables)
    turn_messages = list(ctx.turn_messages)

    def attempt(keep: int, keep_history: int) -> tuple[RenderedPrompt, TokenCounts]:
        rendered = render_prompt(
            system_prompt=ctx.system_prompt,
            retrievables=ranked[:keep],
            history=history[len(history) - keep_history :] if keep_history else [],
            turn_messages=turn_messages,
            safety_directive=cfg.safety_directive,
            untrusted_placement=cfg.untrusted_placement,
        )
        tokens = count_prompt_tokens(rendered, encoding=cfg.encoding)
        return rendered, replace(tokens, budget=cfg.token_budget)

    budget = cfg.token_budget
    rendered, tokens = await to_thread(attempt, len(ranked), len(history))
    if budget is None or tokens.prompt <= budget:
        return rendered, tokens, (), ()

    # Keep the largest number of top-ranked records that fits (binary search:
    # each probe is a full render and count, so the chosen prompt is the one
    # that was measured, nonces included).
    keep = await to_thread(_largest_fitting, len(ranked) - 1, lambda k: attempt(k, len(history)), budget)
    if keep is not None:
        k, rendered, tokens = keep
        return rendered, tokens, tuple(reversed(ranked[k:])), ()
    keep_h = await to_thread(_largest_fitting, len(history) - 1, lambda h: attempt(0, h), budget)
    if keep_h is not None:
        h, rendered, tokens = keep_h
        return rendered, tokens, tuple(reversed(ranked)), tuple(history[: len(history) - h])
    smallest = attempt(0, 0)[1]
    raise UsageError(
        f"The prompt needs {smallest.prompt} tokens without any retrievables or history; "
        f"the budget is {budget}.",
        code="E_TOKEN_BUDGET_EXCEEDED",
        budget=budget,
        prompt_tokens=smallest.prompt,
    )


def _largest_fitting(
    upper: int, attempt: Callable[[int], tuple[RenderedPrompt, TokenCounts]], budget: int
) -> tuple[int, RenderedPrompt, TokenCounts] | None:
    """The largest n in [0, upper] whose attempt fits ``budget``, with its render."""
    best: tuple[int, RenderedPrompt, TokenCounts] | None = None
    low, high = 0, upper
    while low <= high:
        mid = (low + high) // 2
        rendered, tokens = attempt(mid)
        if tokens.prompt <= budget:
            best, low = (mid, rendered, tokens), mid + 1
        else:
            high = mid - 1
    return best
