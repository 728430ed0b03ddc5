"""OpenAI Agents SDK adapter: the vector query tool as a ``FunctionTool``.

Needs ``turnkit[openai-agents]`` (``openai-agents``). See docs/integrations/openai-agents.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from agents import FunctionTool
from agents.tool_context import ToolContext

from ..tools import VectorQueryTool
from ._common import GuardFilter, TierRule, ToolBridge

__all__ = ["vector_query_function_tool"]

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
    """An Agents SDK ``FunctionTool`` over a turnkit vector query tool.

    Args:
        tool: From `turnkit.tools.create_vector_query_tool`.
        trust_tier: The tier of every result, or a function of one
            `VectorQuerySource`; results are rendered by `turnkit.render_prompt`.
        guard: ``fn(context) -> guard``, where ``context`` is the run's context
            object (``Runner.run(..., context=...)``); read on every call,
            ANDed with every query, never shown to the model.
        request_context: ``fn(context) -> mapping`` of other request-context values.
        hide_metadata_keys: Metadata keys never returned besides the guard's.
        name: The tool name; default ``tool.name``.

    Returns:
        A ``FunctionTool`` (non-strict schema: ``top_k`` and ``filter`` are
        optional). Its output is the rendered records; an error is returned as
        the text ``CODE: message hint``, which the SDK hands to the model like
        any tool output, so the model can correct its call.
    """
    bridge: ToolBridge[ContextT] = ToolBridge(
        tool,
        trust_tier=trust_tier,
        guard=guard,
        request_context=request_context,
        hide_metadata_keys=hide_metadata_keys,
    )

    async def invoke(ctx: ToolContext[ContextT], arguments: str) -> str:
        return (await bridge.call(arguments, ctx.context)).text

    return FunctionTool(
        name=name or tool.name,
        description=tool.description,
        params_json_schema=tool.input_schema,
        on_invoke_tool=invoke,
        strict_json_schema=False,
    )
