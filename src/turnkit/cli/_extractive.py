"""An extractive answer: the retrieved sentences closest to the question, each with its source.

What the demo prints when no model is configured. Nothing is generated: every
sentence is quoted from a retrieved chunk, so the answer is only as good as the
retrieval, and it says so.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._aio import run_sync

if TYPE_CHECKING:
    from .. import Retrievable
    from ..batteries.vector import Encoder

__all__ = ["Quote", "extract_answer", "sentences_of"]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`(\"'])")
_MARKUP = re.compile(r"^\s*(?:#{1,6}\s+|[-*+]\s+|\d+\.\s+|>\s*)")
_WORD = re.compile(r"[a-z0-9]+")
# Words that say nothing about what a question is after.
_STOP = frozenset(
    "a an and are as at be by can do does for from how i in is it me my of on or the this to what "
    "when where which who why will with you your".split()
)
# A section's heading says what the section answers: its words count for every sentence in it.
_HEADING_WEIGHT = 0.3
# A sentence that leans on the one before it says little quoted alone ("It ingests…": what does?).
_LEANS_BACK = re.compile(r"(?:It|Its|This|That|These|Those|They|Their|Them|So|Then|Also)\b")
_MIN_CHARS = 30
_MAX_CHARS = 320


@dataclass(frozen=True)
class Quote:
    """One sentence of the answer and where it came from."""

    text: str
    source: str
    score: float


_CODE_START = re.compile(
    r"^(?:assert|await|async|def|class|import|from\s+\S+\s+import|print\(|return|>>>|\$\s)"
)
_SYMBOLS = re.compile(r"[=(){}\[\];<>]")
_LINK = re.compile(r"\[([^\]]*)\]\([^)\s]*\)")
# A quoted sentence is a whole one: it ends as a sentence does, not with the colon that
# introduces a code block or list, nor cut off where a line of code was left out.
_WHOLE = re.compile(r"^[A-Z0-9`\"'(*_].*[.!?][*_`\"')\]]*$", re.S)


def _looks_like_code(line: str) -> bool:
    """A line of code outside a fence (a chunk can start inside a code block)."""
    prose = _LINK.sub(r"\1", line)  # a Markdown link's brackets are not code
    return bool(_CODE_START.match(prose)) or len(_SYMBOLS.findall(prose)) > max(3, len(prose) // 12)


def sentences_of(text: str) -> list[str]:
    """The whole prose sentences of a chunk: code blocks, tables, headings and fragments left out."""
    out: list[str] = []
    # A chunk cut inside a code block starts with code and meets a bare closing fence first.
    fences = [line.strip() for line in text.splitlines() if line.strip().startswith("```")]
    in_code = bool(fences) and fences[0] == "```" and len(fences) % 2 == 1
    paragraph: list[str] = []

    def flush() -> None:
        if paragraph:
            joined = " ".join(paragraph)
            out.extend(s.strip() for s in _SENTENCE_END.split(joined) if s.strip())
            paragraph.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            flush()
            continue
        if in_code or not line or line.startswith(("|", "#")) or _looks_like_code(line):
            flush()
            continue
        if _MARKUP.match(line):
            flush()
            line = _MARKUP.sub("", line)
        paragraph.append(line)
    flush()
    return [s for s in out if _MIN_CHARS <= len(s) <= _MAX_CHARS and _WHOLE.match(s)]


def _stems(text: str) -> set[str]:
    # A five-letter prefix is a crude stem: "chunks"/"chunking", "split"/"splits" meet.
    return {w[:5] for w in _WORD.findall(text.lower()) if w not in _STOP}


def _share(wanted: set[str], text: str) -> float:
    """The share of the question's words that ``text`` contains."""
    return len(wanted & _stems(text)) / len(wanted) if wanted else 0.0


def _encode(encoder: Encoder, texts: Sequence[str], kind: Any) -> np.ndarray[Any, Any]:
    from ..batteries.vector import encode_texts

    vectors = run_sync(encode_texts(encoder, texts, kind))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    normalized: np.ndarray[Any, Any] = vectors / norms
    return normalized


def extract_answer(
    question: str, retrieved: Sequence[Retrievable], encoder: Encoder, *, sentences: int = 3
) -> list[Quote]:
    """The ``sentences`` retrieved sentences that best answer ``question``, best first, no repeats.

    A sentence scores by its similarity to the question under ``encoder``, plus
    the share of the question's words it contains, plus a share for the words
    of its section's heading, plus a little for coming from a higher-ranked chunk.
    A sentence that leans on the one before it ("It…", "This…") is not quoted.
    """
    wanted = _stems(question)
    candidates: list[tuple[str, str]] = []
    prior: list[float] = []
    seen: set[str] = set()
    for rank, record in enumerate(retrieved):
        source = record.source or record.id
        # The innermost heading of an ingested chunk's source (``page.md § Title › Section``).
        heading = re.split(r"[§›]", source)[-1] if "§" in source else ""
        bonus = 0.05 / (rank + 1) + _HEADING_WEIGHT * _share(wanted, heading)
        for sentence in sentences_of(record.content):
            key = sentence.lower()
            if key not in seen and not _LEANS_BACK.match(sentence):
                seen.add(key)
                candidates.append((sentence, source))
                prior.append(bonus)
    if not candidates:
        return []
    q = _encode(encoder, [question], "query")[0]
    overlap = np.array([_share(wanted, c[0]) for c in candidates], dtype=np.float32)
    similarity = _encode(encoder, [c[0] for c in candidates], "document") @ q
    scores = similarity + 0.5 * overlap + np.asarray(prior, dtype=np.float32)
    order = np.argsort(-scores, kind="stable")[:sentences]
    return [Quote(candidates[i][0], candidates[i][1], float(scores[i])) for i in order]
