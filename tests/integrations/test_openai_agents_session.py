"""TurnkitSession against the SDK's own SQLiteSession, and under the SDK's real Runner (offline)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner
from agents.memory import Session, SessionSettings, SQLiteSession
from agents.testing import ScriptedModel, assistant_message
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from turnkit import (
    Message,
    TurnRunner,
    TurnRunnerConfig,
    UsageError,
)
from turnkit import ScriptedModel as TurnkitModel
from turnkit._aio import run_sync
from turnkit.batteries.vector import HashEncoder, create_vector_message_store, create_vector_store
from turnkit.integrations.openai_agents import TurnkitSession

pytestmark = pytest.mark.anyio

OFFLINE = RunConfig(tracing_disabled=True)
STORE = create_vector_store(uri="memory://", encoder=HashEncoder(64), auto_optimize=None)
HISTORY = create_vector_message_store(store=STORE, collection="sessions")
_ids = itertools.count()

texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
items = st.one_of(
    st.builds(lambda t: {"role": "user", "content": t}, texts),
    st.builds(
        lambda t, n: {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": t, "annotations": [], "logprobs": []}],
        },
        texts,
        st.integers(0, 9),
    ),
    st.builds(
        lambda n, a: {"type": "function_call", "call_id": f"c{n}", "name": "lookup", "arguments": a},
        st.integers(0, 9),
        texts,
    ),
    st.builds(
        lambda n, o: {"type": "function_call_output", "call_id": f"c{n}", "output": o},
        st.integers(0, 9),
        texts,
    ),
    st.builds(lambda: {"type": "reasoning", "id": "rs_1", "summary": []}),
)
limits = st.sampled_from([None, -1, 0, 1, 2, 5])
operations = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.lists(items, max_size=3)),
        st.tuples(st.just("get"), limits),
        st.tuples(st.just("pop"), st.none()),
        st.tuples(st.just("clear"), st.none()),
    ),
    max_size=8,
)


async def _apply(session: Session, op: str, arg: Any) -> Any:
    if op == "add":
        return await session.add_items(list(arg))
    if op == "get":
        return await session.get_items(arg) if arg is not None else await session.get_items()
    if op == "pop":
        return await session.pop_item()
    return await session.clear_session()


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    phases=(Phase.explicit, Phase.reuse, Phase.generate, Phase.target),  # shrinking a real store is slow
)
@given(ops=operations, settings_limit=st.sampled_from([None, 2]))
def test_answers_as_sqlite_session_does(ops: list[tuple[str, Any]], settings_limit: int | None) -> None:
    session_settings = SessionSettings(limit=settings_limit)
    name = f"s{next(_ids)}"
    ours = TurnkitSession(name, HISTORY, session_settings=session_settings)
    reference = SQLiteSession(name, session_settings=session_settings)
    # A second session in the same collection: never touched by the first one's operations.
    neighbour = TurnkitSession(f"{name}-other", HISTORY)

    async def run() -> None:
        await neighbour.add_items([{"role": "user", "content": "neighbour"}])
        for op, arg in ops:
            assert await _apply(ours, op, arg) == await _apply(reference, op, arg), (op, arg)
        assert await ours.get_items(-1) == await reference.get_items(-1)
        assert await neighbour.get_items() == [{"role": "user", "content": "neighbour"}]

    try:
        run_sync(run())
    finally:
        reference.close()


def test_is_an_agents_sdk_session() -> None:
    session = TurnkitSession("s", HISTORY)
    assert isinstance(session, Session) and session.session_settings is None
    with pytest.raises(UsageError) as exc_info:
        TurnkitSession("", HISTORY)
    assert exc_info.value.code == "E_INVALID_TURN_CONTEXT"
    with pytest.raises(UsageError) as exc_info:
        run_sync(session.add_items(["not an item"]))  # type: ignore[list-item]
    assert exc_info.value.code == "E_INVALID_MESSAGE"


async def test_the_runner_remembers_across_turns_and_restarts(tmp_path: Any) -> None:
    db = str(tmp_path / "db")
    history = create_vector_message_store(
        store=create_vector_store(uri=db, encoder=HashEncoder(64)), collection="chat"
    )
    model = ScriptedModel(
        [[assistant_message("Nice to meet you, Ada.")], [assistant_message("You are Ada.")]]
    )
    agent = Agent(name="assistant", instructions="Be brief.", model=model)
    first = await Runner.run(
        agent, "My name is Ada.", session=TurnkitSession("u1", history), run_config=OFFLINE
    )
    assert first.final_output == "Nice to meet you, Ada."

    # A new process: a new store object and session over the same database.
    again = create_vector_message_store(
        store=create_vector_store(uri=db, encoder=HashEncoder(64)), collection="chat"
    )
    second = await Runner.run(
        agent, "What is my name?", session=TurnkitSession("u1", again), run_config=OFFLINE
    )
    assert second.final_output == "You are Ada."
    seen = model.calls[1].input
    assert isinstance(seen, list)
    assert seen[0] == {"role": "user", "content": "My name is Ada."}
    assert seen[1]["role"] == "assistant" and seen[1]["content"][0]["text"] == "Nice to meet you, Ada."
    assert seen[-1] == {"role": "user", "content": "What is my name?"}

    # The same conversation, read by a TurnRunner over the same history.
    runner = TurnRunner(TurnRunnerConfig(model=TurnkitModel(["Ada."]), **again))
    result = await runner.run("Say my name.", conversation_id="u1")
    assert [m.content for m in result.prompt[1:]] == [
        "My name is Ada.",
        "Nice to meet you, Ada.",
        "What is my name?",
        "You are Ada.",
        "Say my name.",
    ]
    items = await TurnkitSession("u1", again).get_items(2)
    assert items == [{"role": "user", "content": "Say my name."}, {"role": "assistant", "content": "Ada."}]
    assert isinstance((await again.messages("u1"))[0], Message)
