"""Choosing the query encoder of a served store: by spec string, or from what the collections record."""

from __future__ import annotations

from collections.abc import Sequence

from ..batteries.vector import (
    Encoder,
    VectorStore,
    VectorStoreUsageError,
    build_recorded_encoder,
    encoder_from_spec,
)
from ._errors import MCPUsageError

__all__ = ["encoder_from_name", "recorded_encoder", "spec_encoder"]


def _option_error(exc: VectorStoreUsageError) -> MCPUsageError:
    """The registry's refusal of an encoder name as the server's option error; others go on as they are."""
    if exc.code != "E_INVALID_VECTOR_STORE_CONFIG":
        raise exc
    return MCPUsageError(exc.message, code="E_INVALID_MCP_SERVER_CONFIG", hint=exc.hint, option="encoder")


def spec_encoder(spec: str) -> Encoder:
    """`encoder_from_spec`, its refusal reported as a bad ``encoder=`` option of the server."""
    try:
        return encoder_from_spec(spec)
    except VectorStoreUsageError as exc:
        raise _option_error(exc) from None


def encoder_from_name(name: str, dimension: int | None = None) -> Encoder | None:
    """The encoder whose ``name`` a collection recorded, when turnkit knows how to build it.

    The registry's one rule (`build_recorded_encoder`); a served store may use
    the remote families too, as the command line does.
    """
    try:
        return build_recorded_encoder(name, dimension, remote=True)
    except VectorStoreUsageError as exc:
        raise _option_error(exc) from None


async def recorded_encoder(store: VectorStore, collections: Sequence[str]) -> Encoder | None:
    """The one encoder every collection was built with, or ``None`` when none recorded one.

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
        raise MCPUsageError(
            f"The collections were built with different encoders: {sorted(names)}.",
            code="E_INVALID_MCP_SERVER_CONFIG",
            hint="Serve the collections of one encoder at a time (collections=[...]).",
            option="encoder",
        )
    (recorded,) = names
    encoder = encoder_from_name(recorded, dimension)
    if encoder is None:
        raise MCPUsageError(
            f"The collections were built with encoder {recorded!r}, which turnkit cannot build by name.",
            code="E_INVALID_MCP_SERVER_CONFIG",
            hint="Pass the store itself: create_mcp_server(store=create_vector_store(..., encoder=...)).",
            option="encoder",
        )
    return encoder
