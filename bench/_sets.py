"""Development sets for bench/quality.py: real text that ships offline, chunked as turnkit ingests it.

Corpora (each a list of documents, chunked with ``turnkit.ingest.split_text`` at
the ingest defaults, 1,024 tokens with 200 overlap):

- ``pydoc``: the Python language reference topics in the standard library's
  ``pydoc_data.topics`` (79 documents, technical prose with identifiers).
- ``pkgdocs``: the long descriptions (READMEs) of the distributions installed
  next to this interpreter, the first 8,000 characters of each.
- ``news``: Lee's background corpus (300 news stories shipped in gensim's
  test data; ``lee.cor`` and its ratings stay the topical set).

Known-item queries, one per style for each sampled document (seeded):

- ``lead``: the document's first sentence with the title's words removed
  (for news, which has no title, its capitalised words).
- ``keywords``: six distinct content words drawn from one sentence in the
  document's second half, in shuffled order.
- ``rare``: one identifier-like token (or, failing that, a word) that occurs in
  this document and no other.
- ``paraphrase``: another sentence (never the keyword one) with every word
  that is rare in the corpus (in at most 3 documents) and the title's words
  dropped: it says what the passage is about in common words, so the query
  shares the topic but not the distinctive terms.

A query scores when a chunk of its document is among the results.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from turnkit.ingest import split_text

STYLES = ("lead", "keywords", "rare", "paraphrase")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*[A-Za-z0-9_]")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")
_STOP = frozenset(
    """a an the and or but if then else of to in on at by for with from as is are was were be been
    being it its this that these those there here which who whom whose what when where why how not
    no nor so than too very can will just do does did has have had having you your he she they them
    their his her we our i me my us also into over under again further once all any both each few
    more most other some such only own same about against between through during before after above
    below up down out off may might must shall should would could one two new used use using""".split()
)


@dataclass(frozen=True, slots=True)
class Doc:
    id: str
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    target: str
    style: str


@dataclass(frozen=True, slots=True)
class KnownItemSet:
    name: str
    chunks: tuple[tuple[str, str, str], ...]  # (chunk id, doc id, text)
    queries: tuple[Query, ...]


def _gensim_data() -> Path:
    spec = importlib.util.find_spec("gensim")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("bench/quality.py needs gensim (Lee corpora, BM25): pip install -e '.[eval]'")
    return Path(spec.submodule_search_locations[0]) / "test" / "test_data"


def pydoc_docs() -> list[Doc]:
    from pydoc_data.topics import topics

    out = []
    for key in sorted(topics):
        text = topics[key]
        title = text.strip().splitlines()[0] if text.strip() else key
        out.append(Doc(f"pydoc:{key}", f"{key} {title}", text))
    return out


def pkgdocs_docs(limit_chars: int = 8000, min_chars: int = 2500) -> list[Doc]:
    seen: dict[str, Doc] = {}
    for dist in importlib.metadata.distributions():
        name = (dist.metadata.get("Name") or "").lower()
        body = dist.metadata.get_payload() or dist.metadata.get("Description") or ""  # type: ignore[attr-defined]
        if name and name not in seen and len(body) >= min_chars:
            seen[name] = Doc(f"pkg:{name}", name.replace("-", " ").replace("_", " "), body[:limit_chars])
    return [seen[k] for k in sorted(seen)]


def news_docs() -> list[Doc]:
    lines = (_gensim_data() / "lee_background.cor").read_text(encoding="latin-1").splitlines()
    return [Doc(f"news:{i}", "", line.strip()) for i, line in enumerate(lines) if line.strip()]


def lee_docs() -> list[str]:
    path = _gensim_data() / "lee.cor"
    return [line.strip() for line in path.read_text(encoding="latin-1").splitlines() if line.strip()]


CORPORA = {"pydoc": pydoc_docs, "pkgdocs": pkgdocs_docs, "news": news_docs}


def _sentences(text: str) -> list[str]:
    """Prose sentences: at least 8 words, mostly alphabetic (skips grammar rules and code)."""
    flat = re.sub(r"\s+", " ", text)
    out = []
    for s in _SENTENCE.split(flat):
        words = s.split()
        alpha = sum(1 for w in words if re.fullmatch(r"[A-Za-z][a-z]*[,.;:]?", w))
        if len(words) >= 8 and alpha >= 0.7 * len(words) and "*" not in s and "::=" not in s:
            out.append(s.strip())
    return out


def _content(words: list[str], banned: set[str]) -> list[str]:
    return [w for w in words if len(w) > 2 and w.lower() not in _STOP and w.lower() not in banned]


def _doc_freq(docs: list[Doc]) -> Counter[str]:
    df: Counter[str] = Counter()
    for d in docs:
        df.update({w.lower() for w in _WORD.findall(d.text)})
    return df


def _rare_token(doc: Doc, docs_with: dict[str, int], rnd: random.Random) -> str | None:
    tokens = sorted({t for t in _IDENT.findall(doc.text) if len(t) >= 5 and docs_with.get(t, 0) == 1})
    shaped = [t for t in tokens if "_" in t or "." in t or re.search(r"[a-z][A-Z]|\d", t)]
    pool = shaped or [t for t in tokens if t.isalpha() and t.lower() not in _STOP]
    return rnd.choice(pool) if pool else None


def known_item_set(name: str, *, per_style: int = 60, seed: int = 7) -> KnownItemSet:
    """Chunks of corpus ``name`` and up to ``per_style`` queries of each style (seeded)."""
    docs = CORPORA[name]()
    chunks = tuple(
        (f"{d.id}#{i}", d.id, piece)
        for d in docs
        for i, piece in enumerate(split_text(d.text))
        if piece.strip()
    )
    df = _doc_freq(docs)
    docs_with: Counter[str] = Counter()
    for d in docs:
        docs_with.update(set(_IDENT.findall(d.text)))
    rnd = random.Random(f"{seed}:{name}")
    order = list(docs)
    rnd.shuffle(order)
    picked: dict[str, list[Query]] = {s: [] for s in STYLES}
    for doc in order:
        if all(len(v) >= per_style for v in picked.values()):
            break
        sents = _sentences(doc.text)
        if len(sents) < 3 and name != "news":
            continue
        title = {w.lower() for w in _WORD.findall(doc.title)}
        made: dict[str, str] = {}
        if sents:
            words = sents[0].split()[:30]
            masked = [w for w in words if w.strip(".,;:\"'()").lower() not in title]
            if not title:  # no title: mask the names instead
                masked = [w for i, w in enumerate(masked) if i == 0 or not w[:1].isupper()]
            made["lead"] = " ".join(masked)
        late = list(range(len(sents) // 2, len(sents)))
        key_idx = None
        for idx in rnd.sample(late, len(late)):
            words = list(dict.fromkeys(_content(_WORD.findall(sents[idx]), title)))
            if len(words) >= 6:
                made["keywords"] = " ".join(rnd.sample(words, 6))
                key_idx = idx
                break
        token = _rare_token(doc, docs_with, rnd)
        if token:
            made["rare"] = token
        others = [i for i in range(1, len(sents)) if i != key_idx]
        for idx in rnd.sample(others, len(others)):
            words = [w for w in _content(_WORD.findall(sents[idx]), title) if df[w.lower()] > 3]
            if len(words) >= 4:
                made["paraphrase"] = " ".join(words[:8])
                break
        for style, text in made.items():
            if len(picked[style]) < per_style:
                picked[style].append(Query(text, doc.id, style))
    queries = tuple(q for s in STYLES for q in picked[s])
    return KnownItemSet(name, chunks, queries)
