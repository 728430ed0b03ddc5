"""The full-text leg of hybrid search answered from the in-memory copy, with LanceDB's BM25 scores.

LanceDB's FTS index, as `ensure_fts_index` builds it (the "simple" tokenizer,
lower case, ASCII folding, tokens of 40 bytes or more dropped, no stemming,
stop words kept), scores a document for a query's known tokens t (a repeated
token counts again) as

    sum_t idf(t) * (k1 + 1) * f / (f + k1 * (1 - b + b * dl / avgdl))

with k1 = 1.2, b = 0.75, idf(t) = ln((N - n_t + 0.5) / (n_t + 0.5) + 1), all in
float32. N counts the indexed documents that hold at least one token (empty
and punctuation-only documents are not in the index), dl is a document's
token count and avgdl is the total over N. A phrase clause of the boolean
query (`full_text_query`) adds, for each document holding the phrase's tokens
at consecutive positions, the same sum over the phrase's tokens (repeats
included). Both clauses are evaluated in full and summed before the top k.

The copy reproduces that only where its tokenizer is provably LanceDB's
(`analyze`): ASCII words, and non-ASCII characters whose role it knows. A
separator (punctuation, space, symbol, an accent written apart) splits words;
a letter of a script ASCII folding leaves alone (Greek, Cyrillic, CJK, ...)
makes a word no ASCII query can match; an accented Latin letter is folded to
ASCII by a guess LanceDB confirms (`folds`); a combining mark is a letter or a
separator as LanceDB answers (`learn_marks`); a letter or digit with no known
folding makes a word whose possible ASCII foldings send matching queries to
LanceDB. Any other character (an enclosed letter, an unassigned code point)
sends the whole version to LanceDB, as do a query with non-ASCII letters or a
word of 40 bytes or more, and an index LanceDB would score otherwise: other
options, rows appended after the index was built (scored by a different,
order-dependent flat search), or rows deleted since (still counted in N),
which one LanceDB query compares before the copy is trusted.

Equal scores: LanceDB sums the clauses in a hash map and sorts it unstably,
so its order among equal scores is unspecified; here they keep id order.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from turnkit.batteries.vector._errors import Unsupported

__all__ = [
    "B",
    "EXPECTED_DETAILS",
    "K1",
    "LexicalIndex",
    "Unsupported",
    "analyze",
    "details_match",
    "idf",
    "learn_marks",
    "marks_to_learn",
    "plain",
    "tokens",
    "top",
]

K1 = np.float32(1.2)
B = np.float32(0.75)
MAX_TOKEN = 40  # LanceDB's default max_token_length: tokens of this many bytes or more are dropped
_WORD = re.compile(r"[a-z0-9]+")
# A-Z to a-z, a-z and 0-9 kept, the row mark \x01 to Z, every other byte a space.
_BYTES = bytes(
    c + 32 if 65 <= c <= 90 else c if chr(c).isascii() and chr(c).isalnum() else 90 if c == 1 else 32
    for c in range(256)
)
_CHUNK = 2048  # documents tokenized per numpy pass (bounds the temporary token lists)
# The index options this copy reproduces (what `ensure_fts_index` asks for, with LanceDB's defaults).
EXPECTED_DETAILS: dict[str, Any] = {
    "base_tokenizer": "simple",
    "max_token_length": MAX_TOKEN,
    "lower_case": True,
    "stem": False,
    "remove_stop_words": False,
    "ascii_folding": True,
    "custom_stop_words": None,
}
# Options newer LanceDB versions add: each must be absent or at the value that changes nothing.
_NEUTRAL_DETAILS: dict[str, Any] = {
    "lance_tokenizer": ("text", None),
    "split_identifiers": (False, None),
    "split_on_numerics": (False, None),
    "preserve_original": (False, None),
    "index_operators": (False, None),
}
_KNOWN_DETAILS = {*EXPECTED_DETAILS, *_NEUTRAL_DETAILS, "with_position", "language", "block_size"}
_KNOWN_DETAILS |= {"min_ngram_length", "max_ngram_length", "prefix_only"}  # ngram tokenizer only
_SEPARATING = {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Zs", "Zl", "Zp", "Cc", "Cf", "Sm", "Sc", "Sk", "So"}
_kinds: dict[str, str] = {}
_mark_letters: dict[str, bool] = {}  # combining marks LanceDB was asked about: a letter (True) or not
_UWORD = re.compile(r"[^\W_]+")  # letters and digits of any script (checked against LanceDB's per character)
# Scripts ASCII folding maps nothing of: Greek, Cyrillic, Armenian, Hebrew, Arabic, Indic to Thai, Georgian,
# Hangul, CJK and kana.
_KEPT_SCRIPTS = (
    (0x0370, 0x03FF),
    (0x1F00, 0x1FFF),
    (0x0400, 0x052F),
    (0x0530, 0x06FF),
    (0x0900, 0x0E7F),
    (0x10A0, 0x11FF),
    (0x2E80, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0x20000, 0x3FFFF),
)
# Combining marks that are not alphabetic (accents written apart, variation selectors): separators.
_PLAIN_MARKS = ((0x0300, 0x0344), (0x0346, 0x036F), (0x20D0, 0x20FF), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
# Latin letters ASCII folding maps that Unicode decomposition does not (a wrong guess is caught: `folds`).
_SPECIAL = {
    "ß": "ss",
    "æ": "ae",
    "ø": "o",
    "œ": "oe",
    "ł": "l",
    "đ": "d",
    "ð": "d",
    "þ": "th",
    "ı": "i",
    "ŀ": "l",
}


def details_match(details: dict[str, Any]) -> bool:
    """Whether an FTS index with these ``index_details`` tokenizes as this copy does."""
    if any(key not in _KNOWN_DETAILS for key in details):
        return False  # an option this copy does not know might change the tokens
    if any(details.get(key) != value for key, value in EXPECTED_DETAILS.items()):
        return False
    return all(details.get(key) in values for key, values in _NEUTRAL_DETAILS.items())


def _kind(char: str) -> str:
    """What a non-ASCII character is to LanceDB's tokenizer, as far as this copy can tell.

    ``"separator"``, ``"kept"`` (a letter or digit of a script ASCII folding
    leaves alone, so its token never equals an ASCII word), ``"folded"`` (a
    letter or digit whose token may fold to ASCII: checked against LanceDB),
    ``"mark"`` (a combining mark: a letter to LanceDB when Unicode calls it
    alphabetic, which `learn_marks` asks LanceDB), or ``"unknown"``
    (unassigned code points, enclosed letters: LanceDB answers).
    """
    found = _kinds.get(char)
    if found is None:
        code = ord(char)
        category = unicodedata.category(char)
        word = _UWORD.fullmatch(char) is not None
        if 0x2460 <= code <= 0x24FF or 0x1F100 <= code <= 0x1F1FF:
            found = "unknown"  # enclosed alphanumerics: alphabetic to LanceDB, and folded
        elif (category in _SEPARATING or any(lo <= code <= hi for lo, hi in _PLAIN_MARKS)) and not word:
            found = "separator"
        elif category[0] in "LN" and word:
            # Digits of other scripts may fold to ASCII digits: only letters are surely kept.
            kept = category[0] == "L" and any(lo <= code <= hi for lo, hi in _KEPT_SCRIPTS)
            found = "kept" if kept else "folded"
        elif category in ("Mn", "Mc") and not word:
            found = "mark"  # alphabetic to LanceDB or not (Unicode's Other_Alphabetic): `learn_marks`
        else:
            found = "unknown"
        _kinds[char] = found
    return found


def plain(text: str) -> bool:
    """Whether ``text`` is ASCII but for word separators (punctuation, spaces, symbols)."""
    return text.isascii() or all(_kind(c) == "separator" for c in set(text) if not c.isascii())


def _fold(token: str) -> str | None:
    """A guess at ASCII folding of a lower-cased token, or ``None`` when it is not all ASCII letters."""
    out = []
    for char in token:
        mapped = char if char.isascii() else _SPECIAL.get(char)
        if mapped is None:
            mapped = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
        if not (mapped.isascii() and mapped.isalnum()):
            return None
        out.append(mapped.lower())
    return "".join(out)


def marks_to_learn(documents: Sequence[str | None]) -> set[str]:
    """The combining marks in ``documents`` whose role (letter or separator) LanceDB has not told yet."""
    found: set[str] = set()
    for doc in documents:
        if doc and not doc.isascii():
            found.update(
                c for c in set(doc) if not c.isascii() and _kind(c) == "mark" and c not in _mark_letters
            )
    return found


def learn_marks(letters: dict[str, bool]) -> None:
    """Record which combining marks LanceDB's tokenizer counts as letters (``True``) or separators."""
    _mark_letters.update(letters)
    _pattern.cache_clear()


@functools.cache
def _pattern() -> re.Pattern[str]:
    marks = "".join(re.escape(c) for c, letter in sorted(_mark_letters.items()) if letter)
    return re.compile(r"(?:[^\W_]" + (f"|[{marks}]" if marks else "") + ")+")


def analyze(
    text: str, folds: dict[str, str] | None = None, unsure: set[str] | None = None
) -> list[str | None]:
    """LanceDB's tokens of ``text`` by position; ``None`` for a token of 40 bytes or more (dropped).

    A token holding a letter of a script ASCII folding leaves alone comes back
    as an opaque non-ASCII string (it can never equal a query word). One that
    may fold to ASCII comes back as the guessed fold, recorded in ``folds``
    (token as written -> fold) for LanceDB to confirm; with no guess, it is
    opaque too and a pattern of the ASCII words it might fold to goes to
    ``unsure`` (a query holding such a word goes to LanceDB).

    Raises:
        Unsupported: ``text`` holds a character whose role is not known here.
    """
    if plain(text):
        return [t if len(t) < MAX_TOKEN else None for t in _WORD.findall(text.lower())]
    for c in set(text):
        kind = "ascii" if c.isascii() else _kind(c)
        if kind == "unknown" or (kind == "mark" and c not in _mark_letters):
            raise Unsupported(c)
    out: list[str | None] = []
    for token in _pattern().findall(text):
        if len(token.encode()) >= MAX_TOKEN:  # LanceDB drops long tokens before lower-casing them
            out.append(None)
        elif token.isascii():
            out.append(token.lower())
        elif any(_kind(c) == "kept" for c in token if not c.isascii()):
            out.append("\x00" + token)  # never an ASCII word, whatever its case and folding
        else:
            folded = _fold("".join(c.lower() for c in token))  # LanceDB lower-cases char by char
            if folded is None:
                if unsure is None:
                    raise Unsupported(token)
                # Folded, each such character is at most a few ASCII letters, or stays as it is.
                unsure.add("".join(re.escape(c.lower()) if c.isascii() else "[a-z0-9]{0,4}" for c in token))
                out.append("\x00" + token)
                continue
            if folds is not None:
                folds[token] = folded
            out.append(folded)
    return out


def tokens(text: str) -> list[str]:
    """LanceDB's tokens of a `plain` text, long ones dropped (their positions stay taken)."""
    return [t for t in _WORD.findall(text.lower()) if len(t) < MAX_TOKEN]


def _weights(freq: npt.NDArray[np.float32], length: npt.NDArray[np.float32], avgdl: np.float32) -> Any:
    """LanceDB's document weight, operation by operation in float32."""
    norm = K1 * ((np.float32(1.0) - B) + (B * length) / avgdl)
    return ((K1 + np.float32(1.0)) * freq) / (freq + norm)


def idf(df: Any, n: int) -> Any:
    """LanceDB's idf in float32 (the logarithm rounded once from float64)."""
    nf = np.float32(n)
    dff = np.asarray(df, dtype=np.float32)
    x = ((nf - dff) + np.float32(0.5)) / (dff + np.float32(0.5)) + np.float32(1.0)
    return np.log(x.astype(np.float64)).astype(np.float32)


class LexicalIndex:
    """Posting lists of one cached version: per token, its documents and their BM25 weights."""

    def __init__(self, documents: Sequence[str | None]) -> None:
        self.rows = len(documents)
        vocab: dict[str, int] = {}
        lengths = np.zeros(self.rows, dtype=np.int64)
        pieces: list[tuple[Any, Any, Any]] = []
        self.folds: dict[str, str] = {}  # tokens whose ASCII folding LanceDB must confirm
        unsure: set[str] = set()
        self.plain = np.ones(self.rows, dtype=bool)
        for start in range(0, self.rows, _CHUNK):
            chunk = [doc or "" for doc in documents[start : start + _CHUNK]]
            ids, docs = self._chunk(chunk, start, vocab, unsure)
            lengths[start : start + len(chunk)] = np.bincount(docs - start, minlength=len(chunk))
            keys, freqs = np.unique(ids * self.rows + docs, return_counts=True)
            # int32 from here: a third of the memory the build peaks at (100,000 rows: 15 million postings).
            token_ids, row_ids = np.divmod(keys, self.rows)
            pieces.append((token_ids.astype(np.int32), row_ids.astype(np.int32), freqs.astype(np.int32)))
        empty = (np.zeros(0, np.int32),) * 3
        tok, rows, counts = (np.concatenate(c) for c in zip(*pieces, empty, strict=True))
        order = np.argsort(tok, kind="stable")  # chunks come in document order: postings stay sorted by row
        self.vocab = vocab
        self.post_rows: npt.NDArray[np.int32] = rows[order]
        freq = counts[order].astype(np.float32)
        self.offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(tok, minlength=len(vocab)), out=self.offsets[1:])
        self.docs = int(np.count_nonzero(lengths))  # LanceDB leaves documents without tokens out of N
        total = int(lengths.sum())
        self.avgdl = np.float32(total) / np.float32(self.docs) if self.docs else np.float32(1.0)
        self.weights: npt.NDArray[np.float32] = _weights(
            freq, lengths[self.post_rows].astype(np.float32), self.avgdl
        )
        self.idf: npt.NDArray[np.float32] = idf(np.diff(self.offsets), self.docs)
        # Query words one of the tokens without a known folding might be (those queries go to LanceDB).
        self.unsure = re.compile("|".join(sorted(unsure))) if unsure else None

    def _chunk(
        self, chunk: list[str], start: int, vocab: dict[str, int], unsure: set[str]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Token ids and row numbers of a chunk's tokens (the plain rows in one regex pass)."""
        odd = [i for i, doc in enumerate(chunk) if not doc.isascii()]
        chars = set().union(*(set(chunk[i]) for i in odd))
        letters = "".join(re.escape(c) for c in chars if not c.isascii() and _kind(c) != "separator")
        special = {i for i, doc in enumerate(chunk) if "\x01" in doc}  # the row mark below
        if letters:
            found = re.compile(f"[{letters}]")
            special.update(i for i in odd if found.search(chunk[i]))
        # One pass over the chunk's plain rows as UTF-8: letters and digits kept (lower-cased), every
        # other byte a space (a plain row's non-ASCII characters all separate words), and \x01 between
        # rows made a lone Z, which no lower-cased row holds: it marks where each row ends.
        joined = "\n\x01\n".join("" if i in special else doc for i, doc in enumerate(chunk))
        words = joined.encode().translate(_BYTES).split()
        local: dict[bytes, int] = {}
        for word in dict.fromkeys(words):
            if word == b"Z":
                local[word] = -2
            elif len(word) >= MAX_TOKEN:
                local[word] = -1  # dropped, as LanceDB drops it
            else:
                local[word] = vocab.setdefault(word.decode(), len(vocab))
        ids = np.fromiter(map(local.__getitem__, words), dtype=np.int64, count=len(words))
        rows = np.cumsum(ids == -2) + start
        keep = ids >= 0
        ids, rows = ids[keep], rows[keep]
        if special:
            more_ids: list[int] = []
            more_rows: list[int] = []
            for i in sorted(special):
                self.plain[start + i] = False
                found_tokens = [t for t in analyze(chunk[i], self.folds, unsure) if t is not None]
                more_ids.extend(vocab.setdefault(t, len(vocab)) for t in found_tokens)
                more_rows.extend([start + i] * len(found_tokens))
            ids = np.concatenate([ids, np.asarray(more_ids, dtype=np.int64)])
            rows = np.concatenate([rows, np.asarray(more_rows, dtype=np.int64)])
        return ids, rows

    @property
    def nbytes(self) -> int:
        # The vocabulary dict: about 100 bytes a token (key object, hash slot, int).
        arrays = self.post_rows.nbytes + self.weights.nbytes + self.offsets.nbytes + self.idf.nbytes
        arrays += self.plain.nbytes
        return int(arrays + 100 * len(self.vocab))

    def postings(self, token: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        lo, hi = int(self.offsets[token]), int(self.offsets[token + 1])
        return self.post_rows[lo:hi], self.weights[lo:hi]

    def probe_token(self) -> tuple[str, int] | None:
        """A token and its document count, to compare one query with LanceDB's answer."""
        if not self.vocab:
            return None
        df = np.diff(self.offsets)
        for token, i in self.vocab.items():
            if not token.isascii():
                df[i] = 0  # an opaque token: not a word a query can hold
        best = int(np.argmax(df))
        return next(t for t, i in self.vocab.items() if i == best), int(df[best])

    def scores(
        self, text: str, phrases: Sequence[str], documents: Sequence[str | None]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]] | None:
        """Every matching row and its score, or ``None`` when LanceDB must answer the query.

        ``phrases`` are the query's phrase clauses (empty when the index has no
        positions); ``documents`` are the rows' texts, read to check phrase
        order on the rows that hold all of a phrase's tokens.
        """
        if not plain(text) or any(not plain(p) for p in phrases):
            return None
        words = _WORD.findall(" ".join([text, *phrases]).lower())
        if any(len(t) >= MAX_TOKEN for t in words):
            return None  # a dropped query token still takes a position: not reproduced here
        if self.unsure is not None and any(self.unsure.fullmatch(t) for t in words):
            return None
        total = np.zeros(self.rows, dtype=np.float32)
        hit = np.zeros(self.rows, dtype=bool)
        for token in [self.vocab[t] for t in tokens(text) if t in self.vocab]:  # repeats count again
            rows, weights = self.postings(token)
            total[rows] += self.idf[token] * weights
            hit[rows] = True
        for phrase in phrases:
            found = self._phrase(tokens(phrase), documents)
            if found is not None:
                rows, score = found
                total[rows] += score
                hit[rows] = True
        matched = np.flatnonzero(hit)
        return matched, total[matched]

    def _holds(self, pattern: re.Pattern[str], words: list[str], text: str, row: int) -> bool:
        if self.plain[row]:
            return pattern.search(text.lower()) is not None
        found, n = analyze(text, None, set()), len(words)
        return any(found[i : i + n] == words for i in range(len(found) - n + 1))

    def _phrase(
        self, words: list[str], documents: Sequence[str | None]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]] | None:
        """Rows holding ``words`` at consecutive positions, and the phrase clause's score for each."""
        if not words or any(w not in self.vocab for w in words):
            return None  # LanceDB: a phrase with an unknown token matches nothing
        ids = [self.vocab[w] for w in words]
        rows = self.postings(min(ids, key=lambda t: self.offsets[t + 1] - self.offsets[t]))[0]
        for token in set(ids):
            rows = np.intersect1d(rows, self.postings(token)[0], assume_unique=True)
        if len(words) > 1 and len(rows):
            # Consecutive positions: in plain text, the words with only non-word characters between them.
            pattern = re.compile(r"(?<![a-z0-9])" + r"[^a-z0-9]+".join(words) + r"(?![a-z0-9])")
            keep = [r for r in rows.tolist() if self._holds(pattern, words, documents[r] or "", r)]
            rows = np.asarray(keep, dtype=np.int32)
        if not len(rows):
            return None
        score = np.zeros(len(rows), dtype=np.float32)
        for token in ids:  # a repeated word counts once per occurrence in the phrase
            posted, weights = self.postings(token)
            score += self.idf[token] * weights[np.searchsorted(posted, rows)]
        return rows, score


def top(
    matched: npt.NDArray[np.intp],
    scores: npt.NDArray[np.float32],
    mask: npt.NDArray[np.bool_] | None,
    id_rank: npt.NDArray[np.int64],
    limit: int,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
    """The best ``limit`` of the matched rows inside ``mask``, best first, equal scores in id order."""
    if mask is not None:
        keep = mask[matched]
        matched, scores = matched[keep], scores[keep]
    if limit < len(matched):
        kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
        keep = scores >= kth
        matched, scores = matched[keep], scores[keep]
    order = np.lexsort((id_rank[matched], -scores))[:limit]
    return matched[order], scores[order]
