"""min_score with hybrid search reads the dense similarity, so abstention works with RRF and linear fusion."""

from __future__ import annotations

import pytest

from turnkit import GROUNDING_STASH_KEY, NO_GROUNDED_ANSWER, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import (
    VectorStore,
    WordLlamaEncoder,
    create_vector_retrievable_callbacks,
    create_vector_store,
)

DOCS = [
    "Refunds are issued within 14 days of a return.",
    "Our store opens at 9am on weekdays.",
    "Shipping to Canada takes five business days.",
    "Gift cards never expire.",
    "The warranty covers manufacturing defects for two years.",
]
# Shares "days" with two documents, so both legs rank them first: fused scores near 1, dense near 0.55.
OFF_TOPIC = "how many days did the Roman empire last"
ON_TOPIC = "how long do refunds take"
CUTOFF = 0.75


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> VectorStore:
    vs = create_vector_store(uri=str(tmp_path_factory.mktemp("shop")), encoder=WordLlamaEncoder())
    vs("faq").upsert_sync([{"id": f"d{i}", "document": text} for i, text in enumerate(DOCS)])
    return vs


@pytest.mark.parametrize("fusion", ["rrf", "linear"])
def test_off_topic_query_fuses_high_but_is_not_similar(shop: VectorStore, fusion: str) -> None:
    q = shop("faq").near_text(OFF_TOPIC).select("id").limit(5)
    assert q.hybrid(fusion=fusion).search_sync()[0].score > CUTOFF  # the fused score only ranks
    assert q.search_sync()[0].score < CUTOFF
    assert q.hybrid(fusion=fusion).min_score(CUTOFF).search_sync() == []
    on_topic = shop("faq").near_text(ON_TOPIC).select("id").limit(5).hybrid(fusion=fusion).min_score(CUTOFF)
    assert [m.id for m in on_topic.search_sync()] == ["d0"]


@pytest.mark.parametrize("hybrid", [True, {"fusion": "linear"}, 0.0])
def test_callbacks_abstain_with_hybrid_search(shop: VectorStore, hybrid: object) -> None:
    callbacks = create_vector_retrievable_callbacks(
        store=shop,
        collection="faq",
        trust_tier="first-party",
        min_score=CUTOFF,
        abstain_reply="Not in the FAQ.",
        settings={"hybrid": hybrid},
    )
    seen: dict[str, object] = {}

    async def spy(ctx, next_):
        await next_()
        seen.update(ctx.stash.get(GROUNDING_STASH_KEY, {}))

    model = ScriptedModel(lambda messages: "answered")
    runner = TurnRunner(TurnRunnerConfig(model=model, **callbacks))
    off = runner.run_sync(OFF_TOPIC)
    assert off.stopped and off.stop_reason == NO_GROUNDED_ANSWER and model.calls == []
    assert off.reply == "Not in the FAQ."
    on = runner.run_sync(ON_TOPIC)
    assert not on.stopped and [r.id for r in on.retrievables] == ["d0"]
    assert len(model.calls) == 1
    # The verdict reports the dense similarity, so the best score of the off-topic turn is below the bar.
    runner_spy = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["x"]), output_pipeline=[spy], **callbacks))
    runner_spy.run_sync(ON_TOPIC)
    assert seen["grounded"] is True and CUTOFF <= float(seen["best_score"]) < 1.0  # type: ignore[arg-type]


def test_a_single_candidate_does_not_pass_by_fusion(shop: VectorStore) -> None:
    # Linear fusion normalizes each leg within its results: one candidate scores 1 in both.
    q = shop("faq").near_text(OFF_TOPIC).where("id", "eq", "d2").select("id").limit(5)
    assert q.hybrid(fusion="linear").search_sync()[0].score == 1.0
    assert q.hybrid(fusion="linear").min_score(CUTOFF).search_sync() == []
