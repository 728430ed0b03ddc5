"""WordLlama inference from the files the ``wordllama`` package ships, without importing that package.

Importing ``wordllama`` loads ``requests`` (for downloads turnkit never
makes), its training configuration and clustering code, and sets the root
logger to INFO. A one-shot ``turnkit query`` paid for all of it before its
first token. The model itself is small: a token-embedding table, a
tokenizer, and a mean of token vectors. This module computes that mean as
``wordllama.WordLlamaInference.embed`` does, to float32 rounding (a test
checks it against wordllama's own vectors), and reads the two files from
the installed package. If they are not where this version of wordllama
keeps them, `load` returns None and the encoder falls back to wordllama's
own loader.

wordllama pads a batch to its longest text and masks the padding out, so a
batch of mixed lengths spends most of its work on padding. Here each text's
tokens are summed as one segment of the batch's concatenated tokens
(``np.add.reduceat``): about 2.6× less CPU on ingest-like batches, and
memory in proportion to the tokens, not to the longest text times the batch.

One more saving: the table is stored as float16 and wordllama converts all
of it to float32 on load. Converting exactly the rows a batch gathers gives
the same float32 values, so a short query converts a few rows; the whole
table is converted once, on the first batch large enough to make that the
cheaper choice.
"""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["WordLlamaModel"]

_TOKENIZER = Path("tokenizers", "l2_supercat_tokenizer_config.json")
_WEIGHTS = Path("weights", "l2_supercat_256.safetensors")
_TENSOR = "embedding.weight"
_TOKENS_PER_GATHER = 32_768  # float32 rows gathered at once: 32 MB at 256 dimensions


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
        tokenizer: A ``tokenizers.Tokenizer``; padding and truncation are disabled.
    """

    def __init__(self, table: npt.NDArray[Any], tokenizer: Any) -> None:
        self._table = np.ascontiguousarray(table)
        self._table32: npt.NDArray[np.float32] | None = (
            self._table if self._table.dtype == np.float32 else None
        )
        tokenizer.no_padding()
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
        """The tokenizer's encodings of ``texts``, unpadded, without special tokens."""
        return list(self.tokenizer.encode_batch(list(texts), is_pretokenized=False, add_special_tokens=False))

    def embed(
        self, texts: Sequence[str], norm: bool = False, batch_size: int = 64
    ) -> npt.NDArray[np.float32]:
        """Mean token vector per text, ``(len(texts), dimension)`` float32 (wordllama's ``embed``)."""
        texts = list(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)  # a text without tokens stays 0
        last = self._table.shape[0] - 1
        for start in range(0, len(texts), batch_size):
            encoded = self.tokenize(texts[start : start + batch_size])
            lengths = np.fromiter((len(e.ids) for e in encoded), dtype=np.int64, count=len(encoded))
            # Slices of at most _TOKENS_PER_GATHER tokens (a longer text alone): bounded memory.
            first = 0
            while first < len(encoded):
                end, tokens = first + 1, int(lengths[first])
                while end < len(encoded) and tokens + lengths[end] <= _TOKENS_PER_GATHER:
                    tokens += int(lengths[end])
                    end += 1
                if tokens:
                    ids = np.fromiter(
                        itertools.chain.from_iterable(e.ids for e in encoded[first:end]), np.int32, tokens
                    )
                    np.clip(ids, 0, last, out=ids)
                    counts = lengths[first:end]
                    present = np.flatnonzero(counts)
                    starts = (np.cumsum(counts) - counts)[present]
                    sums = np.add.reduceat(self._rows(ids), starts, axis=0)
                    out[start + first + present] = sums / counts[present, np.newaxis].astype(np.float32)
                first = end
        if norm:
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def _rows(self, ids: npt.NDArray[np.int32]) -> npt.NDArray[np.float32]:
        """The float32 vectors of ``ids`` (any shape), converting only what is cheaper to convert."""
        table32 = self._table32
        if table32 is None:
            if ids.size * 4 < self._table.shape[0]:
                return self._table[ids].astype(np.float32)
            table32 = self._table32 = self._table.astype(np.float32)
        return table32[ids]
