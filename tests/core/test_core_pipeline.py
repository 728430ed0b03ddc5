"""Input/output pipelines: order, sync and async middleware, stopping, errors."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from turnkit import (
    Message,
    Next,
    PipelineError,
    Retrievable,
    ScriptedModel,
    TurnContext,
    TurnRunner,
    TurnRunnerConfig,
    UsageError,
    fetch_retrievables_stage,
)

pytestmark = pytest.mark.anyio


def runner_with(
    input_pipeline: list[Any] | None = None, output_pipeline: list[Any] | None = None, **kw: Any
) -> tuple[TurnRunner, ScriptedModel]:
    model = kw.pop("model", None) or ScriptedModel(lambda msgs: "model reply")
    cfg: dict[str, Any] = {"model": model, **kw}
    if input_pipeline is not None:
        cfg["input_pipeline"] = input_pipeline
    if output_pipeline is not None:
        cfg["output_pipeline"] = output_pipeline
    return TurnRunner(TurnRunnerConfig(**cfg)), model


def tracer(log: list[str], name: str, *, sync: bool) -> Any:
    if sync:

        def mw(ctx: TurnContext, next_: Next) -> None:
            log.append(f"{name}:before:{threading.current_thread().name}")
            next_()
            log.append(f"{name}:after")

    else:

        async def mw(ctx: TurnContext, next_: Next) -> None:  # type: ignore[misc]
            log.append(f"{name}:before:loop")
            await next_()
            log.append(f"{name}:after")

    mw.__qualname__ = name
    return mw


@pytest.mark.parametrize("pattern", ["aaa", "sss", "asa", "sas"])
async def test_onion_order_with_mixed_sync_and_async_middleware(pattern: str) -> None:
    log: list[str] = []
    stages = [tracer(log, f"m{i}", sync=c == "s") for i, c in enumerate(pattern)]
    runner, model = runner_with(stages)
    result = await runner.run("q")
    befores = [e for e in log if ":before:" in e]
    assert [e.split(":")[0] for e in befores] == ["m0", "m1", "m2"]
    for entry, c in zip(befores, pattern, strict=True):
        assert entry.endswith(":turnkit-middleware" if c == "s" else ":loop")
    assert [e for e in log if e.endswith(":after")] == ["m2:after", "m1:after", "m0:after"]
    assert result.reply == "model reply" and not result.stopped and len(model.calls) == 1


async def test_many_nested_sync_middleware_do_not_exhaust_a_thread_pool() -> None:
    # Each sync middleware blocks its thread while the rest runs; 40 exceeds
    # asyncio's default pool on any machine, so this deadlocks if they shared it.
    log: list[str] = []
    runner, _ = runner_with([tracer(log, f"m{i}", sync=True) for i in range(40)])
    result = await runner.run("q")
    assert len(log) == 80 and result.reply == "model reply"


async def test_middleware_can_change_the_context() -> None:
    async def retrieve(ctx: TurnContext, next_: Next) -> None:
        ctx.turn_retrievables.add(
            Retrievable(id="mw", content="added by middleware", trust_tier="first-party")
        )
        ctx.system_prompt = "Changed prompt."
        ctx.stash["seen"] = ctx.user_message
        await next_()

    async def redact(ctx: TurnContext, next_: Next) -> None:
        assert ctx.reply == "model reply"
        ctx.reply = "[redacted]"
        await next_()

    runner, model = runner_with([retrieve], [redact])
    result = await runner.run("q")
    assert result.reply == "[redacted]"
    assert model.calls[0][0].content.startswith("Changed prompt.")
    assert [r.id for r in result.retrievables] == ["mw"]
    # The stored assistant message is the model's; the output pipeline only changes the result.
    assert [m.content for m in runner.message_store.messages()] == ["q", "model reply"]  # type: ignore[union-attr]


async def test_not_calling_next_stops_the_input_pipeline_without_calling_the_model() -> None:
    log: list[str] = []

    def guard(ctx: TurnContext, next_: Next) -> None:
        log.append("guard")

    runner, model = runner_with([guard, tracer(log, "never", sync=False)], [tracer(log, "out", sync=False)])
    result = await runner.run("q")
    assert result.stopped and result.stopped_in == "input"
    assert result.stop_reason is not None and "guard" in result.stop_reason
    assert result.reply is None and result.prompt == () and result.tokens is None
    assert model.calls == [] and log == ["guard"]
    assert [e.name for e in result.events][-1] == "turn_end"
    assert "model" not in [e.name for e in result.events]


async def test_a_stopping_stage_may_answer_itself() -> None:
    async def cached(ctx: TurnContext, next_: Next) -> None:
        ctx.reply = "from cache"

    runner, model = runner_with([cached])
    result = await runner.run("q")
    assert result.stopped and result.reply == "from cache" and model.calls == []
    assert result.reply_message is not None and result.reply_message.role == "assistant"
    assert [m.content for m in runner.message_store.messages()] == ["q", "from cache"]  # type: ignore[union-attr]


async def test_abort_stops_with_its_reason_and_skips_the_rest() -> None:
    log: list[str] = []

    async def aborter(ctx: TurnContext, next_: Next) -> None:
        ctx.abort("off-topic")
        await next_()  # continuing after abort is a no-op

    runner, model = runner_with([aborter, tracer(log, "later", sync=True)])
    result = await runner.run("q")
    assert result.stopped and result.stop_reason == "off-topic" and log == [] and model.calls == []


async def test_output_pipeline_stop_is_reported() -> None:
    def stop(ctx: TurnContext, next_: Next) -> None:
        pass

    log: list[str] = []
    runner, model = runner_with(None, [stop, tracer(log, "never", sync=True)])
    result = await runner.run("q")
    assert result.reply == "model reply" and len(model.calls) == 1
    assert result.stopped and result.stopped_in == "output" and log == []


@pytest.mark.parametrize("sync", [True, False], ids=["sync", "async"])
@pytest.mark.parametrize("where", ["input", "output"])
async def test_middleware_errors_become_pipeline_errors(sync: bool, where: str) -> None:
    class Boom(Exception):
        pass

    if sync:

        def bad(ctx: TurnContext, next_: Next) -> None:
            raise Boom("nope")

    else:

        async def bad(ctx: TurnContext, next_: Next) -> None:  # type: ignore[misc]
            raise Boom("nope")

    log: list[str] = []
    outer = tracer(log, "outer", sync=not sync)
    stages = [outer, bad]
    runner, model = runner_with(stages, None) if where == "input" else runner_with(None, stages)
    with pytest.raises(PipelineError) as info:
        await runner.run("q")
    err = info.value
    assert err.code == ("E_INPUT_PIPELINE_ERROR" if where == "input" else "E_OUTPUT_PIPELINE_ERROR")
    assert isinstance(err.__cause__, Boom)
    assert err.index == 1 and "bad" in err.stage
    assert log == ["outer:before:" + ("loop" if sync else "turnkit-middleware")]  # outer never resumed
    assert len(model.calls) == (0 if where == "input" else 1)


async def test_an_outer_middleware_can_catch_an_inner_failure() -> None:
    async def inner(ctx: TurnContext, next_: Next) -> None:
        raise ValueError("inner")

    async def outer(ctx: TurnContext, next_: Next) -> None:
        try:
            await next_()
        except PipelineError as exc:
            ctx.stash["caught"] = exc.index
        ctx.reply = "recovered"

    runner, model = runner_with([outer, inner])
    result = await runner.run("q")
    # The chain never reached its end, so the turn stops with the reply the outer stage set.
    assert result.stopped and result.reply == "recovered" and model.calls == []
    assert result.stop_reason is not None and "inner" in result.stop_reason


async def test_calling_next_twice_is_an_error() -> None:
    async def twice(ctx: TurnContext, next_: Next) -> None:
        await next_()
        await next_()

    runner, _ = runner_with([twice])
    with pytest.raises(UsageError, match="more than once") as info:
        await runner.run("q")
    assert info.value.context["pipeline_stage"].endswith("twice") and info.value.pipeline_index == 0


async def test_default_input_pipeline_fetches_and_replacing_it_drops_retrieval() -> None:
    records = [Retrievable(id="r", content="x", trust_tier="first-party")]
    default, _ = runner_with(fetch_retrievables=lambda ctx: records)
    assert [r.id for r in (await default.run("q")).retrievables] == ["r"]
    replaced, _ = runner_with([], fetch_retrievables=lambda ctx: records)
    assert (await replaced.run("q")).retrievables == ()
    explicit, _ = runner_with([fetch_retrievables_stage], fetch_retrievables=lambda ctx: records)
    assert [r.id for r in (await explicit.run("q")).retrievables] == ["r"]


async def test_a_middleware_setting_a_non_string_reply_fails_clearly() -> None:
    async def bad(ctx: TurnContext, next_: Next) -> None:
        ctx.reply = Message(role="assistant", content="x")  # type: ignore[assignment]
        await next_()

    runner, _ = runner_with(None, [bad])
    with pytest.raises(PipelineError, match="must be a string") as info:
        await runner.run("q")
    assert info.value.code == "E_OUTPUT_PIPELINE_ERROR"
