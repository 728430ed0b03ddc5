"""Encoders: batches of text in, float32 vectors out.

An encoder is anything with ``name``, ``dimension`` and
``encode(texts, *, kind)`` returning an ``(n, dimension)`` array (or an
awaitable of one). The store always calls it with a *batch*; it never encodes
one record at a time.
"""

from __future__ import annotations

import hashlib
import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from turnkit._aio import to_thread
from turnkit._lazy import import_optional
from turnkit.batteries.vector._errors import VectorStoreRuntimeError

__all__ = [
    "EncodeKind",
    "Encoder",
    "FunctionEncoder",
    "HashEncoder",
    "WordLlamaEncoder",
    "encode_texts",
]

EncodeKind = Literal["query", "document"]
Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Encoder(Protocol):
    """What the store needs from an embedding model.

    Attributes:
        name: Identifies the model; recorded in each collection so a later
            process cannot silently query it with a different model.
        dimension: Length of every vector ``encode`` returns.
    """

    name: str
    dimension: int

    def encode(self, texts: Sequence[str], *, kind: EncodeKind) -> Vectors | Awaitable[Vectors]:
        """Encode a batch of texts; ``kind`` tells queries from documents."""
        ...


def _normalize(vectors: npt.NDArray[Any]) -> Vectors:
    out: Vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    zero = norms[:, 0] == 0
    # A zero vector has no cosine direction (LanceDB never returns one), so
    # text with no known tokens maps to a fixed unit vector instead.
    norms[zero] = 1.0
    out = (out / norms).astype(np.float32, copy=False)
    out[zero] = 0.0
    out[zero, 0] = 1.0
    return out


_WORD = re.compile(r"\w+")


class HashEncoder:
    """A deterministic lexical encoder for tests and examples (not semantic).

    Each lower-cased word is hashed to a signed bucket (feature hashing), and
    the vector is L2-normalized, so texts sharing words are close. It needs no
    model and gives the same vectors on every machine.

    Args:
        dimension: Vector length.
    """

    def __init__(self, dimension: int = 64) -> None:
        if dimension < 2:
            raise ValueError("dimension must be at least 2")
        self.dimension = dimension
        self.name = f"turnkit-hash-{dimension}"

    def encode(self, texts: Sequence[str], *, kind: EncodeKind) -> Vectors:
        """Encode texts by hashing their words."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            # Word by word over the text as given: memory stays flat in the text's length.
            for match in _WORD.finditer(text):
                digest = hashlib.blake2b(match.group().lower().encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dimension] += 1.0 if (value >> 63) & 1 else -1.0
        return _normalize(out)

    def __repr__(self) -> str:
        return f"HashEncoder(dimension={self.dimension})"


def _windows(text: str, size: int) -> list[str]:
    """``text`` cut into pieces of at most ``size`` characters, at whitespace where there is some.

    A space at a cut is dropped: the tokenizer marks a word's leading space
    itself, so a window starting with " 000" would read as two spaces, not as
    the "▁000" the whole text holds.
    """
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + size, len(text))
        if end < len(text):
            cut = text.rfind(" ", start + size // 2, end)
            cut = max(cut, text.rfind("\n", start + size // 2, end))
            if cut > start:
                end = cut
        out.append(text[start:end])
        start = end + 1 if end < len(text) and text[end] == " " else end
    return out


def optional_module(name: str, needs: str, extra: str, package: str | None = None) -> Any:
    """Import ``name`` for an encoder, or E_VECTOR_STORE_DRIVER_UNAVAILABLE naming the extra to install."""
    package = package or name
    return import_optional(
        name,
        partial(VectorStoreRuntimeError, code="E_VECTOR_STORE_DRIVER_UNAVAILABLE"),
        f"{needs} needs the `{package}` package",
        f"pip install 'turnkit[{extra}]'",
        package=package,
    )


class LazyModel:
    """A model built on first use, exactly once, even when threads ask for it together."""

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def get(self, build: Callable[[], Any]) -> Any:
        """The model, built with ``build`` the first time."""
        if self._model is None:
            with self._lock:
                if self._model is None:
                    self._model = build()
        return self._model


class WordLlamaEncoder:
    """The embedded default: WordLlama, loaded offline from its installed package.

    256-dimensional, L2-normalized, about 1,000 sentences in 0.1 s on two
    cores. Needs the ``wordllama`` extra (``pip install 'turnkit[wordllama]'``);
    the model weights ship inside that package, so nothing is downloaded.

    Args:
        dimension: 64, 128 or 256 (WordLlama's truncations of the same model).
        batch_size: Texts per call into the model.
    """

    WINDOW_CHARS = 8192
    """Texts longer than this are embedded window by window (see `encode`)."""
    _WINDOW_BATCH = 4  # windows per model call: bounds the padded batch to ~4 x 2k tokens

    def __init__(self, dimension: int = 256, *, batch_size: int = 256) -> None:
        if dimension not in (64, 128, 256):
            raise ValueError("WordLlama dimension must be 64, 128 or 256")
        self.dimension = dimension
        self.batch_size = batch_size
        self.name = f"wordllama-l2_supercat-{dimension}"
        self._model = LazyModel()

    def _load(self) -> Any:
        from turnkit.batteries.vector.encoders._wordllama import WordLlamaModel

        lean = WordLlamaModel.load(self.dimension)
        if lean is not None:
            return lean
        wordllama = optional_module("wordllama", "The WordLlama encoder", "wordllama")
        # wordllama's default lookup misses the tokenizer it ships (tokenizer/ vs tokenizers/);
        # pointing cache_dir at the package finds both files and never touches the network.
        return wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent,
            disable_download=True,
            trunc_dim=None if self.dimension == 256 else self.dimension,
        )

    def encode(self, texts: Sequence[str], *, kind: EncodeKind) -> Vectors:
        """Encode texts with WordLlama (same model for queries and documents).

        WordLlama pads a batch to its longest text, so one long text would cost
        memory in proportion to its length times the batch. Texts longer than
        `WINDOW_CHARS` are cut into windows at whitespace, each window is
        embedded, and the window means are averaged weighted by their token
        counts: the same token mean WordLlama computes for the whole text, in
        bounded memory.
        """
        model = self._model.get(self._load)
        texts = list(texts)
        if all(len(t) <= self.WINDOW_CHARS for t in texts):
            raw = model.embed(texts, norm=False, batch_size=self.batch_size)
            return _normalize(np.asarray(raw).reshape(len(texts), self.dimension))
        out = np.zeros((len(texts), self.dimension), dtype=np.float64)
        weight = np.zeros(len(texts), dtype=np.float64)
        short = [i for i, t in enumerate(texts) if len(t) <= self.WINDOW_CHARS]
        if short:
            raw = model.embed([texts[i] for i in short], norm=False, batch_size=self.batch_size)
            out[short] = np.asarray(raw).reshape(len(short), self.dimension)
            weight[short] = 1.0
        for i, text in enumerate(texts):
            if len(text) <= self.WINDOW_CHARS:
                continue
            windows = _windows(text, self.WINDOW_CHARS)
            for start in range(0, len(windows), self._WINDOW_BATCH):
                batch = windows[start : start + self._WINDOW_BATCH]
                counts = np.array([sum(e.attention_mask) for e in model.tokenize(batch)], dtype=np.float64)
                means = np.asarray(model.embed(batch, norm=False, batch_size=len(batch)), dtype=np.float64)
                out[i] += (means.reshape(len(batch), self.dimension) * counts[:, None]).sum(axis=0)
                weight[i] += counts.sum()
        out /= np.where(weight > 0, weight, 1.0)[:, None]
        return _normalize(out)

    def __repr__(self) -> str:
        return f"WordLlamaEncoder(dimension={self.dimension})"


class FunctionEncoder:
    """Wrap a plain function ``fn(texts, kind) -> vectors`` (sync or async) as an encoder.

    Args:
        fn: Called with a list of texts and ``"query"`` or ``"document"``.
        name: Model name recorded in collections.
        dimension: Vector length ``fn`` returns.
        batch_size: Most texts per call.
    """

    def __init__(
        self,
        fn: Callable[[list[str], EncodeKind], Any],
        *,
        name: str,
        dimension: int,
        batch_size: int = 256,
    ) -> None:
        self._fn = fn
        self.name = name
        self.dimension = dimension
        self.batch_size = batch_size

    def encode(self, texts: Sequence[str], *, kind: EncodeKind) -> Any:
        """Call the wrapped function."""
        return self._fn(list(texts), kind)

    def __repr__(self) -> str:
        return f"FunctionEncoder(name={self.name!r}, dimension={self.dimension})"


async def encode_texts(
    encoder: Encoder, texts: Sequence[str], kind: EncodeKind, *, batch_size: int | None = None
) -> Vectors:
    """Encode ``texts`` in batches and check the result's shape and values.

    Sync encoders run in a worker thread so a slow model never blocks the event loop. Raises
    `VectorStoreRuntimeError` (``E_VECTOR_STORE_ENCODER_FAILED``) when the encoder raises or
    returns the wrong shape, NaN or infinity.
    """
    failed = partial(VectorStoreRuntimeError, code="E_VECTOR_STORE_ENCODER_FAILED", encoder=encoder.name)
    size = batch_size or getattr(encoder, "batch_size", None) or 256
    parts: list[Vectors] = []
    sync = not inspect.iscoroutinefunction(encoder.encode)
    for start in range(0, len(texts), size):
        batch = list(texts[start : start + size])
        try:
            if sync:
                result: Any = await to_thread(encoder.encode, batch, kind=kind)
            else:
                result = encoder.encode(batch, kind=kind)
            if inspect.isawaitable(result):
                result = await result
            array = np.asarray(result, dtype=np.float32)
        except Exception as exc:
            if isinstance(exc, VectorStoreRuntimeError) and exc.code == "E_VECTOR_STORE_ENCODER_FAILED":
                raise
            raise failed(f"Encoder {encoder.name!r} raised {type(exc).__name__}: {exc}") from exc
        if array.shape != (len(batch), encoder.dimension):
            raise failed(
                f"Encoder {encoder.name!r} returned shape {array.shape} for {len(batch)} texts; "
                f"expected ({len(batch)}, {encoder.dimension})."
            )
        if not np.isfinite(array).all():
            raise failed(f"Encoder {encoder.name!r} returned NaN or infinity.")
        parts.append(array)
    if not parts:
        return np.zeros((0, encoder.dimension), dtype=np.float32)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)
