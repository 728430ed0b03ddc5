"""WordLlama inference from the files the ``wordllama`` package ships, without importing that package.

Importing ``wordllama`` loads ``requests`` (for downloads turnkit never
makes), its training configuration and clustering code, and sets the root
logger to INFO. A one-shot ``turnkit query`` paid for all of it before its
first token. The model itself is small: a token-embedding table, a
tokenizer, and a masked mean. This module computes that mean exactly as
``wordllama.WordLlamaInference.embed`` does (the same operations in the same
order, so the vectors are bit-identical; a test checks it), and reads the
two files from the installed package. If they are not where this version of
wordllama keeps them, `load` returns None and the encoder falls back to
wordllama's own loader.

One more saving: the table is stored as float16 and wordllama converts all
of it to float32 on load. Converting exactly the rows a batch gathers gives
the same float32 values, so a short query converts a few rows; the whole
table is converted once, on the first batch large enough to make that the
cheaper choice.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["WordLlamaModel"]

_TOKENIZER = Path("tokenizers", "l2_supercat_tokenizer_config.json")
_WEIGHTS = Path("weights", "l2_supercat_256.safetensors")
_TENSOR = "embedding.weight"


def _package_dir() -> Path | None:
    """Where ``wordllama`` is installed, found without running its ``__init__``."""
    try:
        spec = importlib.util.find_spec("wordllama")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


class WordLlamaModel:
    """WordLlama's ``l2_supercat`` model: tokenize, look up token vectors, average them.

    Args:
        table: The token-embedding table, ``(vocabulary, dimension)``, float16 or float32.
        tokenizer: A ``tokenizers.Tokenizer``; padding is enabled and truncation disabled,
            as wordllama does.
    """

    def __init__(self, table: npt.NDArray[Any], tokenizer: Any) -> None:
        self._table = np.ascontiguousarray(table)
        self._table32: npt.NDArray[np.float32] | None = (
            self._table if self._table.dtype == np.float32 else None
        )
        tokenizer.enable_padding()
        tokenizer.no_truncation()
        self.tokenizer = tokenizer
        self.dimension = int(self._table.shape[1])

    @classmethod
    def load(cls, dimension: int) -> WordLlamaModel | None:
        """The model truncated to ``dimension``, or None if the installed files are not found."""
        root = _package_dir()
        if root is None or not (root / _TOKENIZER).is_file() or not (root / _WEIGHTS).is_file():
            return None
        try:
            from safetensors import safe_open
            from tokenizers import Tokenizer
        except ImportError:
            return None
        tokenizer = Tokenizer.from_file(str(root / _TOKENIZER))
        with safe_open(str(root / _WEIGHTS), framework="np", device="cpu") as f:
            table = f.get_tensor(_TENSOR)
        return cls(table[:, :dimension], tokenizer)

    def tokenize(self, texts: Sequence[str]) -> list[Any]:
        """The tokenizer's encodings of ``texts``, padded to the longest, without special tokens."""
        return list(self.tokenizer.encode_batch(list(texts), is_pretokenized=False, add_special_tokens=False))

    def embed(
        self, texts: Sequence[str], norm: bool = False, batch_size: int = 64
    ) -> npt.NDArray[np.float32]:
        """Mean token vector per text, ``(len(texts), dimension)`` float32 (wordllama's ``embed``)."""
        texts = list(texts)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        last = self._table.shape[0] - 1
        for start in range(0, len(texts), batch_size):
            encoded = self.tokenize(texts[start : start + batch_size])
            ids = np.array([e.ids for e in encoded], dtype=np.int32)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.float32)
            np.clip(ids, 0, last, out=ids)
            vectors = self._rows(ids)
            mask_sum = np.maximum(mask.sum(axis=1, keepdims=True), 1.0).astype(np.float32)
            pooled = np.sum(vectors * mask[..., np.newaxis], axis=1, dtype=np.float32) / mask_sum
            if norm:
                pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
            out[start : start + len(encoded)] = pooled
        return out

    def _rows(self, ids: npt.NDArray[np.int32]) -> npt.NDArray[np.float32]:
        """The float32 vectors of ``ids`` (any shape), converting only what is cheaper to convert."""
        table32 = self._table32
        if table32 is None:
            if ids.size * 4 < self._table.shape[0]:
                return self._table[ids].astype(np.float32)
            table32 = self._table32 = self._table.astype(np.float32)
        return table32[ids]
