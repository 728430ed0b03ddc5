"""What the ADK tests share: a scripted model written against ADK's ``BaseLlm``, sessions and a runner."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.events import Event
from google.adk.memory import BaseMemoryService
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.genai import types

Reply = Callable[[LlmRequest], types.Part]


def text_of(content: types.Content | None) -> str:
    return " ".join(p.text for p in (content.parts or []) if p.text) if content is not None else ""


class RecallModel(BaseLlm):
    """Deterministic, no network: answers from what its request holds.

    - A user message ending in "?" with the ``load_memory`` tool offered: call it with the question.
    - A ``load_memory`` result: answer "I remember: " and the memories' text.
    - A ``<PAST_CONVERSATIONS>`` block in the request: "I remember: " and the block.
    - Otherwise: "Noted."
    """

    model: str = "recall-model"
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request)
        yield LlmResponse(content=types.Content(role="model", parts=[self._reply(llm_request)]))

    def _reply(self, request: LlmRequest) -> types.Part:
        last = request.contents[-1]
        for part in last.parts or []:
            if part.function_response is not None and part.function_response.name == "load_memory":
                memories = (part.function_response.response or {})["result"].memories
                return types.Part(text="I remember: " + " | ".join(text_of(m.content) for m in memories))
        question = text_of(last)
        if question.rstrip().endswith("?") and "load_memory" in request.tools_dict:
            return types.Part.from_function_call(name="load_memory", args={"query": question})
        past = [text_of(c) for c in request.contents if "<PAST_CONVERSATIONS>" in text_of(c)]
        return types.Part(text="I remember: " + past[0] if past else "Noted.")


async def run_turn(runner: Runner, user_id: str, session_id: str, text: str) -> list[Event]:
    message = types.Content(role="user", parts=[types.Part(text=text)])
    return [e async for e in runner.run_async(user_id=user_id, session_id=session_id, new_message=message)]


def make_runner(
    memory: BaseMemoryService, *, tools: list[Any], app_name: str = "app", **agent: Any
) -> tuple[Runner, InMemorySessionService, RecallModel]:
    model = RecallModel(requests=[])
    sessions = InMemorySessionService()
    root = LlmAgent(name="helper", model=model, instruction="Be helpful.", tools=tools, **agent)
    runner = Runner(app_name=app_name, agent=root, session_service=sessions, memory_service=memory)
    return runner, sessions, model


def event(
    text: str | None,
    *,
    author: str = "user",
    event_id: str = "",
    timestamp: float = 1_700_000_000.0,
    parts: list[types.Part] | None = None,
) -> Event:
    content = None
    if parts is not None:
        content = types.Content(role="user" if author == "user" else "model", parts=parts)
    elif text is not None:
        content = types.Content(role="user" if author == "user" else "model", parts=[types.Part(text=text)])
    fields: dict[str, Any] = {
        "author": author,
        "content": content,
        "timestamp": timestamp,
        "invocation_id": "i",
    }
    if event_id:
        fields["id"] = event_id
    return Event(**fields)


def session(
    events: list[Event], *, app_name: str = "app", user_id: str = "u1", session_id: str = "s1"
) -> Session:
    return Session(app_name=app_name, user_id=user_id, id=session_id, events=events)
