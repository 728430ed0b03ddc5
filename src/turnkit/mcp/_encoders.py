"""Choosing the query encoder of a served store: by spec string, or from what the collections record."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..batteries.vector import Encoder, HashEncoder, VectorStore, WordLlamaEncoder
from ._errors import InvalidMCPServerConfigError

__all__ = ["encoder_from_name", "encoder_from_spec", "recorded_encoder"]

_SPEC = re.compile(r"^(hash|wordllama)(?::(\d+))?$")
_RECORDED = (
    (re.compile(r"^turnkit-hash-(\d+)$"), "hash"),
    (re.compile(r"^wordllama-l2_supercat-(\d+)$"), "wordllama"),
)


def _build(family: str, dimension: int | None) -> Encoder:
    if family == "hash":
        return HashEncoder(dimension or 64)
    try:
        return WordLlamaEncoder(dimension or 256)
    except ValueError as exc:
        raise InvalidMCPServerConfigError(f"encoder: {exc}.", option="encoder") from None


def encoder_from_spec(spec: str) -> Encoder:
    """Build an encoder from ``"hash"``, ``"hash:64"``, ``"wordllama"`` or ``"wordllama:128"``."""
    match = _SPEC.match(spec.strip().lower()) if isinstance(spec, str) else None
    if match is None:
        raise InvalidMCPServerConfigError(
            f"Unknown encoder {spec!r}.",
            hint="Use 'hash', 'hash:<dimension>', 'wordllama' or 'wordllama:<64|128|256>'.",
            option="encoder",
        )
    return _build(match.group(1), int(match.group(2)) if match.group(2) else None)


def encoder_from_name(name: str) -> Encoder | None:
    """The encoder whose ``name`` a collection recorded, when turnkit knows how to build it."""
    for pattern, family in _RECORDED:
        match = pattern.match(name)
        if match is not None:
            return _build(family, int(match.group(1)))
    return None


async def recorded_encoder(store: VectorStore, collections: Sequence[str]) -> Encoder | None:
    """The one encoder every collection was built with, or ``None`` when none recorded one.

    Raises:
        InvalidMCPServerConfigError: The collections disagree, or the name is unknown.
    """
    names = set()
    for name in collections:
        info = await store.collection_info(name)
        if info.encoder:
            names.add(info.encoder)
    if not names:
        return None
    if len(names) > 1:
        raise InvalidMCPServerConfigError(
            f"The collections were built with different encoders: {sorted(names)}.",
            hint="Serve the collections of one encoder at a time (collections=[...]).",
            option="encoder",
        )
    (recorded,) = names
    encoder = encoder_from_name(recorded)
    if encoder is None:
        raise InvalidMCPServerConfigError(
            f"The collections were built with encoder {recorded!r}, which turnkit cannot build by name.",
            hint="Pass the store itself: create_mcp_server(store=create_vector_store(..., encoder=...)).",
            option="encoder",
        )
    return encoder
