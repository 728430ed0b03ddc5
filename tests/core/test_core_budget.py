"""The token budget: lowest-ranked retrievables go first, then the oldest history."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit import (
    Message,
    Retrievable,
    ScriptedModel,
    TurnResult,
    TurnRunner,
    TurnRunnerConfig,
    UsageError,
    render_prompt,
)
from turnkit._prompt import count_prompt_tokens
from turnkit._tokens import get_encoding

SYSTEM = "You answer questions."
QUESTION = "What do the records say?"


def records(scores: list[float | None], tier: str = "first-party") -> list[Retrievable]:
    return [
        Retrievable(id=f"r{i}", content=f"record {i} " + "lorem ipsum dolor " * 8, trust_tier=tier, score=s)  # type: ignore[arg-type]
        for i, s in enumerate(scores)
    ]


def run(recs: list[Retrievable], budget: int | None, **kw: Any) -> TurnResult:
    runner = TurnRunner(
        TurnRunnerConfig(
            model=ScriptedModel(lambda msgs: "ok"),
            system_prompt=SYSTEM,
            fetch_retrievables=lambda ctx: recs,
            token_budget=budget,
            **kw,
        )
    )
    return runner.run_sync(QUESTION)


def expected_rank(recs: list[Retrievable]) -> list[str]:
    order = sorted(range(len(recs)), key=lambda i: (recs[i].score is None, -(recs[i].score or 0.0), i))
    return [recs[i].id for i in order]


def tokens_with(recs: list[Retrievable], encoding: str = "o200k_base") -> int:
    prompt = render_prompt(
        system_prompt=SYSTEM, retrievables=recs, turn_messages=[Message(role="user", content=QUESTION)]
    )
    return count_prompt_tokens(prompt, encoding=encoding).prompt


def test_everything_fits_under_a_large_budget() -> None:
    recs = records([0.1, 0.9, 0.5])
    result = run(recs, 100_000)
    assert result.dropped == () and len(result.retrievables) == 3
    assert result.tokens is not None and result.tokens.budget == 100_000


def test_lowest_ranked_are_dropped_first() -> None:
    recs = records([0.5, 0.9, None, 0.1, 0.9, 0.7])
    ranked = expected_rank(recs)
    assert ranked == ["r1", "r4", "r5", "r0", "r3", "r2"]  # ties keep order; unscored last
    budget = tokens_with([r for r in recs if r.id in ranked[:3]])
    result = run(recs, budget)
    assert [r.id for r in result.retrievables] == ranked[:3]
    assert [r.id for r in result.dropped] == ["r2", "r3", "r0"]  # lowest-ranked first
    assert result.tokens is not None and result.tokens.prompt <= budget
    # Each dropped record really did not fit: one more would go over.
    assert tokens_with([r for r in recs if r.id in ranked[:4]]) > budget
    assert result.events[3].data["dropped"] == 3


@settings(max_examples=25, deadline=None)
@given(
    scores=st.lists(
        st.none() | st.sampled_from([0.0, 0.25, 0.5, 1.0]) | st.floats(0, 1), min_size=1, max_size=8
    ),
    fraction=st.floats(0, 1),
)
def test_kept_records_are_always_the_top_ranked_prefix_that_fits(
    scores: list[float | None], fraction: float
) -> None:
    recs = records(scores)
    low, high = tokens_with([]), tokens_with(recs)
    budget = int(low + (high - low) * fraction)
    result = run(recs, budget)
    ranked = expected_rank(recs)
    kept = [r.id for r in result.retrievables]
    assert kept == ranked[: len(kept)]
    assert [r.id for r in result.dropped] == list(reversed(ranked[len(kept) :]))
    assert result.tokens is not None and result.tokens.prompt <= budget
    if result.dropped:  # maximal: the next-ranked record would not have fitted
        assert tokens_with([r for r in recs if r.id in ranked[: len(kept) + 1]]) > budget


def test_untrusted_records_are_budgeted_too() -> None:
    # Each untrusted record has two random nonces whose token counts vary by a
    # few tokens, so the margins here must dwarf that jitter: records are long
    # (~150 tokens) and the budget sits ~75 tokens below the four of them.
    recs = [
        r.model_copy(update={"content": r.content + " sit amet consectetur" * 40})
        for r in records([0.9, 0.8, 0.7, 0.6], tier="third-party")
    ]
    budget = tokens_with(recs) - 75
    result = run(recs, budget)
    assert [r.id for r in result.dropped] == ["r3"]
    assert result.tokens is not None and result.tokens.prompt <= budget
    assert result.rendered is not None and set(result.rendered.nonces) == {r.id for r in result.retrievables}


def test_then_the_oldest_history_is_dropped() -> None:
    recs = records([0.9])
    model = ScriptedModel(lambda msgs: "short")
    runner = TurnRunner(
        TurnRunnerConfig(
            model=model, system_prompt=SYSTEM, fetch_retrievables=lambda ctx: recs, token_budget=10_000
        )
    )
    for i in range(4):
        runner.run_sync(f"old question {i} " + "blah " * 60)
    history = runner.message_store.messages()  # type: ignore[union-attr]
    assert len(history) == 8

    # Budget: system + question + the last two history messages, and no room for the record.
    enc = get_encoding("o200k_base")
    keep = history[-2:]
    needed = 3 + sum(3 + len(enc.encode(m.role)) + len(enc.encode(m.content)) for m in keep)
    needed += 3 + len(enc.encode("system")) + len(enc.encode(SYSTEM))
    needed += 3 + len(enc.encode("user")) + len(enc.encode(QUESTION))
    small = TurnRunner(
        TurnRunnerConfig(
            model=model,
            system_prompt=SYSTEM,
            fetch_retrievables=lambda ctx: recs,
            fetch_messages=runner.message_store.fetch_messages,  # type: ignore[union-attr]
            store_message=runner.message_store.store_message,  # type: ignore[union-attr]
            token_budget=needed,
        )
    )
    result = small.run_sync(QUESTION)
    assert [r.id for r in result.dropped] == ["r0"] and result.retrievables == ()
    assert list(result.dropped_messages) == history[:-2]  # oldest first
    assert [m.content for m in result.prompt[1:]] == [m.content for m in keep] + [QUESTION]
    assert result.tokens is not None and result.tokens.prompt == needed


def test_budget_too_small_for_the_question_is_a_clear_error() -> None:
    with pytest.raises(UsageError) as info:
        run(records([0.5]), 10)
    err = info.value
    assert err.code == "E_TOKEN_BUDGET_EXCEEDED" and err.budget == 10 and err.prompt_tokens > 10


def test_max_history_messages_limits_history_before_budgeting() -> None:
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(lambda m: "a"), max_history_messages=2))
    for q in ("one", "two", "three"):
        result = runner.run_sync(q)
    assert [m.content for m in result.prompt if m.role != "system"] == ["two", "a", "three"]
    none = TurnRunner(TurnRunnerConfig(model=ScriptedModel(lambda m: "a"), max_history_messages=0))
    none.run_sync("one")
    assert [m.content for m in none.run_sync("two").prompt if m.role != "system"] == ["two"]


@pytest.mark.parametrize("encoding", ["cl100k_base", "o200k_base"])
def test_the_configured_encoding_is_used(encoding: str) -> None:
    recs = records([0.5, 0.4])
    result = run(recs, None, encoding=encoding)
    assert result.tokens is not None and result.tokens.encoding == encoding
    assert result.tokens.prompt == tokens_with(recs, encoding)
