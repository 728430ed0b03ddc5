"""Phrases a full-text query should match in order: identifiers and quoted text (pure, no I/O).

turnkit's full-text index splits words at every character that is not a
letter or a digit, so ``socket_options`` is indexed as ``socket`` and
``options``, two common words. Matched as a phrase (the two tokens next to
each other), the identifier is as rare as it was in the text: on the
known-item sets in docs/ranking.md that lifts identifier lookups from 0.86 to
0.93 R@1 (pydoc) and from 0.87 to 0.97 (package READMEs).
"""

from __future__ import annotations

import re

__all__ = ["MAX_PHRASES", "query_phrases"]

MAX_PHRASES = 8
_QUOTED = re.compile(r"\"([^\"]+)\"|“([^”]+)”")
# Two or more word pieces joined by dots or underscores: os.path.join, socket_options, s3.buckets.all
_JOINED = re.compile(r"[^\W_]+(?:[._]+[^\W_]+)+")
_PIECE = re.compile(r"[^\W_]+")


def query_phrases(text: str) -> list[str]:
    """The phrases in ``text`` a full-text search should also match in order.

    A phrase is a quoted span (``"exact words"``) or an identifier made of
    word pieces joined by dots or underscores (``os.path.join``), given as its
    pieces separated by spaces (``"os path join"``), the way the index splits
    it. Single words are left out (the plain match already finds them), and
    so are repeats; at most `MAX_PHRASES` are returned, in order.

    Args:
        text: The full-text query.

    Returns:
        Phrases of two or more words, each words separated by one space.
    """
    found: list[str] = []
    spans = [m.group(1) or m.group(2) or "" for m in _QUOTED.finditer(text)]
    spans += _JOINED.findall(_QUOTED.sub(" ", text))
    for span in spans:
        pieces = _PIECE.findall(span)
        phrase = " ".join(pieces)
        if len(pieces) >= 2 and phrase.lower() not in (p.lower() for p in found):
            found.append(phrase)
    return found[:MAX_PHRASES]
