"""The vector query tool as a LangChain ``StructuredTool``, sync and async."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import StructuredTool, ToolException

from ...tools import VectorQueryTool
from .._common import GuardFilter, TierRule, ToolBridge, ToolOutcome

__all__ = ["vector_query_structured_tool"]

Configurable = Mapping[str, Any]


def _configurable(config: RunnableConfig | None) -> Configurable:
    return (config or {}).get("configurable") or {}


def _reply(outcome: ToolOutcome) -> tuple[str, dict[str, Any]]:
    if outcome.error is not None:
        raise ToolException(outcome.text)
    return outcome.text, outcome.result.to_dict()


def vector_query_structured_tool(
    tool: VectorQueryTool,
    *,
    trust_tier: TierRule,
    guard: Callable[[Configurable], GuardFilter | None] | None = None,
    request_context: Callable[[Configurable], Mapping[str, Any]] | None = None,
    hide_metadata_keys: Iterable[str] = (),
    name: str | None = None,
) -> StructuredTool:
    """A LangChain ``StructuredTool`` over a turnkit vector query tool, sync and async.

    Its content is the rendered records, its artifact the result as a dict (without the guard's
    keys); an error is a ``ToolException`` whose text goes back to the model.

    Args:
        tool: From `turnkit.tools.create_vector_query_tool`.
        trust_tier: The tier of every result, or a function of one `VectorQuerySource`.
        guard: ``fn(configurable) -> guard``, read from the run's ``config["configurable"]`` on every call.
        request_context: ``fn(configurable) -> mapping`` of other request-context values.
        hide_metadata_keys: Metadata keys kept out of the artifact besides the guard's.
        name: The tool name; default ``tool.name``.
    """
    bridge: ToolBridge[Configurable] = ToolBridge(
        tool, trust_tier, guard, request_context, hide_metadata_keys
    )

    def search(config: RunnableConfig, **arguments: Any) -> tuple[str, dict[str, Any]]:
        return _reply(bridge.call_sync(arguments, _configurable(config)))

    async def asearch(config: RunnableConfig, **arguments: Any) -> tuple[str, dict[str, Any]]:
        return _reply(await bridge.call(arguments, _configurable(config)))

    return StructuredTool.from_function(
        func=search,
        coroutine=asearch,
        name=name or tool.name,
        description=tool.description,
        args_schema=tool.input_schema,
        response_format="content_and_artifact",
        handle_tool_error=True,
    )
