"""sentence-transformers models as an encoder (optional: it brings PyTorch)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from turnkit.batteries.vector.encoders._base import EncodeKind, LazyModel, Vectors, optional_module

__all__ = ["SentenceTransformerEncoder"]


class SentenceTransformerEncoder:
    """Any sentence-transformers model, loaded lazily from a local path or the HF cache.

    ``local_files_only=True`` (the default) never downloads: point
    ``model`` at a directory, or pre-populate the Hugging Face cache. Install
    with ``pip install 'turnkit[sentence-transformers]'`` (pin a CPU torch).

    Args:
        model: A model name or a local directory.
        dimension: The output size (asked from the model at load when ``None``;
            give it to create collections before the model loads).
        device: ``"cpu"``, ``"cuda"``…
        batch_size: Texts per forward pass.
        local_files_only: Refuse to download.
        query_prefix: Prepended to queries (e5/bge style, e.g. ``"query: "``).
        document_prefix: Prepended to documents.
    """

    def __init__(
        self,
        model: str,
        *,
        dimension: int | None = None,
        device: str = "cpu",
        batch_size: int = 64,
        local_files_only: bool = True,
        query_prefix: str = "",
        document_prefix: str = "",
    ) -> None:
        self.model_name = model
        self.name = f"sentence-transformers:{model}"
        self.device = device
        self.batch_size = batch_size
        self.local_files_only = local_files_only
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._model = LazyModel()
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        """The vector length (loads the model when it was not given)."""
        if self._dimension is None:
            model = self._model.get(self._load)
            # Renamed in sentence-transformers 6; the old name warns there.
            size = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
            self._dimension = int(size())
        return self._dimension

    def _load(self) -> Any:
        module = optional_module(
            "sentence_transformers",
            "SentenceTransformerEncoder",
            "sentence-transformers",
            "sentence-transformers",
        )
        return module.SentenceTransformer(
            self.model_name, device=self.device, local_files_only=self.local_files_only
        )

    def encode(self, texts: Sequence[str], *, kind: EncodeKind) -> Vectors:
        """Encode texts, normalized, with the query or document prefix."""
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        model = self._model.get(self._load)
        # The model reads its first max_seq_length tokens; cut the text first so the tokenizer
        # never works through megabytes it would drop (64 characters per token is a wide margin).
        limit = 64 * int(getattr(model, "max_seq_length", None) or 512)
        vectors = model.encode(
            [prefix + t[:limit] for t in texts],
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self.dimension)

    def __repr__(self) -> str:
        return f"SentenceTransformerEncoder({self.model_name!r})"
