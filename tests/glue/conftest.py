"""Fixtures for the retrieval-glue tests: real LanceDB stores and a runner to get contexts from."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from turnkit import InMemoryMessageStore, Message, ScriptedModel, TurnContext, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import (
    HashEncoder,
    VectorRetrievableCallbacks,
    VectorStore,
    create_vector_store,
)

_counter = itertools.count()


@pytest.fixture
def vs(tmp_path) -> VectorStore:
    return create_vector_store(uri=str(tmp_path / "db"), encoder=HashEncoder(256), auto_optimize=None)


@pytest.fixture
def collection() -> str:
    return f"glue{next(_counter)}"


class Harness:
    """A runner over given callbacks, with a history we can write to directly."""

    def __init__(self, callbacks: VectorRetrievableCallbacks, replies: Any = ("ok",)) -> None:
        self.history = InMemoryMessageStore()
        self.runner = TurnRunner(
            TurnRunnerConfig(
                model=ScriptedModel(list(replies)),
                fetch_messages=self.history.fetch_messages,
                store_message=self.history.store_message,
                **callbacks,
            )
        )

    async def context(self, *messages: tuple[str, str]) -> TurnContext:
        ctx = self.runner.new_context()
        for role, content in messages:
            await self.history.store_message(ctx, Message(role=role, content=content))  # type: ignore[arg-type]
        return ctx


@pytest.fixture
def harness() -> Callable[..., Harness]:
    return Harness
