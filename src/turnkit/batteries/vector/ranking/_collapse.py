"""Duplicate collapse: one result per text, the other copies named on it.

A documentation tree often holds one text several times: ``process.md``, its
``process.html`` rendering, and a single-page ``all.html`` holding every page.
Each copy is a separate chunk with its own vector, so a plain search fills
its slots with the same passage. This stage keeps the best-ranked copy and
hangs the others on it (``VectorMatch.duplicates``), so nothing is hidden and
the freed slots go to the next distinct results.

Two matches are copies when:

- their ``metadata.content_hash`` (which ingest records) is equal, or
- their texts, reduced to lower-case words (Markdown link targets, markup and
  punctuation dropped), share at least `NEAR_COPY` of the shorter text's
  runs of five words. Chunk boundaries of two renderings rarely coincide, so
  the shorter text's share is read, not the Jaccard index.

On the developer-question set (``bench/quality.py --devq-only``: package
pages shipped as reST and HTML), a page's chunk and its rendering's share a
median 0.71 of their five-word runs (10th percentile 0.54), while chunks of
two different pages reach 0.5 in 0.2% of pairs; the 0.5 bar sits between.

The check is pairwise over the candidate pool only (tens of texts), so it
needs no index.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from turnkit.batteries.vector._matches import VectorMatch

__all__ = ["NEAR_COPY", "collapse_duplicates", "copy_words"]

NEAR_COPY = 0.5
"""Share of the shorter text's five-word runs found in the other from which two texts are copies."""

_SHINGLE = 5
_LINK_TARGET = re.compile(r"\]\([^)\s]*\)")  # Markdown's [text](target): the HTML rendering shows only text
_WORD = re.compile(r"\w+")


def copy_words(text: str) -> list[str]:
    """The words two renderings of one text have in common: lower case, without markup or link targets."""
    return _WORD.findall(_LINK_TARGET.sub("]", text).lower())


def _shingles(words: list[str]) -> frozenset[tuple[str, ...]]:
    if len(words) < _SHINGLE:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + _SHINGLE]) for i in range(len(words) - _SHINGLE + 1))


def _near(a: frozenset[tuple[str, ...]], b: frozenset[tuple[str, ...]], threshold: float) -> bool:
    if not a or not b:
        return False
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    return len(small & large) >= threshold * len(small)


def collapse_duplicates(matches: Sequence[VectorMatch], *, near_copy: float = NEAR_COPY) -> list[VectorMatch]:
    """Keep the first match of each text; the later copies go to its ``duplicates``.

    Order is kept. A match with neither a document nor a ``content_hash``
    is never taken for a copy.

    Args:
        matches: Best first.
        near_copy: Share of the shorter text's five-word runs the two must share (in (0, 1]).

    Returns:
        The distinct matches, best first; a match with copies carries them
        (and their own copies) in ``duplicates``, in rank order.
    """
    kept: list[VectorMatch] = []
    hashes: list[object] = []
    shingles: list[frozenset[tuple[str, ...]]] = []
    copies: list[list[VectorMatch]] = []
    for match in matches:
        digest = (match.metadata or {}).get("content_hash")
        grams = _shingles(copy_words(match.document)) if match.document else frozenset()
        for i in range(len(kept)):
            same_hash = digest is not None and digest == hashes[i]
            if same_hash or _near(grams, shingles[i], near_copy):
                copies[i].append(match)
                copies[i].extend(match.duplicates)
                break
        else:
            kept.append(match)
            hashes.append(digest)
            shingles.append(grams)
            copies.append(list(match.duplicates))
    return [
        replace(m, duplicates=tuple(c)) if c != list(m.duplicates) else m
        for m, c in zip(kept, copies, strict=True)
    ]
