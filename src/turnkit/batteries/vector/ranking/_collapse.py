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
needs no index. Each text's five-word runs are hashed to 64-bit integers in
one numpy pass: building a Python tuple per run cost more than the search
itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

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


# Odd 64-bit multipliers, one per word of a run: a run's hash is sum(word_hash[i] * _MIX[i]) mod 2**64.
_MIX = np.array(
    [0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD],
    dtype=np.uint64,
)
_SHORT = np.uint64(0x94D049BB133111EB)  # marks a text shorter than one run, so it never equals a run


def _shingles(words: list[str]) -> frozenset[int]:
    """The text's distinct five-word runs as 64-bit hashes (a text under five words is one run)."""
    if not words:
        return frozenset()
    ids = np.fromiter(map(hash, words), dtype=np.int64, count=len(words)).view(np.uint64)
    if len(ids) < _SHINGLE:
        # Array arithmetic wraps silently; numpy scalars would warn on the overflow.
        parts = np.append(ids * _MIX[: len(ids)], np.full(len(ids), _SHORT, dtype=np.uint64))
        return frozenset([int(parts.sum(dtype=np.uint64))])
    runs = len(ids) - _SHINGLE + 1
    grams = ids[:runs] * _MIX[0]
    for j in range(1, _SHINGLE):
        grams += ids[j : j + runs] * _MIX[j]  # wraps modulo 2**64, as intended
    # Hashing in numpy, comparing as Python sets: a set intersection of a few hundred ints is
    # cheaper than any numpy call's overhead, and a pool compares each text with every kept one.
    return frozenset(grams.tolist())


def _near(a: frozenset[int], b: frozenset[int], threshold: float) -> bool:
    return bool(a and b) and len(a & b) >= threshold * min(len(a), len(b))


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
    # Each kept match with its content_hash, its five-word runs and the copies found so far.
    kept: list[tuple[VectorMatch, object, frozenset[int], list[VectorMatch]]] = []
    for match in matches:
        digest = (match.metadata or {}).get("content_hash")
        grams = _shingles(copy_words(match.document)) if match.document else frozenset()
        for _, kept_digest, kept_grams, copies in kept:
            if (digest is not None and digest == kept_digest) or _near(grams, kept_grams, near_copy):
                copies += (match, *match.duplicates)
                break
        else:
            kept.append((match, digest, grams, list(match.duplicates)))
    return [replace(m, duplicates=tuple(c)) if c != list(m.duplicates) else m for m, _, _, c in kept]
