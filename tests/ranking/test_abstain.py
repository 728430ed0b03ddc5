"""Abstention: below the minimum score, the turn stops before the model with 'no grounded answer'."""

from __future__ import annotations

import pytest

from turnkit import GROUNDING_STASH_KEY, NO_GROUNDED_ANSWER, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import (
    InvalidRankingConfigError,
    VectorStore,
    abstaining_fetch_stage,
    create_vector_retrievable_callbacks,
    with_min_score,
)


@pytest.fixture
def callbacks(vs: VectorStore, collection: str):
    vs(collection).upsert_sync(
        [
            {"id": "cat", "document": "the cat sat on the mat"},
            {"id": "car", "document": "a red car drove past"},
        ]
    )
    return create_vector_retrievable_callbacks(store=vs, collection=collection, trust_tier="first-party")


def runner(callbacks, stage, replies=("grounded reply",)) -> tuple[TurnRunner, ScriptedModel]:
    model = ScriptedModel(list(replies))
    return TurnRunner(TurnRunnerConfig(model=model, input_pipeline=[stage], **callbacks)), model


def test_a_relevant_match_grounds_the_turn(callbacks) -> None:
    r, model = runner(callbacks, abstaining_fetch_stage(0.6))
    result = r.run_sync("where did the cat sit on the mat")
    assert result.reply == "grounded reply" and not result.stopped
    assert [x.id for x in result.retrievables] == ["cat"]  # "car" scored below the threshold
    assert len(model.calls) == 1


def test_nothing_relevant_stops_the_turn_before_the_model(callbacks) -> None:
    r, model = runner(callbacks, abstaining_fetch_stage(0.95, reply="I don't know."))
    result = r.run_sync("quantum chromodynamics lecture notes")
    assert result.stopped and result.stop_reason == NO_GROUNDED_ANSWER
    assert result.reply == "I don't know."
    assert result.retrievables == ()
    assert model.calls == []


def test_stash_reports_the_best_score(callbacks) -> None:
    seen = {}

    async def after(ctx, next_):
        seen.update(ctx.stash.get(GROUNDING_STASH_KEY, {}))
        await next_()

    model = ScriptedModel(["ok"])
    r = TurnRunner(
        TurnRunnerConfig(model=model, input_pipeline=[abstaining_fetch_stage(0.1), after], **callbacks)
    )
    r.run_sync("cat")
    assert seen["min_score"] == 0.1 and seen["fetched"] == 2 and 0 < seen["best_score"] <= 1


def test_with_min_score_filters_a_fetch_callback(callbacks) -> None:
    grounded = with_min_score(callbacks.fetch_retrievables, 0.6)
    model = ScriptedModel(["ok"])
    r = TurnRunner(TurnRunnerConfig(model=model, **{**callbacks, "fetch_retrievables": grounded}))
    assert [x.id for x in r.run_sync("the cat sat on the mat").retrievables] == ["cat"]


@pytest.mark.parametrize("bad", [-0.1, 1.1, float("nan"), True, "0.5"])
def test_min_score_is_validated(bad) -> None:
    with pytest.raises(InvalidRankingConfigError):
        abstaining_fetch_stage(bad)
    with pytest.raises(InvalidRankingConfigError):
        with_min_score(lambda ctx: [], bad)
