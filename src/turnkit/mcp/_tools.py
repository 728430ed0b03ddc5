"""The MCP tools' handlers and schemas, and the per-principal scope each call runs in."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

from .._errors import RuntimeFailure, TurnkitError
from ..batteries.vector import FilterNode, VectorStore, and_, evaluate
from ..tools import RetrieveContextsResponse, ToolErrorInfo, ToolRuntimeError, VectorQueryTool
from ..tools._errors import input_error
from ..tools._filters import metadata_keys
from ..tools.vector_query._input import filter_description
from ._errors import MCPUsageError

__all__ = ["READ_ONLY_ANNOTATIONS", "WRITE_ANNOTATIONS"]

log = logging.getLogger("turnkit.mcp")

READ_ONLY_ANNOTATIONS: Final = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
"""The seed's annotations for retrieval tools: read-only, idempotent, not destructive, closed world."""

WRITE_ANNOTATIONS: Final = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
"""Write tools replace or remove records: destructive (repeating a call changes nothing more)."""

_MAX_WRITE_BATCH: Final = 100
Handler = Callable[[dict[str, Any]], Awaitable[CallToolResult]]


class _HandlerTool(Tool):
    """An SDK tool with a hand-written JSON schema; arguments go to ``handler`` as received.

    turnkit validates arguments itself so a model gets turnkit's structured
    errors, and so the SDK never re-parses string arguments as JSON.
    """

    handler: Handler = Field(exclude=True)
    published_output_schema: dict[str, Any] | None = Field(default=None, exclude=True)

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.published_output_schema

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        return await self.handler(dict(arguments))


async def _no_arguments() -> None:
    """Placeholder signature; `_HandlerTool.run` never calls it."""


def make_tool(
    name: str,
    *,
    title: str,
    description: str,
    schema: dict[str, Any],
    annotations: ToolAnnotations,
    handler: Handler,
    output_schema: dict[str, Any] | None = None,
) -> _HandlerTool:
    base = Tool.from_function(
        _no_arguments, name=name, title=title, description=description, structured_output=False
    )
    fields = {key: getattr(base, key) for key in Tool.model_fields}
    fields.update(
        parameters=schema,
        annotations=annotations.model_copy(update={"title": title}),
    )
    return _HandlerTool(**fields, handler=handler, published_output_schema=output_schema)


def _result(payload: dict[str, Any], *, is_error: bool = False) -> CallToolResult:
    text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=payload, is_error=is_error
    )


def _error(exc: BaseException) -> CallToolResult:
    if isinstance(exc, TurnkitError) and not isinstance(exc, RuntimeFailure):
        info = ToolErrorInfo.from_error(exc, "invalid_input")
    else:
        code = exc.code if isinstance(exc, TurnkitError) else "E_TOOL_FAILED"
        if isinstance(exc, TurnkitError):
            # Backend, encoder and judge messages can quote SQL (guard values included), keys or
            # endpoints: log them, keep only the stable code.
            log.warning("MCP tool failed: %s", exc, exc_info=exc)
            message = "The knowledge-base operation failed; the details are in the server's log."
        else:
            log.exception("MCP tool raised unexpectedly", exc_info=exc)
            message = "The tool failed unexpectedly."
        hint = ToolRuntimeError.hints["E_TOOL_FAILED"]
        info = ToolErrorInfo(code=code, message=message, hint=hint, kind="failed")
    return _result({"error": info.model_dump()}, is_error=True)


def with_collection(schema: dict[str, Any], collections: Sequence[str]) -> dict[str, Any]:
    if len(collections) < 2:
        return schema
    out = dict(schema)
    out["properties"] = {
        "collection": {
            "type": "string",
            "enum": list(collections),
            "description": "The collection to use.",
        },
        **schema["properties"],
    }
    out["required"] = ["collection", *schema.get("required", [])]
    return out


def _pick_collection(arguments: dict[str, Any], collections: Sequence[str]) -> str:
    if len(collections) == 1:
        if "collection" in arguments and arguments.pop("collection") != collections[0]:
            raise input_error(
                "Unknown collection.",
                hint=f"This server serves {collections[0]!r} only.",
                field="collection",
            )
        return collections[0]
    name = arguments.pop("collection", None)
    if name not in collections:
        raise input_error(
            f"`collection` must be one of {list(collections)}, got {name!r}.", field="collection"
        )
    return str(name)


@dataclass
class Scope:
    """What one principal's calls run with: its guard and its query tools (one per collection)."""

    guard: FilterNode | None
    query_tools: dict[str, VectorQueryTool]
    listed: dict[str, str] | None = None


@dataclass(eq=False, kw_only=True)
class Tools:
    """The handlers, bound to one store; each call runs in the scope of its principal.

    Without ``principal_guards`` every call runs in the one server scope. With
    them, the principal is the authenticated access token's ``client_id`` (set
    by the HTTP transport), each principal's scope is built on first use, and a
    call from a principal not listed is refused.
    """

    store: VectorStore
    collections: list[str]
    make_scope: Callable[[FilterNode | None], Scope]
    guard: FilterNode | None
    principal_guards: Mapping[str, FilterNode | None] | None
    auto_listing: bool
    retrieve: Callable[..., Awaitable[RetrieveContextsResponse]]
    """`retrieve_contexts` with the server's store, collections and options; a call adds its guard."""

    def __post_init__(self) -> None:
        guard = self.guard
        self._scopes: dict[str | None, Scope] = {}
        if self.principal_guards is None:
            self._scopes[None] = self.make_scope(guard)
        else:
            self._combined = {
                name: g if guard is None else (guard if g is None else and_(guard, g))
                for name, g in self.principal_guards.items()
            }

    def scope(self) -> Scope:
        """The scope of the current request.

        Raises:
            MCPUsageError: ``E_MCP_UNKNOWN_PRINCIPAL``: Per-principal guards are configured and the
                request has no principal, or one that is not listed.
        """
        if self.principal_guards is None:
            return self._scopes[None]
        token = get_access_token()
        name = token.client_id if token is not None else None
        if name is None or name not in self._combined:
            raise MCPUsageError(
                "This request is not authenticated as a known principal.", code="E_MCP_UNKNOWN_PRINCIPAL"
            )
        found = self._scopes.get(name)
        if found is None:
            found = self._scopes[name] = self.make_scope(self._combined[name])
        return found

    async def vector_query_schema(self) -> dict[str, Any] | None:
        """The ``vector_query`` schema for the current request's principal (``None``: no principal)."""
        try:
            scope = self.scope()
        except MCPUsageError as exc:
            if exc.code != "E_MCP_UNKNOWN_PRINCIPAL":
                raise
            return None
        schema = await scope.query_tools[self.collections[0]].input_schema_for()
        if self.auto_listing and "filter" in schema["properties"]:
            if scope.listed is None:  # the keys (and values seen) inside the scope's guard, read once
                listed: dict[str, str] = {}
                for n in self.collections:
                    # The query tool's own listing: the same sample and cache its filter check uses.
                    fields = await scope.query_tools[n].filter_fields_for()
                    for key, text in (fields if isinstance(fields, Mapping) else {}).items():
                        listed.setdefault(key, text)
                scope.listed = listed
            schema["properties"]["filter"]["description"] = filter_description(scope.listed)
        return with_collection(schema, self.collections)

    async def vector_query(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            scope = self.scope()
            collection = _pick_collection(arguments, self.collections)
        except TurnkitError as exc:
            return _error(exc)
        result = await scope.query_tools[collection].execute(arguments)
        payload = result.to_dict()
        if scope.guard is not None:
            _hide_guard_keys(payload, scope.guard)
        return _result(payload, is_error=result.status == "error")

    async def retrieve_contexts(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            response = await self.retrieve(arguments, guard=self.scope().guard)
        except Exception as exc:
            return _error(exc)
        # The seed's REST spelling (sourceUri, pageSpan…), so clients written against Vertex read it.
        return _result(response.model_dump(mode="json", exclude_none=True, by_alias=True))

    async def store_documents(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            guard = self.scope().guard
            collection = _pick_collection(arguments, self.collections)
            _check_arguments(arguments, STORE_SCHEMA)
            records = [
                {"id": r["id"], "document": r["text"], "metadata": dict(r.get("metadata") or {})}
                for r in arguments["records"]
            ]
            for record in records:
                if guard is not None and not evaluate(guard, record):
                    raise input_error(
                        f"Record {record['id']!r} is outside what this server may write.",
                        hint="Give it the metadata this server requires.",
                        record_id=record["id"],
                    )
            # Behind a guard only rows it matches are updated, in the same commit; an id held
            # outside it is left alone and answered like any insert, so no tenant learns another's ids.
            result = await self.store(collection).upsert(records, guard=guard)
        except Exception as exc:
            return _error(exc)
        return _result({"inserted": result.inserted, "updated": result.updated})

    async def delete_documents(self, arguments: dict[str, Any]) -> CallToolResult:
        try:
            guard = self.scope().guard
            collection = _pick_collection(arguments, self.collections)
            _check_arguments(arguments, DELETE_SCHEMA)
            query = self.store(collection).where_in("id", arguments["ids"])
            if guard is not None:
                query = query.where(guard)
            deleted = await query.delete()
        except Exception as exc:
            return _error(exc)
        return _result({"deleted": deleted})


def _hide_guard_keys(payload: dict[str, Any], guard: FilterNode) -> None:
    """Drop the metadata keys the guard names from each source: a guard value never reaches the model."""
    paths = [key.split(".") for key in metadata_keys(guard)]
    for source in payload.get("sources") or []:
        for path in paths:
            node = source.get("metadata")
            for key in path[:-1]:
                node = node.get(key) if isinstance(node, dict) else None
            if isinstance(node, dict):
                node.pop(path[-1], None)


def _check_arguments(arguments: dict[str, Any], schema: dict[str, Any]) -> None:
    """Refuse arguments outside the schema the tool publishes (a model may send anything)."""
    from jsonschema import Draft202012Validator  # only the write tools need it: not at import
    from jsonschema.exceptions import best_match

    error = best_match(Draft202012Validator(schema).iter_errors(arguments))
    if error is not None:
        where = "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        raise input_error(f"arguments{where}: {error.message}", field=where.lstrip(".") or None)


STORE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "records": {
            "type": "array",
            "minItems": 1,
            "maxItems": _MAX_WRITE_BATCH,
            "description": "Records to insert or replace by id; the text is embedded by the server.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "minLength": 1},
                    "text": {"type": "string", "minLength": 1, "pattern": "\\S"},
                    "metadata": {"type": ["object", "null"]},
                },
                "required": ["id", "text"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["records"],
    "additionalProperties": False,
}
DELETE_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "ids": {
            "type": "array",
            "minItems": 1,
            "maxItems": 1000,
            "items": {"type": "string", "minLength": 1},
            "description": "Ids of the records to delete.",
        }
    },
    "required": ["ids"],
    "additionalProperties": False,
}
