"""The retrieval callbacks with min_score (abstention), hybrid search and reranking, in a real runner."""

import asyncio
import json
import re

import pytest

from turnkit import GROUNDING_STASH_KEY, NO_GROUNDED_ANSWER, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit import NO_GROUNDED_ANSWER as BATTERY_NO_GROUNDED_ANSWER
from turnkit.batteries.vector import (
    RerankOptions,
    VectorStoreUsageError,
    abstaining_fetch_stage,
    create_vector_retrievable_callbacks,
)

DOCS = [
    {"id": "cat", "document": "the cat sat on the mat"},
    {"id": "dog", "document": "the dog chased the ball in the park"},
    {"id": "oslo", "document": "ferries leave Oslo harbour every hour"},
    {"id": "tea", "document": "green tea is brewed at eighty degrees"},
]


@pytest.fixture
def kb(vs, collection):
    vs(collection).upsert_sync([dict(d) for d in DOCS])
    return vs, collection


def runner_for(callbacks, model=None):
    model = model or ScriptedModel(lambda messages: "answered")
    return TurnRunner(TurnRunnerConfig(model=model, **callbacks)), model


def judge_liking(word):
    def reply(messages):
        passages = re.findall(r"^\[(\d+)\] (.*)$", messages[-1].content, re.M)
        return json.dumps({n: 1.0 if word in text else 0.0 for n, text in passages})

    return ScriptedModel(reply)


def test_min_score_abstains_and_the_runner_marks_the_turn(kb):
    vs, coll = kb
    assert NO_GROUNDED_ANSWER == BATTERY_NO_GROUNDED_ANSWER == "no grounded answer"
    callbacks = create_vector_retrievable_callbacks(
        store=vs,
        collection=coll,
        trust_tier="first-party",
        min_score=0.8,
        abstain_reply="I don't have that in my notes.",
    )
    runner, model = runner_for(callbacks)
    off_topic = runner.run_sync("quarterly revenue of the bakery")
    assert off_topic.stopped and off_topic.stop_reason == NO_GROUNDED_ANSWER
    assert off_topic.stopped_in == "input" and off_topic.reply == "I don't have that in my notes."
    assert off_topic.retrievables == () and model.calls == []
    on_topic = runner.run_sync("the cat sat on the mat")
    assert not on_topic.stopped and on_topic.reply == "answered" and len(model.calls) == 1
    assert on_topic.retrievables and all(r.score >= 0.8 for r in on_topic.retrievables)
    assert on_topic.retrievables[0].id == "cat"


def test_min_score_filters_and_records_the_verdict(kb, harness):
    vs, coll = kb
    # Vector search, no collapse: returned scores are the similarities the threshold reads, and every
    # fetched candidate is one of the top_k.
    VECTOR = {"hybrid": False, "collapse_duplicates": False}

    async def fetch(callbacks):
        ctx = await harness(callbacks).context(("user", "the cat on the mat"))
        return await callbacks.fetch_retrievables(ctx), ctx.stash

    plain = create_vector_retrievable_callbacks(
        store=vs, collection=coll, trust_tier="first-party", top_k=4, settings=VECTOR
    )
    records, stash = asyncio.run(fetch(plain))
    assert len(records) == 4 and GROUNDING_STASH_KEY not in stash
    cutoff = sorted(r.score for r in records)[-2]
    strict = create_vector_retrievable_callbacks(
        store=vs, collection=coll, trust_tier="first-party", top_k=4, min_score=cutoff, settings=VECTOR
    )
    kept, stash = asyncio.run(fetch(strict))
    assert len(kept) == 2 and all(r.score >= cutoff for r in kept)
    verdict = stash[GROUNDING_STASH_KEY]
    assert verdict["grounded"] is True and verdict["kept"] == 2 and verdict["min_score"] == cutoff
    assert verdict["best_score"] == max(r.score for r in kept) and verdict["fetched"] == 4
    too_strict = create_vector_retrievable_callbacks(
        store=vs, collection=coll, trust_tier="first-party", top_k=4, min_score=0.999, settings=VECTOR
    )
    none, stash = asyncio.run(fetch(too_strict))
    verdict = stash[GROUNDING_STASH_KEY]
    assert none == [] and verdict["grounded"] is False and verdict["kept"] == 0
    # The best score below the bar is still reported, to help choose a threshold.
    assert verdict["best_score"] == max(r.score for r in records) < 0.999


def test_without_min_score_an_empty_fetch_still_calls_the_model(vs, collection):
    callbacks = create_vector_retrievable_callbacks(store=vs, collection=collection, trust_tier="first-party")
    runner, model = runner_for(callbacks)
    result = runner.run_sync("anything")  # the collection does not exist yet
    assert not result.stopped and result.reply == "answered" and len(model.calls) == 1


def test_min_score_abstains_on_a_missing_collection(vs, collection):
    callbacks = create_vector_retrievable_callbacks(
        store=vs, collection=collection, trust_tier="first-party", min_score=0.1
    )
    runner, model = runner_for(callbacks)
    result = runner.run_sync("anything")
    assert result.stop_reason == NO_GROUNDED_ANSWER and result.reply is None and model.calls == []


def test_abstaining_stage_still_works_and_takes_precedence(kb):
    vs, coll = kb
    callbacks = create_vector_retrievable_callbacks(store=vs, collection=coll, trust_tier="first-party")
    model = ScriptedModel(["answered"])
    runner = TurnRunner(
        TurnRunnerConfig(model=model, input_pipeline=[abstaining_fetch_stage(0.99, reply="no")], **callbacks)
    )
    result = runner.run_sync("quarterly revenue")
    assert result.stop_reason == NO_GROUNDED_ANSWER and result.reply == "no" and model.calls == []


@pytest.mark.parametrize(
    "options",
    [
        {"min_score": 1.5},
        {"min_score": "high"},
        {"abstain_reply": "no"},  # without min_score it could never be used
        {"min_score": 0.5, "abstain_reply": ""},
        {"settings": {"hybrid": {"alpha": 2}}},
        {"settings": {"hybrid": "yes"}},
        {"settings": {"rerank": "yes"}},
        {"settings": {"rerank": True, "rerank_model": object()}},
        {"settings": {"rerank": True, "rerank_scorer": object()}},
        {"settings": {"rerank": True, "rerank_model": ScriptedModel(["x"]), "rerank_scorer": object()}},
        {"settings": {"top_k": 0}},
        {"settings": "hybrid"},
    ],
)
def test_bad_ranking_options_fail_at_creation(vs, collection, options):
    with pytest.raises(VectorStoreUsageError) as exc_info:
        create_vector_retrievable_callbacks(
            store=vs, collection=collection, trust_tier="first-party", **options
        )
    assert exc_info.value.code == "E_INVALID_RETRIEVABLE_GLUE_CONFIG"


def test_rerank_with_a_judge_promotes_and_keeps_top_k(kb):
    vs, coll = kb
    judge = judge_liking("Oslo")
    callbacks = create_vector_retrievable_callbacks(
        store=vs,
        collection=coll,
        trust_tier="first-party",
        top_k=1,
        settings={
            "rerank": RerankOptions(weights={"semantic": 0.6, "vector": 0.3, "position": 0.1}, pool_factor=4),
            "rerank_model": judge,
        },
    )
    runner, _ = runner_for(callbacks)
    result = runner.run_sync("the cat sat on the mat")
    assert [r.id for r in result.retrievables] == ["oslo"]
    assert len(judge.calls) == 1
    assert "Query: the cat sat on the mat" in judge.calls[0][-1].content
    assert len(re.findall(r"^\[\d+\] ", judge.calls[0][-1].content, re.M)) == 4


def test_rerank_of_a_vector_query_judges_against_the_user_message(kb):
    vs, coll = kb
    judge = judge_liking("tea")
    vector = vs.encoder.encode(["the dog chased the ball"], kind="query")[0]
    callbacks = create_vector_retrievable_callbacks(
        store=vs,
        collection=coll,
        trust_tier="first-party",
        top_k=2,
        derive_query=lambda ctx: list(map(float, vector)),
        settings={"hybrid": True, "rerank": True, "rerank_model": judge},  # hybrid: no words to match
    )
    result = runner_for(callbacks)[0].run_sync("how hot for green tea")
    assert len(result.retrievables) == 2
    assert "Query: how hot for green tea" in judge.calls[0][-1].content


def test_rerank_default_scorer_and_hybrid(kb):
    vs, coll = kb
    lexical = create_vector_retrievable_callbacks(
        store=vs, collection=coll, trust_tier="first-party", top_k=4, settings={"hybrid": 0.0}
    )
    result = runner_for(lexical)[0].run_sync("Oslo")
    assert [r.id for r in result.retrievables] == ["oslo"]
    ranked = create_vector_retrievable_callbacks(
        store=vs, collection=coll, trust_tier="first-party", top_k=2, settings={"rerank": True}
    )
    rerank = ranked.glue.settings.rerank
    assert rerank is not None and rerank.top_k == 2
    result = runner_for(ranked)[0].run_sync("ferries from Oslo")
    assert result.retrievables[0].id == "oslo" and len(result.retrievables) == 2
    scores = [r.score for r in result.retrievables]
    assert scores == sorted(scores, reverse=True)


def test_a_filter_on_a_key_no_record_holds_yet_retrieves_nothing(vs, collection):
    # A new tenant's first turn: the deployer's filter names a key no record holds yet.
    vs(collection).upsert_sync([{"id": "a", "document": "the cat sat on the mat"}])
    callbacks = create_vector_retrievable_callbacks(
        store=vs, collection=collection, trust_tier="first-party", filter={"tenant": "acme"}
    )
    runner, model = runner_for(callbacks)
    result = runner.run_sync("the cat sat on the mat")
    assert list(result.retrievables) == [] and result.reply is not None and len(model.calls) == 1
