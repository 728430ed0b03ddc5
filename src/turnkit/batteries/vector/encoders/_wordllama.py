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
batch of mixed lengths spends most of its work on padding. Here the batch's
tokens are gathered without padding, a slice of at most 2,048 rows at a time,
and each text's rows are summed on their own: memory in proportion to the
tokens, not to the longest text times the batch. Measured on ingest's chunks
(8,660 texts): one sum per text is about 15× faster than ``np.add.reduceat``
over the slice, and 2 MB slices stay in a core's cache and in the allocator's
free memory, where 32 MB slices were mapped afresh each time (in ingest, about
a second of system CPU in page faults). The tokenizer skips character offsets
(``encode_batch_fast``, the same ids).

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
_TOKENS_PER_GATHER = 2_048  # float32 rows gathered at once: 2 MB at 256 dimensions (see `embed`)


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
        # The same ids without character offsets, which cost a third of the tokenizer's CPU.
        self._encode_batch = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
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
        return list(self._encode_batch(list(texts), add_special_tokens=False))

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
            table = self._table_for(int(lengths.sum()))
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
                    rows, at = table[ids].astype(np.float32, copy=False), 0
                    block = out[start + first : start + end]
                    counts = lengths[first:end]
                    # One sum per text: numpy's reduceat along rows is about 15x slower.
                    for i, n in enumerate(counts.tolist()):
                        if n:
                            rows[at : at + n].sum(axis=0, out=block[i])
                            at += n
                    block /= np.maximum(counts, 1)[:, np.newaxis].astype(np.float32)
                first = end
        if norm:
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def _table_for(self, tokens: int) -> npt.NDArray[Any]:
        """The table to gather ``tokens`` rows from: float32 once converting all of it costs less."""
        if self._table32 is None and tokens * 4 >= self._table.shape[0]:
            self._table32 = self._table.astype(np.float32)
        return self._table if self._table32 is None else self._table32
