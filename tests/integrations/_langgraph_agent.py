"""A LangGraph agent whose long-term memory is a TurnkitStore: ``python _langgraph_agent.py URI save|recall``.

``save`` runs a graph whose model (LangChain's GenericFakeChatModel) states a
fact about the user, which the node stores; ``recall`` runs another graph, in
another process, whose node searches the store for the question and puts the
memories in front of the model. Run as a script, it prints the final state as JSON.
"""

from __future__ import annotations

import json
import sys
import uuid
from dataclasses import dataclass
from typing import TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.integrations.langgraph import TurnkitStore


@dataclass
class Context:
    user_id: str


class State(TypedDict, total=False):
    question: str
    memories: list[str]
    answer: str


def remember(state: State, runtime: Runtime[Context]) -> State:
    model = GenericFakeChatModel(messages=iter([AIMessage("The user drinks green tea every morning.")]))
    fact = str(model.invoke([HumanMessage(state["question"])]).content)
    assert runtime.store is not None
    runtime.store.put((runtime.context.user_id, "memories"), str(uuid.uuid4()), {"text": fact})
    return {"answer": fact}


def recall(state: State, runtime: Runtime[Context]) -> State:
    assert runtime.store is not None
    found = runtime.store.search((runtime.context.user_id, "memories"), query=state["question"], limit=3)
    memories = [str(item.value["text"]) for item in found]
    model = GenericFakeChatModel(messages=iter([AIMessage("You drink green tea.")]))
    reply = model.invoke(
        [SystemMessage("Memories:\n" + "\n".join(memories)), HumanMessage(state["question"])]
    )
    return {"memories": memories, "answer": str(reply.content)}


def run(uri: str, mode: str) -> State:
    store = TurnkitStore(
        create_vector_store(uri=uri, encoder=HashEncoder(64)), collection="memories", tenant_depth=1
    )
    graph = StateGraph(State, context_schema=Context)
    graph.add_node("agent", remember if mode == "save" else recall)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    app = graph.compile(store=store)
    question = "I like green tea in the morning" if mode == "save" else "what do I drink in the morning?"
    state: State = app.invoke({"question": question}, context=Context(user_id="user-1"))  # type: ignore[assignment]
    return state


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1], sys.argv[2])))
