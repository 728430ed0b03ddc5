import asyncio

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    FunctionEncoder,
    HashEncoder,
    VectorStoreRuntimeError,
    WordLlamaEncoder,
    encode_texts,
)


def test_hash_encoder_is_deterministic_and_normalized():
    enc = HashEncoder(64)
    a = enc.encode(["The cat sat", "the CAT sat", ""], kind="document")
    assert a.shape == (3, 64) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(a[0], a[1])
    np.testing.assert_array_equal(HashEncoder(64).encode(["The cat sat"], kind="query")[0], a[0])


def test_encode_texts_checks_shape_and_values():
    bad_shape = FunctionEncoder(lambda texts, kind: np.zeros((len(texts), 3)), name="bad", dimension=4)
    with pytest.raises(VectorStoreRuntimeError) as exc_info:
        asyncio.run(encode_texts(bad_shape, ["a"], "query"))
    assert exc_info.value.code == "E_VECTOR_STORE_ENCODER_FAILED"
    nan = FunctionEncoder(lambda texts, kind: np.full((len(texts), 2), np.nan), name="nan", dimension=2)
    with pytest.raises(VectorStoreRuntimeError) as info:
        asyncio.run(encode_texts(nan, ["a"], "query"))
    assert info.value.code == "E_VECTOR_STORE_ENCODER_FAILED"

    def boom(texts, kind):
        raise RuntimeError("model offline")

    with pytest.raises(VectorStoreRuntimeError, match="model offline") as exc_info:
        asyncio.run(encode_texts(FunctionEncoder(boom, name="boom", dimension=2), ["a"], "query"))
    assert exc_info.value.code == "E_VECTOR_STORE_ENCODER_FAILED"


def test_wordllama_is_offline_and_semantic():
    enc = WordLlamaEncoder()
    v = enc.encode(
        [
            "A kitten is sleeping on the sofa",
            "A young cat naps on the couch",
            "Interest rates rose again",
            "",
        ],
        kind="document",
    )
    assert v.shape == (4, 256)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    related, unrelated = float(v[0] @ v[1]), float(v[0] @ v[2])
    assert related > unrelated + 0.2


_WORDS = "refunds reach the original card within five business days orders ship from Lyon".split()


@settings(max_examples=40, deadline=None)
@given(
    words=st.lists(st.sampled_from(_WORDS) | st.text(min_size=1, max_size=12), min_size=1, max_size=400),
    window=st.integers(min_value=40, max_value=400),
)
# A cut at the last space: the second window must read "000", not " 000" (two spaces to the tokenizer).
@example(words=["refunds", "refunds", "original", "original", "000", "000"], window=40)
def test_wordllama_windows_give_the_whole_text_mean(words: list[str], window: int) -> None:
    """A long text embedded window by window is the same vector as embedded whole (bounded memory)."""
    pytest.importorskip("wordllama")
    from turnkit.batteries.vector import WordLlamaEncoder

    encoder = WordLlamaEncoder()
    encoder.WINDOW_CHARS = window  # small windows: many of them, on texts of a few kB
    text = " ".join(words)
    whole = encoder._load().embed([text], norm=True)[0]
    windowed, short = encoder.encode([text, "short text"], kind="document")
    if np.linalg.norm(whole) > 0:
        assert float(np.dot(whole, windowed)) > 0.999
    assert float(np.dot(encoder._load().embed(["short text"], norm=True)[0], short)) > 0.9999
