"""The vector query tool in an OpenAI-style tool-calling loop, with no network.

The model is scripted: it answers in the chat-completions message format
(`tool_calls` with JSON-text `arguments`), first with a mistake (a filter sent
as a JSON *string*), then, after reading the tool's structured error, with the
corrected call, and finally with an answer that cites the source it read.
Swap `ScriptedToolModel` for a real chat-completions client and nothing else
changes.

Run it: `python examples/tool_calling_loop.py`.
"""

from __future__ import annotations

import json
from typing import Any

from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.tools import VectorQueryTool, create_vector_query_tool

DOCS = [
    {
        "id": "refunds",
        "document": "Refunds are paid to the original card within 5 business days.",
        "metadata": {
            "kind": "faq",
            "source_display_name": "handbook.pdf",
            "page_span": {"first_page": 4, "last_page": 4},
        },
    },
    {
        "id": "shipping",
        "document": "Orders ship from Lyon; delivery takes 2 to 4 days in the EU.",
        "metadata": {"kind": "faq", "source_display_name": "handbook.pdf"},
    },
    {
        "id": "forum",
        "document": "Someone on the forum says refunds take a month.",
        "metadata": {"kind": "forum"},
    },
]


class ScriptedToolModel:
    """Plays the assistant's side of a chat-completions tool loop, deterministically."""

    def __init__(self, tool_name: str) -> None:
        self.tool_name = tool_name
        self.calls = 0

    def _tool_call(self, arguments: dict[str, Any]) -> dict[str, Any]:
        self.calls += 1
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": f"call_{self.calls}",
                    "type": "function",
                    "function": {"name": self.tool_name, "arguments": json.dumps(arguments)},
                }
            ],
        }

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        assert any(t["function"]["name"] == self.tool_name for t in tools)
        last = messages[-1]
        if last["role"] == "user":
            # A common model mistake: the filter as a JSON string.
            return self._tool_call(
                {"query_text": "how long refunds take", "top_k": 3, "filter": '{"kind": "faq"}'}
            )
        result = json.loads(last["content"])
        if result["status"] == "error" and result["error"]["kind"] == "invalid_input":
            return self._tool_call(
                {"query_text": "how long refunds take", "top_k": 3, "filter": {"kind": "faq"}}
            )
        if result["status"] == "ok":
            source = result["sources"][0]
            page = source["page_span"]["first_page"]
            answer = f"{source['document']} (source: {source['source_display_name']}, p. {page})"
            return {"role": "assistant", "content": answer}
        return {"role": "assistant", "content": "I could not find that in the knowledge base."}


def run_loop(
    tool: VectorQueryTool, model: ScriptedToolModel, question: str, max_steps: int = 5
) -> list[dict[str, Any]]:
    """Call the model until it answers, running each tool call it makes."""
    tools = [tool.to_openai_tool()]
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(max_steps):
        reply = model.complete(messages, tools)
        messages.append(reply)
        if not reply.get("tool_calls"):
            return messages
        for call in reply["tool_calls"]:
            # Arguments arrive as JSON text; execute() parses and validates them and never raises.
            result = tool.execute_sync(call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result.to_json()})
    raise RuntimeError("the model did not answer")


def main() -> list[dict[str, Any]]:
    """Build a store, a tool and a loop; print and return the transcript."""
    store = create_vector_store(uri="memory://", encoder=HashEncoder())
    store("handbook").upsert_sync(DOCS)
    tool = create_vector_query_tool(
        store=store,
        collection="handbook",
        id="search_handbook",
        description="Search the company handbook",
        enable_filter=True,
        filter_fields={"kind": "'faq' (vetted answers) or 'forum' (unvetted posts)"},
    )
    messages = run_loop(tool, ScriptedToolModel(tool.name), "How long do refunds take?")
    for message in messages:
        shown = message.get("content") or json.dumps(message["tool_calls"][0]["function"])
        print(f"{message['role']:>9}: {shown}")
    return messages


if __name__ == "__main__":
    main()
