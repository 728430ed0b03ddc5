"""YAML front matter at the top of a Markdown file: read as metadata, never indexed as text.

The block is parsed with ``yaml.safe_load`` (no Python objects), and the result
is turned into JSON values under a node budget: YAML aliases let a few hundred
bytes describe a structure of billions of nodes once expanded, which the
store's JSON would otherwise spell out.
"""

from __future__ import annotations

import importlib
import logging
import math
import re
from datetime import date, datetime
from typing import Any

from ._errors import TooBig

__all__ = ["MAX_FRONT_MATTER_CHARS", "split_front_matter"]

log = logging.getLogger("turnkit.ingest")

MAX_FRONT_MATTER_CHARS = 64 * 1024
_MAX_NODES = 10_000
_MAX_DEPTH = 16
_INT64 = 2**63
_CLOSE = re.compile(r"^(?:---|\.\.\.)\r*$", re.MULTILINE)  # the line that ends the block


def _json_value(value: Any, budget: list[int], depth: int) -> Any:
    budget[0] -= 1
    if budget[0] < 0 or depth > _MAX_DEPTH:
        raise TooBig
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if -_INT64 <= value < _INT64 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _json_value(v, budget, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_json_value(v, budget, depth + 1) for v in value]
    return str(value)  # bytes (!!binary) and the like


def split_front_matter(text: str, *, path: str = "<text>") -> tuple[dict[str, Any], str]:
    """``(metadata, body)``: a leading ``---`` YAML mapping as metadata, and the text after it.

    Text without front matter, or whose block is not a YAML mapping (a
    thematic break, malformed YAML, a list), is returned whole with ``{}``:
    it stays text, as a Markdown renderer would show it.
    """
    first_end = text.find("\n")
    if first_end == -1 or text[:first_end].rstrip("\r") != "---":
        return {}, text
    close = _CLOSE.search(text, first_end + 1)
    if close is None or close.start() > MAX_FRONT_MATTER_CHARS:
        return {}, text
    # Imported here (most files have no front matter); PyYAML ships no type information.
    yaml: Any = importlib.import_module("yaml")
    try:
        data = yaml.safe_load(text[first_end + 1 : close.start()])
        if isinstance(data, dict):
            return _json_value(data, [_MAX_NODES], 0), text[close.end() + 1 :]
    except yaml.YAMLError as exc:
        log.warning("%s: front matter is not valid YAML, kept as text: %s", path, exc)
    except TooBig:
        log.warning("%s: front matter is larger than %d values, kept as text", path, _MAX_NODES)
    except RecursionError:
        log.warning("%s: front matter nests too deeply, kept as text", path)
    return {}, text
