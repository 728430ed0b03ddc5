"""Where the command line's settings come from: flags, then environment variables, then defaults.

The vector battery is imported inside the functions, so ``turnkit --help``
stays fast and never loads LanceDB.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import CliUsageError

if TYPE_CHECKING:
    from ..batteries.vector import Encoder, VectorStore
    from ._connect import Connection

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_ENCODER",
    "DEFAULT_URI",
    "DEMO_URI",
    "ENV_COLLECTION",
    "ENV_DEBUG",
    "ENV_ENCODER",
    "ENV_URI",
    "env_flag",
    "flag_or_env",
    "open_store",
    "resolve",
    "store_uri",
]

_unknown_encoder = partial(CliUsageError, code="E_CLI_UNKNOWN_ENCODER")

DEFAULT_URI = ".turnkit/lancedb"
"""The embedded database, relative to the working directory."""
DEFAULT_COLLECTION = "docs"
DEMO_URI = ".turnkit/demo"
"""The demo's own database, kept apart from the default one."""
DEFAULT_ENCODER = "wordllama"
AUTO_ALPHA = "auto"  # --hybrid given bare: the store picks alpha from the query's length

ENV_URI = "TURNKIT_URI"
ENV_COLLECTION = "TURNKIT_COLLECTION"
ENV_ENCODER = "TURNKIT_ENCODER"
ENV_DEBUG = "TURNKIT_DEBUG"


def store_uri(uri: str) -> str:
    """The URI handed to LanceDB: local paths made absolute.

    LanceDB reads some bare relative names as remote URIs (``db`` is taken for
    LanceDB Cloud), so a local path never reaches it relative.
    """
    if "://" in uri:
        return uri
    return str(Path(uri).expanduser().absolute())


def resolve(flag: str | None, env: str, default: str) -> str:
    """The flag if given, else the environment variable if set and non-empty, else ``default``."""
    if flag is not None:
        return flag
    return os.environ.get(env) or default


def flag_or_env(flag: str | None, *names: str) -> str | None:
    """``flag`` if given and not empty, else the first of the environment variables ``names`` that is set."""
    return flag or next((value for name in names if (value := os.environ.get(name))), None)


def env_flag(name: str) -> bool:
    """Whether a boolean environment variable is on (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def open_store(
    connection: Connection, collection: str, *, encoder: str | None, fallback: str | None
) -> VectorStore:
    """A store over ``connection`` whose encoder matches ``collection``.

    The encoder is the one named by ``encoder`` (``--encoder``), else by ``TURNKIT_ENCODER``, else
    the one the collection recorded when it was created, else ``fallback`` (for a collection that
    does not exist yet).

    Raises:
        CliUsageError: ``E_CLI_UNKNOWN_ENCODER``: no encoder could be chosen, or a name is unknown.
        VectorStoreUsageError: ``E_VECTOR_STORE_ENCODER_MISMATCH``: ``encoder`` is not the one the
            collection was built with.
    """
    from ..batteries.vector import VectorStoreUsageError, build_recorded_encoder, encoder_from_spec
    from ..batteries.vector.encoders._registry import ENCODER_SPECS

    source = "--encoder" if encoder else ENV_ENCODER  # which setting named it, for a mismatch's message
    encoder = flag_or_env(encoder, ENV_ENCODER)
    store = connection.store()
    info = store.collection_info_sync(collection) if store.has_collection_sync(collection) else None
    recorded = None if info is None or info.encoder is None else (info.encoder, info.dimension)
    spec: str | None = encoder if encoder is not None else fallback
    dimension: int | None = None
    if encoder is None and recorded is not None:
        spec, dimension = recorded
    if spec is None:
        raise _unknown_encoder(
            f"No encoder for collection {collection!r}.",
            hint="Pass --encoder or set TURNKIT_ENCODER.",
        )
    built: Encoder | None
    try:
        if dimension is None:
            built = encoder_from_spec(spec)
        else:
            # The registry's one rule, as a store opened without an encoder uses; the command
            # line may also build the remote families (an OpenAI endpoint, a hub model).
            built = build_recorded_encoder(spec, dimension, remote=True)
    except VectorStoreUsageError as exc:
        if exc.code != "E_INVALID_VECTOR_STORE_CONFIG":
            raise
        hint = exc.hint if dimension is not None else "Use --encoder " + ", ".join(ENCODER_SPECS) + "."
        raise _unknown_encoder(exc.message, hint=hint, encoder=spec) from None
    if built is None:
        raise _unknown_encoder(
            f"Collection {collection!r} was built with encoder {spec!r}, which the command line cannot load.",
            hint="Query it from Python with the same encoder, or pass --encoder if it is built in.",
            encoder=spec,
        )
    if recorded is not None and encoder is not None and built.name != recorded[0]:
        raise _mismatch(collection, recorded, encoder, built.name, source)
    return connection.store(encoder=built, maintenance=True)


def _mismatch(collection: str, recorded: tuple[str, int], given: str, built: str, source: str) -> Exception:
    """The encoder-mismatch error in the command line's terms: which setting asked for what."""
    from ..batteries.vector import VectorStoreUsageError
    from ..batteries.vector.encoders._registry import encoder_for_recorded

    own = encoder_for_recorded(*recorded)
    env_set = os.environ.get(ENV_ENCODER)
    if source == ENV_ENCODER:
        in_force = f"{ENV_ENCODER}={given} (no --encoder given)"
        undo = f"Unset {ENV_ENCODER}, or pass --encoder {own or recorded[0]} to override it"
    else:
        also = (
            f"; {ENV_ENCODER}={env_set} is set too, and the flag wins"
            if env_set
            else f"; {ENV_ENCODER} is not set"
        )
        in_force = f"--encoder {given}{also}"
        undo = "Drop --encoder" + (f" and unset {ENV_ENCODER}" if env_set else "")
    default = f"the collection's own encoder{f' ({own})' if own else ''} is used when neither is set"
    return VectorStoreUsageError(
        f"Collection {collection!r} was built with encoder {recorded[0]!r}, but the encoder in force is "
        f"{built!r}, from {in_force}.",
        code="E_VECTOR_STORE_ENCODER_MISMATCH",
        hint=f"{undo}: {default}. To search with {given}, ingest into a new collection: "
        f"turnkit ingest PATH --collection NEW --encoder {given}.",
        collection=collection,
        expected=recorded[0],
        actual=built,
        source=source,
    )
