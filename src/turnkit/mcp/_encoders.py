"""Choosing the query encoder of a served store: by spec string, or from what the collections record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..batteries.vector import (
    Encoder,
    VectorStore,
    VectorStoreUsageError,
    build_recorded_encoder,
    encoder_from_spec,
)
from ._errors import config_error

__all__ = ["recorded_encoder", "spec_encoder"]

T = TypeVar("T")


def _as_option(build: Callable[[], T]) -> T:
    """``build()``, the registry's refusal of an encoder name reported as a bad ``encoder=`` option."""
    try:
        return build()
    except VectorStoreUsageError as exc:
        if exc.code != "E_INVALID_VECTOR_STORE_CONFIG":
            raise
        raise config_error(exc.message, option="encoder", hint=exc.hint) from None


def spec_encoder(spec: str) -> Encoder:
    """`encoder_from_spec`, its refusal reported as a bad ``encoder=`` option of the server."""
    return _as_option(lambda: encoder_from_spec(spec))


async def recorded_encoder(store: VectorStore, collections: Sequence[str]) -> Encoder | None:
    """The one encoder every collection recorded (remote families too), or ``None`` when none did.

    Raises:
        MCPUsageError: ``E_INVALID_MCP_SERVER_CONFIG``: The collections disagree, or the name is unknown.
    """
    names = set()
    dimension: int | None = None
    for name in collections:
        info = await store.collection_info(name)
        if info.encoder:
            names.add(info.encoder)
            dimension = info.dimension
    if not names:
        return None
    if len(names) > 1:
        raise config_error(
            f"The collections were built with different encoders: {sorted(names)}.",
            option="encoder",
            hint="Serve the collections of one encoder at a time (collections=[...]).",
        )
    (recorded,) = names
    encoder = _as_option(lambda: build_recorded_encoder(recorded, dimension, remote=True))
    if encoder is None:
        raise config_error(
            f"The collections were built with encoder {recorded!r}, which turnkit cannot build by name.",
            option="encoder",
            hint="Pass the store itself: create_mcp_server(store=create_vector_store(..., encoder=...)).",
        )
    return encoder
