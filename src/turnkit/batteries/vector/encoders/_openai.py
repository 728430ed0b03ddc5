"""An encoder for any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, vLLM, Ollama, llama.cpp…)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

from turnkit._aio import to_thread
from turnkit._checks import is_int
from turnkit._http import JsonEndpoint
from turnkit.batteries.vector._errors import VectorStoreRuntimeError, VectorStoreUsageError
from turnkit.batteries.vector.encoders._base import EncodeKind, Vectors

__all__ = ["OpenAIEmbeddingEncoder"]

_encoder_error = partial(VectorStoreRuntimeError, code="E_VECTOR_STORE_ENCODER_FAILED")
_config_error = partial(VectorStoreUsageError, code="E_INVALID_VECTOR_STORE_CONFIG")


class OpenAIEmbeddingEncoder:
    """Embeddings from an OpenAI-compatible HTTP API, one request per batch.

    Uses only the standard library (``urllib``) in a worker thread; nothing
    is contacted until the first ``encode``. The dimension is given up front
    so a collection can be created without a network round trip.

    Args:
        model: The model name sent in the request (e.g. ``"text-embedding-3-small"``).
        dimension: Length of the vectors the model returns.
        base_url: The API root, e.g. ``"http://127.0.0.1:8000/v1"``.
        api_key: Sent as ``Authorization: Bearer …`` when given.
        batch_size: Texts per request.
        timeout: Seconds per request.
        send_dimensions: Also send ``"dimensions": dimension`` (models that can shorten vectors).
        headers: Extra HTTP headers.

    Raises:
        VectorStoreUsageError: ``E_INVALID_VECTOR_STORE_CONFIG``: an argument is unusable.
    """

    def __init__(
        self,
        model: str,
        *,
        dimension: int,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        send_dimensions: bool = False,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._api = JsonEndpoint.checked(
            base_url, model=model, api_key=api_key, headers=headers, timeout=timeout, error=_config_error
        )
        for field, value in (("dimension", dimension), ("batch_size", batch_size)):
            if not is_int(value, 1):
                raise _config_error(f"{field} must be a positive int, got {value!r}.")
        self.model = model
        self.name = f"openai:{model}" + (f"@{dimension}" if send_dimensions else "")
        self.dimension = dimension
        self.base_url = self._api.base_url
        self.batch_size = batch_size
        self.timeout = self._api.timeout
        self.send_dimensions = send_dimensions

    def __repr__(self) -> str:
        # Never print the key.
        return f"OpenAIEmbeddingEncoder(model={self.model!r}, base_url={self.base_url!r})"

    async def encode(self, texts: Sequence[str], *, kind: EncodeKind) -> Vectors:
        """Encode a batch with one request per ``batch_size`` texts."""
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            body: dict[str, Any] = {"model": self.model, "input": batch, "encoding_format": "float"}
            if self.send_dimensions:
                body["dimensions"] = self.dimension
            raw = await to_thread(
                self._api.post,
                "/embeddings",
                json.dumps(body).encode(),
                endpoint="embeddings endpoint",
                error=_encoder_error,
                encoder=self.name,
            )
            parts.append(self._parse(raw, len(batch)))
        if not parts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.concatenate(parts).astype(np.float32, copy=False)

    def _parse(self, raw: bytes, n: int) -> Vectors:
        try:
            data = json.loads(raw)["data"]
            rows = sorted(data, key=lambda item: int(item.get("index", 0)))
            array = np.asarray([row["embedding"] for row in rows], dtype=np.float32)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise _encoder_error(
                f"The embeddings endpoint sent a body without data[].embedding: {raw[:200]!r}",
                hint="Check that the endpoint implements OpenAI's /embeddings.",
                encoder=self.name,
            ) from exc
        if array.shape != (n, self.dimension):
            raise _encoder_error(
                f"The embeddings endpoint returned shape {array.shape} for {n} texts; "
                f"expected ({n}, {self.dimension}).",
                hint="Set dimension= to the model's output size (or send_dimensions=True).",
                encoder=self.name,
            )
        return array
