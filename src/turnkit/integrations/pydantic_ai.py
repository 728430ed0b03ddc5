"""pydantic-ai adapter: the vector query tool as a pydantic-ai tool, and retrieval instructions.

Needs ``turnkit[pydantic-ai]`` (``pydantic-ai-slim``). See docs/integrations/pydantic-ai.md.

- `vector_query_tool`: a ``pydantic_ai.Tool`` whose guard and request context
  come from the run's ``deps``; its schema is built per run (a ``prepare``
  hook) inside that guard (the tool is left out of a run whose schema cannot
  be read); a wrong argument is a ``ModelRetry`` carrying the turnkit hint, a
  host misconfiguration a ``ToolFailed``.
- `retrieval_instructions`: an instructions function that retrieves for the
  user's prompt and renders the records with turnkit's trust-tier fences.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic_ai import ModelRetry, RunContext, Tool
from pydantic_ai.exceptions import ToolFailed
from pydantic_ai.tools import ToolDefinition

from .. import TurnkitError
from ..tools import VectorQueryTool
from ._common import GuardFilter, TierRule, ToolBridge, error_text, raise_error

__all__ = ["retrieval_instructions", "vector_query_tool"]

log = logging.getLogger("turnkit.integrations")

DepsT = TypeVar("DepsT")


def vector_query_tool(
    tool: VectorQueryTool,
    *,
    trust_tier: TierRule,
    guard: Callable[[DepsT], GuardFilter | None] | None = None,
    request_context: Callable[[DepsT], Mapping[str, Any]] | None = None,
    hide_metadata_keys: Iterable[str] = (),
    name: str | None = None,
    max_retries: int | None = None,
) -> Tool[DepsT]:
    """A pydantic-ai tool over a turnkit vector query tool, its schema read per run inside its guard.

    Args:
        tool: From `turnkit.tools.create_vector_query_tool`.
        trust_tier: The tier of every result, or a function of one `VectorQuerySource`.
        guard: ``fn(deps) -> guard`` for this run, ANDed with every query; its keys are left out
            of the schema and of every result.
        request_context: ``fn(deps) -> mapping`` of other request-context values.
        hide_metadata_keys: Metadata keys never shown to the model besides the guard's.
        name: The tool name; default ``tool.name``.
        max_retries: Retries the model gets after a wrong call; default the agent's.
    """
    bridge = ToolBridge(tool, trust_tier, guard, request_context, hide_metadata_keys)

    async def search(ctx: RunContext[DepsT], **arguments: Any) -> str:
        outcome = await bridge.call(arguments, ctx.deps)
        if outcome.error is None:
            return outcome.text
        if outcome.error.kind == "configuration":
            raise ToolFailed(outcome.text)  # retrying the same call cannot help
        raise ModelRetry(outcome.text)

    async def prepare(ctx: RunContext[DepsT], tool_def: ToolDefinition) -> ToolDefinition | None:
        # The schema of this run: filter keys read inside its guard, the guard's keys left out.
        try:
            schema = await bridge.schema(ctx.deps)
        except TurnkitError as exc:
            # No schema for this run (a missing collection, an invalid guard): offer no tool rather
            # than a schema read outside the run's guard. The message may quote the guard: code only.
            log.warning("vector query tool %r left out of this run: %s", tool.id, exc.code)
            return None
        return dataclasses.replace(tool_def, parameters_json_schema=schema)

    made: Tool[DepsT] = Tool.from_schema(
        search,
        name=name or tool.name,
        description=tool.description,
        json_schema=tool.input_schema,
        takes_ctx=True,
    )
    made.prepare = prepare
    made.max_retries = max_retries
    return made


def retrieval_instructions(
    tool: VectorQueryTool,
    *,
    trust_tier: TierRule,
    guard: Callable[[DepsT], GuardFilter | None] | None = None,
    request_context: Callable[[DepsT], Mapping[str, Any]] | None = None,
    top_k: int | None = None,
) -> Callable[[RunContext[DepsT]], Awaitable[str]]:
    """An ``instructions`` function: records retrieved for the prompt, rendered by `turnkit.render_prompt`.

    Args:
        tool: From `turnkit.tools.create_vector_query_tool`.
        trust_tier: As for `vector_query_tool`.
        guard: ``fn(deps) -> guard`` for this run.
        request_context: ``fn(deps) -> mapping`` of other request-context values.
        top_k: Records to retrieve; default the ``top_k`` of the tool's settings.

    Returns:
        ``async fn(ctx) -> str`` for ``Agent(instructions=[...])``; ``""`` when nothing matched.

    Raises:
        ToolRuntimeError: ``E_TOOL_FAILED``: the tool is misconfigured for this run.
    """
    bridge = ToolBridge(tool, trust_tier, guard, request_context)

    limit = int(tool.input_schema["properties"]["query_text"]["maxLength"])

    async def instructions(ctx: RunContext[DepsT]) -> str:
        prompt = ctx.prompt  # a string, or parts: the strings among them are its text
        text = prompt if isinstance(prompt, str) else " ".join(p for p in prompt or () if isinstance(p, str))
        query = text.strip()
        if not query:
            return ""
        arguments = {"query_text": query[:limit]} | ({"top_k": top_k} if top_k is not None else {})
        outcome = await bridge.call(arguments, ctx.deps)
        if outcome.error is not None:
            if outcome.error.kind == "configuration":
                raise_error(outcome.error)
            log.warning("retrieval instructions: %s", error_text(outcome.error))
            return ""
        return "" if outcome.result.status == "no_results" else outcome.text

    return instructions
