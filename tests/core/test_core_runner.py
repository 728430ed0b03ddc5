"""TurnRunner end to end: callbacks, context, messages, events, config validation."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

import pytest

from turnkit import (
    ChatMessage,
    InMemoryMessageStore,
    Message,
    ModelError,
    RawRetrievable,
    Retrievable,
    ScriptedModel,
    TrustTierRequiredError,
    TurnContext,
    TurnEvent,
    TurnkitError,
    TurnRunner,
    TurnRunnerConfig,
    UsageError,
    count_tokens,
)

pytestmark = pytest.mark.anyio


def rec(
    id: str, tier: str = "first-party", score: float | None = None, content: str | None = None
) -> Retrievable:
    return Retrievable(id=id, content=content or f"content of {id}", trust_tier=tier, score=score)  # type: ignore[arg-type]


class DictStore:
    """A tiny retrieval backend with sync callbacks (they run in a worker thread)."""

    def __init__(self, *records: Retrievable) -> None:
        self.records = {r.id: r for r in records}
        self.threads: list[str] = []
        self.queries: list[str | None] = []

    def fetch(self, ctx: TurnContext) -> list[Retrievable]:
        self.threads.append(threading.current_thread().name)
        last = ctx.last_user_message_sync()
        self.queries.append(last.content if last else None)
        return list(self.records.values())

    def store(self, ctx: TurnContext, r: Retrievable) -> None:
        self.records[r.id] = r

    def mutate(self, ctx: TurnContext, r: Retrievable) -> None:
        self.records[r.id] = r

    def delete(self, ctx: TurnContext, id: str) -> None:
        del self.records[id]


class AsyncDictStore(DictStore):
    async def fetch(self, ctx: TurnContext) -> list[Retrievable]:  # type: ignore[override]
        self.threads.append(threading.current_thread().name)
        last = await ctx.last_user_message()
        self.queries.append(last.content if last else None)
        await asyncio.sleep(0)
        return list(self.records.values())

    async def store(self, ctx: TurnContext, r: Retrievable) -> None:  # type: ignore[override]
        self.records[r.id] = r

    async def mutate(self, ctx: TurnContext, r: Retrievable) -> None:  # type: ignore[override]
        self.records[r.id] = r

    async def delete(self, ctx: TurnContext, id: str) -> None:  # type: ignore[override]
        del self.records[id]


def config_for(store: DictStore, **kw: Any) -> TurnRunnerConfig:
    kw.setdefault("model", ScriptedModel(lambda msgs: f"echo: {msgs[-1].content}"))
    return TurnRunnerConfig(
        fetch_retrievables=store.fetch,
        store_retrievable=store.store,
        mutate_retrievable=store.mutate,
        delete_retrievable=store.delete,
        **kw,
    )


# -- a whole turn ------------------------------------------------------------------------


@pytest.mark.parametrize("store_cls", [DictStore, AsyncDictStore], ids=["sync", "async"])
async def test_a_turn_fetches_renders_calls_the_model_and_stores(store_cls: type[DictStore]) -> None:
    store = store_cls(rec("w", "third-party", 0.99), rec("d", "first-party", 0.5))
    model = ScriptedModel(["The answer."])
    runner = TurnRunner(config_for(store, model=model, system_prompt="Be brief."))
    result = await runner.run("What is it?")

    assert result.reply == "The answer."
    assert store.queries == ["What is it?"]  # the glue's default query is there during fetch
    # Sync callbacks run off the loop thread; async ones on it.
    assert (store.threads[0] == threading.current_thread().name) is (store_cls is AsyncDictStore)
    assert [r.id for r in result.retrievables] == ["d", "w"]  # first-party first
    assert result.dropped == () and not result.stopped
    # The model saw exactly the rendered prompt.
    assert model.calls == [result.prompt]
    assert result.prompt[0].role == "system" and result.prompt[0].content.startswith("Be brief.")
    assert 'id="d"' in result.prompt[0].content and "<untrusted_content" not in result.prompt[0].content
    # Third-party records come in their own user-role message, just before the question.
    assert result.prompt[-2].role == "user" and '<untrusted_content nonce="' in result.prompt[-2].content
    assert result.prompt[-1] == ChatMessage("user", "What is it?")
    assert result.rendered is not None and set(result.rendered.nonces) == {"w"}
    # Both messages were stored, in order, under the conversation.
    assert runner.message_store is not None
    history = runner.message_store.messages("default")
    assert [(m.role, m.content) for m in history] == [("user", "What is it?"), ("assistant", "The answer.")]
    assert result.user_message == history[0] and result.reply_message == history[1]
    assert result.tokens is not None and result.tokens.reply == count_tokens("The answer.") == 3


async def test_history_is_carried_between_turns_per_conversation() -> None:
    model = ScriptedModel(lambda msgs: "|".join(m.content for m in msgs if m.role != "system"))
    runner = TurnRunner(TurnRunnerConfig(model=model))
    await runner.run("one", conversation_id="c1")
    await runner.run("other", conversation_id="c2")
    result = await runner.run("two", conversation_id="c1")
    assert result.reply == "one|one|two"
    assert result.conversation_id == "c1"
    assert [m.content for m in runner.message_store.messages("c2")] == ["other", "other"]  # type: ignore[union-attr]


def test_run_sync_works_from_plain_code_and_inside_a_running_loop() -> None:
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["a", "b"])))
    assert runner.run_sync("hi").reply == "a"

    async def inside() -> str | None:
        return runner.run_sync("again").reply  # blocks this loop, but works

    assert asyncio.run(inside()) == "b"


async def test_sync_model_runs_in_a_thread_and_bad_replies_are_model_errors() -> None:
    seen: list[str] = []

    class SyncModel:
        def complete(self, messages: Sequence[ChatMessage]) -> str:
            seen.append(threading.current_thread().name)
            return "sync reply"

    result = await TurnRunner(TurnRunnerConfig(model=SyncModel())).run("q")
    assert result.reply == "sync reply" and seen[0] != threading.current_thread().name

    class Broken:
        async def complete(self, messages: Sequence[ChatMessage]) -> object:
            raise RuntimeError("boom")

    with pytest.raises(ModelError, match="RuntimeError: boom") as info:
        await TurnRunner(TurnRunnerConfig(model=Broken())).run("q")  # type: ignore[arg-type]
    assert isinstance(info.value.__cause__, RuntimeError)

    class NotText:
        async def complete(self, messages: Sequence[ChatMessage]) -> object:
            return {"text": "hi"}

    with pytest.raises(ModelError, match="dict"):
        await TurnRunner(TurnRunnerConfig(model=NotText())).run("q")  # type: ignore[arg-type]


async def test_scripted_model_running_out_is_a_model_error() -> None:
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["only"])))
    await runner.run("1")
    with pytest.raises(ModelError, match="ran out"):
        await runner.run("2")


@pytest.mark.parametrize("bad", ["", "   ", Message(role="assistant", content="x"), 42])
async def test_invalid_user_messages(bad: object) -> None:
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["x"])))
    with pytest.raises(UsageError) as exc_info:
        await runner.run(bad)  # type: ignore[arg-type]
    assert exc_info.value.code == "E_INVALID_TURN_CONTEXT"
    with pytest.raises(UsageError) as exc_info:
        await runner.run("ok", conversation_id="")
    assert exc_info.value.code == "E_INVALID_TURN_CONTEXT"


# -- the context's retrieval surface -------------------------------------------------------


@pytest.mark.parametrize("store_cls", [DictStore, AsyncDictStore], ids=["sync", "async"])
async def test_store_mutate_delete_go_through_callbacks_and_keep_turn_order(
    store_cls: type[DictStore],
) -> None:
    store = store_cls(rec("a", score=0.9), rec("b", score=0.8), rec("c", score=0.7))
    observed: dict[str, Any] = {}

    async def edit(ctx: TurnContext, next_: Any) -> None:
        await ctx.store_retrievable(rec("new", score=0.95))
        await ctx.mutate_retrievable(rec("a", score=0.9, content="a v2"))
        await ctx.mutate_retrievable(rec("b", score=0.8, content="b v2"))
        await ctx.mutate_retrievable(rec("zzz", score=0.1))  # not in this turn: storage only
        await ctx.delete_retrievable("c")
        observed["ids"] = ctx.turn_retrievables.ids
        await next_()

    from turnkit import fetch_retrievables_stage

    runner = TurnRunner(config_for(store, input_pipeline=[fetch_retrievables_stage, edit]))
    result = await runner.run("q")
    # Mutate replaced b in place (no duplicate, same position); store appended; delete removed.
    assert observed["ids"] == ["a", "b", "new"]
    assert store.records["b"].content == "b v2" and "zzz" in store.records and "c" not in store.records
    assert store.records["a"].content == "a v2"
    assert [r.id for r in result.retrievables] == ["new", "a", "b"]  # rendered in rank order
    assert next(r for r in result.retrievables if r.id == "b").content == "b v2"


async def test_sync_middleware_can_use_the_sync_context_forms() -> None:
    store = DictStore(rec("a"))

    def edit(ctx: TurnContext, next_: Any) -> None:
        assert threading.current_thread().name == "turnkit-middleware"
        ctx.turn_retrievables.extend(ctx.fetch_retrievables_sync())
        ctx.store_retrievable_sync(rec("b"))
        ctx.mutate_retrievable_sync(rec("a", content="a v2"))
        ctx.delete_retrievable_sync("b")
        ctx.stash["messages"] = [m.content for m in ctx.fetch_messages_sync()]
        next_()

    runner = TurnRunner(config_for(store, input_pipeline=[edit]))
    result = await runner.run("q")
    assert [r.content for r in result.retrievables] == ["a v2"]
    assert set(store.records) == {"a"}


async def test_sync_context_forms_refuse_to_deadlock_the_turn_loop() -> None:
    async def bad(ctx: TurnContext, next_: Any) -> None:
        ctx.fetch_messages_sync()

    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["x"]), input_pipeline=[bad]))
    with pytest.raises(UsageError) as info:
        await runner.run("q")
    assert info.value.code == "E_SYNC_IN_LOOP_THREAD"
    assert info.value.context["pipeline"] == "input"


async def test_missing_callbacks() -> None:
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["x"])))
    ctx = runner.new_context()
    assert await ctx.fetch_retrievables() == []  # no retrieval configured: nothing retrieved
    for call in (
        ctx.store_retrievable(rec("a")),
        ctx.mutate_retrievable(rec("a")),
        ctx.delete_retrievable("a"),
    ):
        with pytest.raises(UsageError) as exc_info:
            await call
        assert exc_info.value.code == "E_CALLBACK_NOT_CONFIGURED"
    with pytest.raises(UsageError) as exc_info:
        await ctx.delete_retrievable("")
    assert exc_info.value.code == "E_INVALID_RETRIEVABLE"
    with pytest.raises(TrustTierRequiredError):
        await ctx.store_retrievable(RawRetrievable(id="a", content="x"))  # type: ignore[arg-type]


def test_new_context_sync_forms_work_outside_a_turn() -> None:
    store = DictStore()
    runner = TurnRunner(config_for(store))
    ctx = runner.new_context(conversation_id="admin")
    ctx.store_retrievable_sync(rec("a"))
    assert set(store.records) == {"a"} and ctx.turn_retrievables.ids == ["a"]
    assert ctx.last_user_message_sync() is None
    assert ctx.fetch_retrievables_sync() == [store.records["a"]]


@pytest.mark.parametrize(
    ("returned", "error", "code"),
    [
        ([RawRetrievable(id="a", content="x")], TrustTierRequiredError, "E_TRUST_TIER_REQUIRED"),
        ([{"id": "a", "content": "x", "trust_tier": "first-party"}], UsageError, "E_INVALID_RETRIEVABLE"),
        (None, UsageError, "E_INVALID_RETRIEVABLE"),
        ("a", UsageError, "E_INVALID_RETRIEVABLE"),
    ],
)
async def test_fetch_results_are_checked(returned: object, error: type[TurnkitError], code: str) -> None:
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["x"]), fetch_retrievables=lambda ctx: returned))
    with pytest.raises(error) as info:
        await runner.run("q")
    assert info.value.code == code
    assert info.value.context["pipeline_stage"] == "fetch_retrievables_stage"


# -- message callbacks ---------------------------------------------------------------------


async def test_custom_message_store_that_lags_still_sees_the_current_question() -> None:
    written: list[Message] = []

    async def fetch_messages(ctx: TurnContext) -> list[Message]:
        return []  # eventual consistency: our writes are not visible yet

    async def store_message(ctx: TurnContext, m: Message) -> None:
        written.append(m)

    store = DictStore(rec("a"))
    runner = TurnRunner(config_for(store, fetch_messages=fetch_messages, store_message=store_message))
    result = await runner.run("where?")
    assert store.queries == ["where?"]
    assert runner.message_store is None
    assert [m.role for m in written] == ["user", "assistant"]
    assert [m.role for m in result.prompt] == ["system", "user"]


async def test_shared_in_memory_store_and_bad_history() -> None:
    shared = InMemoryMessageStore()
    cfg = TurnRunnerConfig(
        model=ScriptedModel(lambda msgs: str(len(msgs))),
        fetch_messages=shared.fetch_messages,
        store_message=shared.store_message,
    )
    await TurnRunner(cfg).run("a")
    result = await TurnRunner(cfg).run("b")  # a second runner sees the first one's history
    assert result.reply == "4"  # system + user + assistant + user
    shared.clear()
    assert shared.messages() == []

    bad = TurnRunnerConfig(
        model=ScriptedModel(["x"]),
        fetch_messages=lambda ctx: ["not a message"],
        store_message=lambda ctx, m: None,
    )
    with pytest.raises(UsageError) as exc_info:
        await TurnRunner(bad).run("q")
    assert exc_info.value.code == "E_INVALID_MESSAGE"


def test_message_validation() -> None:
    with pytest.raises(UsageError) as info:
        Message(role="tool", content="x")  # type: ignore[arg-type]
    assert info.value.field == "role" and info.value.code == "E_INVALID_MESSAGE"
    with pytest.raises(UsageError) as exc_info:
        Message(role="user", content=b"x")  # type: ignore[arg-type]
    assert exc_info.value.code == "E_INVALID_MESSAGE"
    with pytest.raises(UsageError) as exc_info:
        Message(role="user", content="x", created_at="2024-01-01T00:00:00")
    assert exc_info.value.code == "E_INVALID_MESSAGE"
    m = Message(role="user", content="x", created_at=0)
    assert Message.model_validate(m.model_dump()) == m and m.updated_at == m.created_at


# -- events --------------------------------------------------------------------------------


async def test_events_are_recorded_and_observed_in_order() -> None:
    seen: list[TurnEvent] = []

    async def on_event(event: TurnEvent) -> None:
        seen.append(event)

    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel(["x"]), on_event=on_event))
    result = await runner.run("q")
    names = [e.name for e in result.events]
    assert names == [
        "turn_start",
        "user_message_stored",
        "input_pipeline",
        "prompt_rendered",
        "model",
        "reply_stored",
        "output_pipeline",
        "turn_end",
    ]
    assert seen == list(result.events)
    assert all(e.turn_id == result.turn_id for e in seen)
    assert result.events[0].duration is None and all(e.duration is not None for e in result.events[1:])
    assert result.events[3].data["prompt_tokens"] == result.tokens.prompt  # type: ignore[union-attr]


async def test_a_failing_turn_emits_turn_error() -> None:
    seen: list[TurnEvent] = []
    runner = TurnRunner(TurnRunnerConfig(model=ScriptedModel([]), on_event=seen.append))
    with pytest.raises(ModelError):
        await runner.run("q")
    assert seen[-1].name == "turn_error" and seen[-1].data["code"] == "E_MODEL_FAILED"


# -- config validation -----------------------------------------------------------------------


def _two(ctx: object, x: object) -> None: ...


def _zero() -> list[object]:
    return []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"model": object()}, "model"),
        ({"model": "gpt-4o"}, "model"),
        ({"fetch_retrievables": "nope"}, "fetch_retrievables"),
        ({"fetch_retrievables": _zero}, "fetch_retrievables"),
        ({"store_retrievable": lambda ctx: None}, "store_retrievable"),
        ({"mutate_retrievable": 3}, "mutate_retrievable"),
        ({"delete_retrievable": lambda: None}, "delete_retrievable"),
        ({"fetch_messages": lambda ctx: []}, "store_message"),
        ({"store_message": _two}, "fetch_messages"),
        ({"input_pipeline": lambda ctx, n: None}, "input_pipeline"),
        ({"input_pipeline": [lambda ctx: None]}, "input_pipeline[0]"),
        ({"output_pipeline": "stage"}, "output_pipeline"),
        ({"token_budget": 0}, "token_budget"),
        ({"token_budget": True}, "token_budget"),
        ({"token_budget": 10.5}, "token_budget"),
        ({"encoding": "gpt2"}, "encoding"),
        ({"max_history_messages": -1}, "max_history_messages"),
        ({"system_prompt": None}, "system_prompt"),
        ({"on_event": lambda: None}, "on_event"),
    ],
)
def test_config_is_validated_with_named_errors(kwargs: dict[str, Any], field: str) -> None:
    kwargs.setdefault("model", ScriptedModel(["x"]))
    with pytest.raises(UsageError) as info:
        TurnRunnerConfig(**kwargs)
    assert info.value.field == field
    assert info.value.code == "E_INVALID_TURN_RUNNER_CONFIG"


def test_config_freezes_pipelines_and_runner_checks_its_argument() -> None:
    stages: list[Any] = []
    cfg = TurnRunnerConfig(model=ScriptedModel(["x"]), input_pipeline=stages)
    stages.append(lambda ctx, n: None)
    assert cfg.input_pipeline == ()
    with pytest.raises(UsageError) as exc_info:
        TurnRunner({"model": ScriptedModel(["x"])})  # type: ignore[arg-type]
    assert exc_info.value.code == "E_INVALID_TURN_RUNNER_CONFIG"
