"""turnkit's WordLlama loader gives wordllama's own vectors (to float32 rounding) without importing it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector.encoders import _wordllama
from turnkit.batteries.vector.encoders._wordllama import WordLlamaModel

pytest.importorskip("wordllama")

_WORDS = "refunds reach the original card within five business days orders ship from Lyon".split()
_REFERENCE: dict[int, Any] = {}
_LEAN: dict[int, WordLlamaModel] = {}


def _reference(dimension: int) -> Any:
    if dimension not in _REFERENCE:
        import wordllama

        _REFERENCE[dimension] = wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent,
            disable_download=True,
            trunc_dim=None if dimension == 256 else dimension,
        )
    return _REFERENCE[dimension]


def _lean(dimension: int) -> WordLlamaModel:
    if dimension not in _LEAN:
        model = WordLlamaModel.load(dimension)
        assert model is not None, "the installed wordllama files were not found"
        _LEAN[dimension] = model
    return _LEAN[dimension]


_text = st.lists(st.sampled_from(_WORDS) | st.text(max_size=12), max_size=60).map(" ".join)


@settings(max_examples=60, deadline=None)
@given(
    texts=st.lists(_text, max_size=12),
    dimension=st.sampled_from([64, 128, 256]),
    batch_size=st.integers(min_value=1, max_value=8),
    norm=st.booleans(),
    gather=st.sampled_from([1, 5, 40, _wordllama._TOKENS_PER_GATHER]),
)
def test_embed_is_wordllamas_embed(
    texts: list[str], dimension: int, batch_size: int, norm: bool, gather: int
) -> None:
    """The unpadded segment sums agree with wordllama's padded, masked mean, however the tokens are sliced."""
    default, _wordllama._TOKENS_PER_GATHER = _wordllama._TOKENS_PER_GATHER, gather
    try:
        with np.errstate(invalid="ignore"):  # norm=True of an empty text divides 0 by 0 in both
            expected = _reference(dimension).embed(texts, norm=norm, batch_size=batch_size)
            got = _lean(dimension).embed(texts, norm=norm, batch_size=batch_size)
    finally:
        _wordllama._TOKENS_PER_GATHER = default
    assert got.dtype == np.float32 and got.shape == (len(texts), dimension)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)


def test_a_large_batch_converts_the_table_once_and_agrees() -> None:
    """Short queries convert only their rows; a large batch switches to the converted table."""
    model = WordLlamaModel.load(256)
    assert model is not None
    model.embed(["a short query"])
    assert model._table32 is None
    texts = [" ".join(_WORDS * 40)] * 64
    got = model.embed(texts, batch_size=64)
    assert model._table32 is not None
    np.testing.assert_allclose(got, _reference(256).embed(texts, batch_size=64), rtol=1e-5, atol=1e-7)
    tokens = model.tokenize(["refunds reach", "Lyon"])
    assert [sum(t.attention_mask) for t in tokens] == [
        sum(t.attention_mask) for t in _reference(256).tokenize(["refunds reach", "Lyon"])
    ]


def test_the_encoder_uses_it_and_never_imports_wordllama() -> None:
    """Importing wordllama costs a one-shot query time and sets the root logger to INFO."""
    code = (
        "import sys, logging; from turnkit.batteries.vector import WordLlamaEncoder; "
        "v = WordLlamaEncoder().encode(['hello there'], kind='query'); "
        "print(v.shape, 'wordllama' in sys.modules, 'requests' in sys.modules, logging.getLogger().level)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["(1,", "256)", "False", "False", str(30)]
