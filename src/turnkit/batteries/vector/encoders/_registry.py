"""One registry of encoder names: a spec string to an encoder, and a recorded name back to one.

The command line, the MCP server and the local rerank scorer all use it, so an
encoder that works in one place works in every place. Specs:

``hash[:DIM]``, ``wordllama[:64|128|256]``, ``minilm``,
``sentence-transformers:MODEL`` and ``openai:MODEL[@DIM]`` (an OpenAI-compatible
``/embeddings`` endpoint: ``TURNKIT_OPENAI_BASE_URL`` or ``OPENAI_BASE_URL``,
and ``TURNKIT_OPENAI_API_KEY`` or ``OPENAI_API_KEY``).
"""

from __future__ import annotations

import os
import re
from typing import cast

from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector.encoders._base import Encoder, HashEncoder, WordLlamaEncoder

__all__ = [
    "ENCODER_SPECS",
    "OFFLINE_ENCODERS",
    "build_recorded_encoder",
    "encoder_for_recorded",
    "encoder_from_spec",
]

ENCODER_SPECS = (
    "hash[:DIM]",
    "wordllama[:64|128|256]",
    "minilm",
    "sentence-transformers:MODEL",
    "openai:MODEL@DIM",
)
"""The spec forms `encoder_from_spec` takes, for help texts and hints."""

OFFLINE_ENCODERS = ("hash", "wordllama", "minilm")
"""The families whose weights ship inside installed packages: building one never touches the network."""

_HINT = "Use one of: " + ", ".join(ENCODER_SPECS) + "."


def _bad(message: str) -> VectorStoreUsageError:
    return VectorStoreUsageError(message, code="E_INVALID_VECTOR_STORE_CONFIG", hint=_HINT, field="encoder")


def encoder_from_spec(spec: str, *, dimension: int | None = None) -> Encoder:
    """Build the encoder a spec names (see the module docstring for the forms).

    Args:
        spec: ``"wordllama"``, ``"hash:64"``, ``"minilm"``, ``"openai:text-embedding-3-small@1536"``…
        dimension: The collection's dimension, for specs that need one and do not say it.

    Raises:
        VectorStoreUsageError: ``E_INVALID_VECTOR_STORE_CONFIG``: the spec names no known encoder, or a bad
            size.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(f"Unknown encoder {spec!r}.")
    text = spec.strip()
    family, _, rest = text.partition(":")
    family = family.lower()
    if family == "hash":
        size = rest or str(dimension or 64)
        if not size.isdigit() or int(size) < 2:
            raise _bad(f"Encoder {spec!r}: the hash dimension must be a number of at least 2.")
        return HashEncoder(int(size))
    if family == "wordllama":
        size = rest or str(dimension or 256)
        if size not in ("64", "128", "256"):
            raise _bad(f"Encoder {spec!r}: WordLlama comes in 64, 128 or 256 dimensions.")
        return WordLlamaEncoder(int(size))
    if family == "minilm" and not rest:
        from turnkit.batteries.vector.encoders._minilm import MiniLMEncoder

        return MiniLMEncoder()
    if family == "sentence-transformers" and rest:
        from turnkit.batteries.vector.encoders._sentence_transformers import SentenceTransformerEncoder

        return cast(Encoder, SentenceTransformerEncoder(rest))  # its dimension is a read-only property
    if family == "openai" and rest:
        from turnkit.batteries.vector.encoders._openai import OpenAIEmbeddingEncoder

        model, _, size = rest.partition("@")
        if size and not size.isdigit():
            raise _bad(f"Encoder {spec!r}: the dimension after @ must be a number.")
        width = int(size) if size else dimension
        if width is None:
            raise _bad(f"Encoder {spec!r}: give its dimension, as openai:{model}@DIM.")
        env = os.environ.get
        return OpenAIEmbeddingEncoder(
            model,
            dimension=width,
            base_url=env("TURNKIT_OPENAI_BASE_URL") or env("OPENAI_BASE_URL") or "https://api.openai.com/v1",
            api_key=env("TURNKIT_OPENAI_API_KEY") or env("OPENAI_API_KEY"),
        )
    raise _bad(f"Unknown encoder {spec!r}.")


_RECORDED = (
    (re.compile(r"^turnkit-hash-(\d+)$"), "hash:{0}"),
    (re.compile(r"^wordllama-l2_supercat-(\d+)$"), "wordllama:{0}"),
    (re.compile(r"^all-MiniLM-L6-v2-onnx-int8$"), "minilm"),
    (re.compile(r"^(sentence-transformers:.+)$"), "{0}"),
    (re.compile(r"^(openai:[^@]+)(?:@\d+)?$"), "{0}"),
)


def encoder_for_recorded(name: str, dimension: int | None = None) -> str | None:
    """The spec that rebuilds the encoder a collection recorded, or ``None`` if it is not built in.

    Args:
        name: The encoder name in the collection's metadata.
        dimension: The collection's dimension (OpenAI specs carry it).
    """
    for pattern, template in _RECORDED:
        match = pattern.match(name)
        if match is not None:
            spec = template.format(*match.groups())
            if spec.startswith("openai:") and dimension is not None:
                spec += f"@{dimension}"
            return spec
    return None


def build_recorded_encoder(
    name: str, dimension: int | None = None, *, remote: bool = False
) -> Encoder | None:
    """The encoder a collection recorded, built by the registry; ``None`` when it cannot be built here.

    The one rule every surface opens a collection's encoder with: a store
    opened without an encoder, the command line and the MCP server.

    Args:
        name: The encoder name in the collection's metadata.
        dimension: The collection's dimension.
        remote: Also build the families that reach the network (a
            ``sentence-transformers`` model may be downloaded, ``openai``
            calls an endpoint). Without it only `OFFLINE_ENCODERS` are built.

    Raises:
        VectorStoreUsageError: ``E_INVALID_VECTOR_STORE_CONFIG``: The recorded name maps to a bad spec.
    """
    spec = encoder_for_recorded(name, dimension)
    if spec is None or (not remote and spec.partition(":")[0] not in OFFLINE_ENCODERS):
        return None
    return encoder_from_spec(spec, dimension=dimension)
