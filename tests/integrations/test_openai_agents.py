"""The OpenAI Agents SDK adapter, run by the SDK's Runner with a minimal scripted Model (offline)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, FunctionTool, Model, ModelResponse, RunConfig, Runner, Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

import turnkit.integrations.openai_agents as adapter
from turnkit.batteries.vector import VectorMatch, VectorStore
from turnkit.integrations.openai_agents import vector_query_function_tool
from turnkit.tools import create_vector_query_tool

from .conftest import QUESTION, TENANTS, rendered_ids

OFFLINE = RunConfig(tracing_disabled=True)


class ScriptedModel(Model):
    """Sends the given tool calls one per turn, then answers; records everything it was sent."""

    def __init__(self, *calls: dict[str, Any]) -> None:
        self.calls = list(calls)
        self.seen: list[str] = []

    async def get_response(
        self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, *rest: Any, **kw: Any
    ) -> ModelResponse:
        schemas = [t.params_json_schema for t in tools if isinstance(t, FunctionTool)]
        self.seen.append(json.dumps([system_instructions, input, schemas], default=str))
        if self.calls:
            call = ResponseFunctionToolCall(
                arguments=json.dumps(self.calls.pop(0)),
                call_id=f"c{len(self.seen)}",
                name=tools[0].name,
                type="function_call",
            )
            return ModelResponse(output=[call], usage=Usage(), response_id=None)
        text = ResponseOutputText(text="done", type="output_text", annotations=[])
        message = ResponseOutputMessage(
            id="m", content=[text], role="assistant", status="completed", type="message"
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


@dataclass
class Tenant:
    id: str


def _outputs(result: Any) -> list[str]:
    return [str(item.output) for item in result.new_items if item.type == "tool_call_output_item"]


def test_all_lists_the_public_names() -> None:
    assert adapter.__all__ == ["TurnkitSession", "vector_query_function_tool"]


@pytest.mark.anyio
async def test_guard_from_run_context_never_reaches_the_model(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(
        store=shared_store, collection="kb", enable_filter=True, filter_fields="any"
    )
    kb = vector_query_function_tool(tool, trust_tier="third-party", guard=lambda t: {"tenant": t.id})
    model = ScriptedModel(
        {"query_text": "refund policy", "filter": {"$or": [{"tenant": TENANTS[1]}, {"kind": "faq"}]}}
    )
    agent = Agent(name="support", instructions="Answer from the records.", model=model, tools=[kb])
    result = await Runner.run(agent, "refund policy?", context=Tenant(TENANTS[0]), run_config=OFFLINE)
    assert result.final_output == "done"
    (output,) = _outputs(result)
    assert 'id="a1"' in output and 'id="b1"' not in output and '<untrusted_content nonce="' in output
    # Instructions, schemas, its own call and the tool output: the run's guard value is in none of them.
    assert len(model.seen) == 2 and TENANTS[0] not in "".join(model.seen)


@pytest.mark.anyio
async def test_errors_reach_the_model_with_the_hint(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb", enable_filter=True)
    kb = vector_query_function_tool(tool, trust_tier="first-party", guard=lambda t: {"tenant": t.id})
    model = ScriptedModel(
        {"query_text": "refund", "filter": {"colour": "red"}},
        {"query_text": "refund", "filter": {"kind": "faq"}},
    )
    agent = Agent(name="support", model=model, tools=[kb])
    result = await Runner.run(agent, "refund?", context=Tenant(TENANTS[0]), run_config=OFFLINE)
    first, second = _outputs(result)
    assert first.startswith("E_VECTOR_STORE_UNKNOWN_FIELD") and "Filter on these keys only: kind" in first
    assert 'id="a1"' in second and "<retrieved_corpus>" in second
    assert TENANTS[0] not in "".join(model.seen)


def test_sync_runner(shared_store: VectorStore) -> None:
    tool = create_vector_query_tool(store=shared_store, collection="kb")
    kb = vector_query_function_tool(tool, trust_tier="first-party")
    agent = Agent(name="support", model=ScriptedModel({"query_text": "shipping", "top_k": 1}), tools=[kb])
    result = Runner.run_sync(agent, "where do orders ship from?", run_config=OFFLINE)
    assert 'id="a2"' in _outputs(result)[0]


def test_with_no_options_the_tool_gives_the_default_retrieval(
    copies_store: VectorStore, default_hits: list[VectorMatch]
) -> None:
    kb = vector_query_function_tool(
        create_vector_query_tool(store=copies_store, collection="docs"), trust_tier="first-party"
    )
    agent = Agent(name="docs", model=ScriptedModel({"query_text": QUESTION}), tools=[kb])
    result = Runner.run_sync(agent, QUESTION, run_config=OFFLINE)
    assert rendered_ids(_outputs(result)[0]) == [m.id for m in default_hits]
