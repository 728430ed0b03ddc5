"""OpenAI Agents SDK adapter: the vector query tool as a ``FunctionTool``, and a ``Session``.

Needs ``turnkit[openai-agents]`` (``openai-agents``). See docs/integrations/openai-agents.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any, TypeVar, cast

from agents import FunctionTool
from agents.items import TResponseInputItem
from agents.memory import SessionSettings
from agents.tool_context import ToolContext

from .._checks import expect
from .._errors import UsageError
from .._messages import Message, MessageRole
from ..batteries.vector import VectorMessageStore
from ..tools import VectorQueryTool
from ._common import GuardFilter, TierRule, ToolBridge

__all__ = ["TurnkitSession", "vector_query_function_tool"]

ContextT = TypeVar("ContextT")


def vector_query_function_tool(
    tool: VectorQueryTool,
    *,
    trust_tier: TierRule,
    guard: Callable[[ContextT], GuardFilter | None] | None = None,
    request_context: Callable[[ContextT], Mapping[str, Any]] | None = None,
    hide_metadata_keys: Iterable[str] = (),
    name: str | None = None,
) -> FunctionTool:
    """An Agents SDK ``FunctionTool`` over a turnkit vector query tool (non-strict schema).

    Its output is the rendered records; an error is the text ``CODE: message hint``, handed to the
    model like any tool output so it can correct its call.

    Args:
        tool: From `turnkit.tools.create_vector_query_tool`.
        trust_tier: The tier of every result, or a function of one `VectorQuerySource`.
        guard: ``fn(context) -> guard`` of the run's context object, read on every call.
        request_context: ``fn(context) -> mapping`` of other request-context values.
        hide_metadata_keys: Metadata keys never returned besides the guard's.
        name: The tool name; default ``tool.name``.
    """
    bridge = ToolBridge(tool, trust_tier, guard, request_context, hide_metadata_keys)

    async def invoke(ctx: ToolContext[ContextT], arguments: str) -> str:
        return (await bridge.call(arguments, ctx.context)).text

    return FunctionTool(
        name=name or tool.name,
        description=tool.description,
        params_json_schema=tool.input_schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )


_ITEM_KEY = "openai_item"  # the Message metadata key holding the item, stored whole


class TurnkitSession:
    """An Agents SDK ``Session`` over a turnkit `VectorMessageStore`: history that outlives the process.

    It behaves as the SDK's ``SQLiteSession`` (see docs/integrations/openai-agents.md); items are
    stored whole, each as a `Message` whose text is encoded for recall, so a `TurnRunner` over the
    same history reads the conversation too.

    Args:
        session_id: The conversation to keep (the history's ``conversation_id``).
        history: From `turnkit.batteries.vector.create_vector_message_store` (or its ``for_tenant(...)``).
        session_settings: The SDK's ``SessionSettings`` (its ``limit``).

    Raises:
        UsageError: ``E_INVALID_TURN_CONTEXT``: ``session_id`` is not a non-empty string.
    """

    def __init__(
        self,
        session_id: str,
        history: VectorMessageStore,
        *,
        session_settings: SessionSettings | None = None,
    ) -> None:
        error = partial(UsageError, code="E_INVALID_TURN_CONTEXT")
        if not isinstance(session_id, str) or not session_id:
            raise error(f"session_id must be a non-empty string, got {session_id!r}.", field="session_id")
        hint = "Pass what create_vector_message_store(...) returned (or its .for_tenant(...))."
        expect(history, VectorMessageStore, "history", error, hint, field="history")
        self.session_id = session_id
        self.history = history
        self.session_settings = session_settings

    def __repr__(self) -> str:
        return f"TurnkitSession(session_id={self.session_id!r}, collection={self.history.collection!r})"

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The latest ``limit`` items, oldest first (see the class for ``None``, 0 and negatives)."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        if limit is not None and limit < 0:
            limit = None  # as SQLite's LIMIT -1: everything
        messages = await self.history.messages(self.session_id, limit=limit)
        return [_item_of(m) for m in messages]

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Append ``items`` in order, in one commit (nothing for an empty list).

        Raises:
            UsageError: ``E_INVALID_MESSAGE``: an item is not a JSON object.
        """
        if not items:
            return
        await self.history.append(self.session_id, [_message_of(item, i) for i, item in enumerate(items)])

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove and return the newest item (``None`` when the session is empty)."""
        message = await self.history.pop(self.session_id)
        return None if message is None else _item_of(message)

    async def clear_session(self) -> None:
        """Remove every item of this session."""
        await self.history.clear(self.session_id)


def _message_of(item: TResponseInputItem, index: int) -> Message:
    if not isinstance(item, Mapping):
        raise UsageError(
            f"Session item {index} is a {type(item).__name__}; items are JSON objects (dicts).",
            code="E_INVALID_MESSAGE",
            field="items",
        )
    role = item.get("role")
    mapped: MessageRole = (
        "system" if role == "developer" else role if role in ("user", "assistant", "system") else "assistant"
    )
    return Message(role=mapped, content=_text_of(item), metadata={_ITEM_KEY: dict(item)})


def _item_of(message: Message) -> TResponseInputItem:
    item = message.metadata.get(_ITEM_KEY)
    if isinstance(item, dict):
        return cast(TResponseInputItem, item)
    # A message a TurnRunner stored in the same conversation: the SDK's easy input message shape.
    return cast(TResponseInputItem, {"role": message.role, "content": message.content})


def _text_of(item: Mapping[str, Any]) -> str:
    """What recall searches for an item: its text, a call's name and arguments, a tool's output."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [p["text"] for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        if texts:
            return "\n".join(texts)
    kind = item.get("type")
    if kind == "function_call":
        return f"{item.get('name')}({item.get('arguments')})"
    if kind == "function_call_output":
        output = item.get("output")
        return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
    return f"[{kind or 'item'}]"
