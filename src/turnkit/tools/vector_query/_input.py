"""The vector query tool's input: one pydantic model gives its JSON Schema and its validation."""

from __future__ import annotations

import json
import math
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from ...batteries.vector import MONGO_OPERATORS
from .._config import ToolLimits
from .._errors import input_error

__all__ = ["VectorQueryInput", "filter_description", "input_schema", "parse_input"]

_VALUES_SEEN: Final = "; values seen:"
_QUERY_TEXT = "What to search for: the user's question or topic in plain words, not wrapped in quotes."


def _integral(value: Any) -> Any:
    # JSON encoders may send 5 as 5.0; a fractional or non-number top_k stays an error.
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


class VectorQueryInput(BaseModel):
    """The arguments a model sends to the vector query tool.

    Attributes:
        query_text: What to search for (surrounding whitespace is dropped).
        top_k: How many chunks to return; the tool clamps it to ``[1, max_top_k]``.
        filter: A Mongo-style metadata filter (only when filtering is on).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    query_text: str = Field(description=_QUERY_TEXT, strict=True)
    top_k: Annotated[StrictInt | None, BeforeValidator(_integral)] = None
    filter: Any = None

    @field_validator("query_text")
    @classmethod
    def _query_text(cls, value: str, info: ValidationInfo) -> str:
        value = value.strip()
        if not value:
            raise ValueError("empty")
        limit = (info.context or {}).get("max_query_chars")
        if limit is not None and len(value) > limit:
            raise ValueError(f"{len(value)} characters; at most {limit} are accepted")
        return value


# One message and hint per argument: what the model reads when its call is refused.
_PROBLEMS: Final[dict[str, tuple[str, str]]] = {
    "query_text": (
        "`query_text` must be a non-empty string of at most {max_query_chars} characters",
        "Put the user's question or topic in query_text, in a few words, not a whole document.",
    ),
    "top_k": ("`top_k` must be an integer", "Use a whole number from 1 to {max_top_k}, or leave it out."),
}


def parse_input(
    raw: Mapping[str, Any] | str | bytes, *, filtering: bool, limits: ToolLimits
) -> VectorQueryInput:
    """Validate a model's arguments (a dict, or the JSON text of one) into a `VectorQueryInput`.

    Raises:
        ToolUsageError: ``E_TOOL_INVALID_INPUT``: The arguments are not a JSON object or do not fit the model.
    """
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw or "{}")
        except (ValueError, RecursionError):
            raise input_error(
                "The tool arguments are not valid JSON.",
                hint='Send a JSON object such as {"query_text": "refund policy", "top_k": 5}.',
            ) from None
    if not isinstance(raw, Mapping):
        raise input_error(
            f"The tool arguments must be a JSON object, not {type(raw).__name__}.",
            hint='Send {"query_text": "..."}.',
        )
    try:
        return VectorQueryInput.model_validate(dict(raw), context={"max_query_chars": limits.max_query_chars})
    except ValidationError as exc:
        errors = exc.errors()
    allowed = "query_text, top_k" + (", filter" if filtering else "")
    unknown = sorted(str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden" and e["loc"])
    if unknown:
        raise input_error(f"Unknown arguments {unknown}.", hint=f"The arguments are {allowed}.")
    field = str(errors[0]["loc"][0]) if errors[0]["loc"] else "query_text"
    message, hint = _PROBLEMS.get(
        field, ("The arguments do not fit the tool", f"The arguments are {allowed}.")
    )
    got = errors[0].get("input")
    shown = repr(got) if not isinstance(got, str) or len(got) <= 40 else f"{len(got)} characters"
    raise input_error(
        f"{message.format_map(limits.model_dump())}; got {shown}.",
        hint=hint.format_map(limits.model_dump()),
        field=field,
    )


def filter_description(fields: Mapping[str, str] | Literal["any"] | None) -> str:
    """The ``filter`` argument's description for these keys (``None``: checked, list not known here)."""
    if fields == "any":
        keys = "Any metadata key (letters, digits, '_' and '-'; nested keys joined with '.')."
    elif fields is None:
        keys = (
            "Only the collection's own metadata keys are accepted; a filter on another key returns an "
            "error that lists the keys you may use."
        )
    elif not fields:
        keys = "No metadata keys are available to filter on."
    else:
        lines = [f"- {k}: {d}" if d else f"- {k}" for k, d in sorted(fields.items())]
        keys = "Keys you may filter on:\n" + "\n".join(lines)
    return (
        "Optional metadata filter, a JSON object (not a string) in MongoDB style. "
        "Keys of one object are ANDed; a value is a literal (equality), a list (any of) or an "
        f"object of operators. Operators: {' '.join(MONGO_OPERATORS)}. "
        'Example: {"kind": "faq", "year": {"$gte": 2020}}. ' + keys
    )


def input_schema(
    fields: Mapping[str, str] | Literal["any"] | None,
    *,
    filtering: bool,
    limits: ToolLimits,
    default_top_k: int,
) -> dict[str, Any]:
    """`VectorQueryInput`'s JSON Schema with this tool's limits (``filter`` only when filtering is on)."""
    max_top_k = limits.max_top_k
    schema = VectorQueryInput.model_json_schema()
    props = schema["properties"]
    props["query_text"] = {"type": "string", "minLength": 1, "maxLength": limits.max_query_chars} | {
        "description": props["query_text"]["description"]
    }
    # top_k is clamped rather than refused, so the schema shows the range the tool will use.
    props["top_k"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": max_top_k,
        "default": default_top_k,
        "description": f"How many chunks to return (default {default_top_k}, at most {max_top_k}). "
        "More gives broader context, fewer gives precision.",
    }
    if filtering:
        props["filter"] = {"type": "object", "description": filter_description(fields)}
    else:
        del props["filter"]
    return {"type": "object", "properties": props, "required": ["query_text"], "additionalProperties": False}


def without_values(fields: Mapping[str, str]) -> dict[str, str]:
    """The keys' descriptions without the values seen (for a schema shown to every tenant)."""
    return {key: text.split(_VALUES_SEEN, 1)[0] for key, text in fields.items()}


class FieldsCache:
    """Automatic filter keys per (store, collection, guard), re-read after ``ttl`` seconds (LRU-bounded)."""

    def __init__(self, ttl: float, max_entries: int = 256) -> None:
        self.ttl = ttl
        self._max = max_entries
        self._entries: OrderedDict[tuple[Any, ...], tuple[float, dict[str, str]]] = OrderedDict()

    def get(self, key: tuple[Any, ...], *, max_age: float) -> dict[str, str] | None:
        """The cached keys, when younger than ``max_age`` seconds."""
        entry = self._entries.get(key)
        if entry is None or time.monotonic() - entry[0] > max_age:
            return None
        self._entries.move_to_end(key)
        return entry[1]

    def put(self, key: tuple[Any, ...], fields: dict[str, str]) -> None:
        """Cache ``fields`` for ``key`` (the oldest entry goes when full)."""
        self._entries[key] = (time.monotonic(), fields)
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
