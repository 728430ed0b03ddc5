"""Where the command line's settings come from: flags, then environment variables, then defaults.

The vector battery is imported inside the functions, so ``turnkit --help``
stays fast and never loads LanceDB.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import UnknownEncoderError

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
    "encoder_for",
    "encoder_spec_of",
    "env_flag",
    "open_store",
    "recorded_encoder",
    "resolve",
    "store_uri",
]

DEFAULT_URI = ".turnkit/lancedb"
"""The embedded database, relative to the working directory."""
DEFAULT_COLLECTION = "docs"
DEMO_URI = ".turnkit/demo"
"""The demo's own database, kept apart from the default one."""
DEFAULT_ENCODER = "wordllama"

ENV_URI = "TURNKIT_URI"
ENV_COLLECTION = "TURNKIT_COLLECTION"
ENV_ENCODER = "TURNKIT_ENCODER"
ENV_DEBUG = "TURNKIT_DEBUG"

_SPEC = re.compile(r"^(wordllama|hash)(?::(\d+))?$")
# The names the built-in encoders record in a collection, mapped back to a spec.
_RECORDED = (
    (re.compile(r"^wordllama-l2_supercat-(\d+)$"), "wordllama"),
    (re.compile(r"^turnkit-hash-(\d+)$"), "hash"),
)


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


def env_flag(name: str) -> bool:
    """Whether a boolean environment variable is on (``1``, ``true``, ``yes``, ``on``)."""
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def encoder_for(spec: str) -> Encoder:
    """Build an encoder from its command-line name (``wordllama``, ``wordllama:128``, ``hash:64``…).

    Raises:
        UnknownEncoderError: the name is not one of the built-in encoders.
    """
    from ..batteries.vector import HashEncoder, WordLlamaEncoder

    match = _SPEC.match(spec.strip().lower())
    if match is None:
        raise UnknownEncoderError(f"Unknown encoder {spec!r}.", encoder=spec)
    kind, size = match.group(1), match.group(2)
    if kind == "hash":
        dimension = int(size) if size else 64
        if dimension < 2:
            raise UnknownEncoderError(f"Encoder {spec!r}: the hash dimension must be at least 2.")
        return HashEncoder(dimension)
    dimension = int(size) if size else 256
    if dimension not in (64, 128, 256):
        raise UnknownEncoderError(f"Encoder {spec!r}: WordLlama comes in 64, 128 or 256 dimensions.")
    return WordLlamaEncoder(dimension)


def encoder_spec_of(recorded: str) -> str | None:
    """The command-line name of an encoder a collection recorded, or None if it is not built in."""
    for pattern, kind in _RECORDED:
        if (match := pattern.match(recorded)) is not None:
            return f"{kind}:{match.group(1)}"
    return None


def recorded_encoder(connection: Connection, collection: str) -> str | None:
    """The encoder name recorded in ``collection``, or None if it does not exist or recorded none."""
    store = connection.store()
    if not store.has_collection_sync(collection):
        return None
    return store.collection_info_sync(collection).encoder


def open_store(
    connection: Connection, collection: str, *, encoder: str | None, fallback: str | None
) -> VectorStore:
    """A store whose encoder matches ``collection``.

    The encoder is the one named by ``encoder`` (flag or environment), else the
    one the collection recorded when it was created, else ``fallback``.

    Raises:
        UnknownEncoderError: no encoder could be chosen, or a name is unknown.
    """
    spec = encoder
    if spec is None:
        recorded = recorded_encoder(connection, collection)
        if recorded is not None:
            spec = encoder_spec_of(recorded)
            if spec is None:
                raise UnknownEncoderError(
                    f"Collection {collection!r} was built with encoder {recorded!r}, "
                    "which the command line cannot load.",
                    hint="Query it from Python with the same encoder, or pass --encoder if it is built in.",
                    encoder=recorded,
                )
        else:
            spec = fallback
    if spec is None:
        raise UnknownEncoderError(
            f"No encoder for collection {collection!r}.", hint="Pass --encoder or set TURNKIT_ENCODER."
        )
    return connection.store(encoder=encoder_for(spec), maintenance=True)
