"""bench/quality.py's developer-question set: hand-written questions over package docs, ingested by turnkit.

The corpus is what ``bench/devq_corpus.py`` builds (pygame, SQLAlchemy and ply
documentation from their PyPI artifacts, each reST page next to its HTML
rendering), ingested with ``turnkit.ingest`` at its defaults. The questions
are ``bench/data/devq_questions.json``: identifier, paraphrase and conceptual
questions, each labelled with the page(s) that answer it.

A question scores at k when one of the first k results is a chunk of one of its
pages (a page's reST source and its HTML count as the same page). MRR uses the
first such chunk in the first 10. ``dup@3`` is the share of answers whose first
three results hold the same text twice, from two different files: the same
normalised text, or a near-copy, one chunk's 5-word shingles contained in the
other's to at least ``NEAR_COPY`` (a page's source and its rendering cut into
chunks at different places). This measure is the bench's own, so it can check
the library's duplicate collapse. On this corpus 88% of the chunks of a page's
source have such a copy in its rendering, against 0.2% of random pairs of
chunks from different pages.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import lancedb  # noqa: TID251 - the bench reads every chunk back, with its metadata
import orjson
from _common import table
from devq_corpus import DATA, DEFAULT_CACHE, PAGES_FILE, build, page_key

from turnkit import InMemoryMessageStore, Message, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit.batteries.vector import VectorStore, create_vector_retrievable_callbacks, create_vector_store
from turnkit.ingest import ingest_sync

QUESTIONS_FILE = DATA / "devq_questions.json"
TYPES = ("identifier", "paraphrase", "conceptual")
NEAR_COPY = 0.5
K = 10
METRICS = ("hit@1", "hit@3", "hit@10", "MRR", "dup@3")
_WORDS = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    text: str
    pages: frozenset[str]


@dataclass
class Chunk:
    id: str
    file: str  # path under the corpus folder
    page: str
    text: str
    _shingles: frozenset[tuple[str, ...]] | None = field(default=None, repr=False)

    @property
    def normal(self) -> str:
        return " ".join(_WORDS.findall(self.text.lower()))

    @property
    def shingles(self) -> frozenset[tuple[str, ...]]:
        if self._shingles is None:
            words = _WORDS.findall(self.text.lower())
            self._shingles = frozenset(tuple(words[i : i + 5]) for i in range(max(1, len(words) - 4)))
        return self._shingles


def load_questions(path: Path = QUESTIONS_FILE) -> list[Question]:
    raw = json.loads(path.read_text())["questions"]
    return [Question(q["id"], q["type"], q["question"], frozenset(q["pages"])) for q in raw]


def same_text(a: Chunk, b: Chunk) -> bool:
    """Equal normalised text, or a near-copy (shingle containment of the smaller at least NEAR_COPY)."""
    if a.normal == b.normal:
        return True
    sa, sb = a.shingles, b.shingles
    return len(sa & sb) / max(1, min(len(sa), len(sb))) >= NEAR_COPY


def duplicate_pairs(ids: Sequence[str], chunks: dict[str, Chunk], k: int = 3) -> list[tuple[Chunk, Chunk]]:
    """Pairs among the first k results that hold the same text and come from different files."""
    top = [chunks[i] for i in ids[:k] if i in chunks]
    return [(a, b) for a, b in itertools.combinations(top, 2) if a.file != b.file and same_text(a, b)]


@dataclass
class Run:
    question: Question
    ids: list[str]


def scores(runs: list[Run], chunks: dict[str, Chunk]) -> dict[str, float]:
    def rank(r: Run) -> int | None:
        for i, c in enumerate(r.ids[:K]):
            if chunks[c].page in r.question.pages:
                return i + 1
        return None

    ranks = [rank(r) for r in runs]
    n = max(1, len(runs))
    out = {f"hit@{k}": sum(1 for x in ranks if x is not None and x <= k) / n for k in (1, 3, 10)}
    out["MRR"] = sum(1 / x for x in ranks if x is not None) / n
    out["dup@3"] = sum(1 for r in runs if duplicate_pairs(r.ids, chunks)) / n
    return out


# -- the corpus in a store --------------------------------------------------------------------------


def ingest_corpus(
    corpus: Path, encoder: object, label: str
) -> tuple[VectorStore, str, dict[str, Chunk], float]:
    uri = tempfile.mkdtemp(prefix=f"devq-{label}-")
    import atexit

    atexit.register(shutil.rmtree, uri, ignore_errors=True)
    vs = create_vector_store(uri=uri, encoder=encoder, auto_optimize=None)  # type: ignore[arg-type]
    started = time.perf_counter()
    ingest_sync(corpus, store=vs, collection="devq", progress=False)
    took = time.perf_counter() - started
    rows = (
        lancedb.connect(uri).open_table("devq").to_arrow().select(["id", "document", "metadata"]).to_pylist()
    )
    chunks: dict[str, Chunk] = {}
    root = corpus.resolve().as_uri().rstrip("/") + "/"
    for row in rows:
        meta = row["metadata"]
        meta = orjson.loads(meta) if isinstance(meta, str | bytes) else meta
        rel = str(meta["source_uri"]).removeprefix(root)
        key = page_key(rel)
        assert key is not None, rel
        chunks[row["id"]] = Chunk(row["id"], rel, key, row["document"] or "")
    return vs, uri, chunks, took


def default_answers(
    vs: VectorStore,
    collection: str,
    texts: Sequence[str],
    *,
    top_k: int = K,
    excludes: Sequence[str | None] | None = None,
) -> list[list[str]]:
    """What a turn gets from the retrieval callbacks with no ranking options, one answer per text.

    ``top_k`` (10, to read hit@10) and the filter that leaves out a query's own
    record (Lee) are the only options passed: whatever ranking the callbacks do
    by default is what this measures.
    """
    history = InMemoryMessageStore()
    runners: dict[str | None, TurnRunner] = {}

    def runner(exclude: str | None) -> TurnRunner:
        if exclude not in runners:
            callbacks = create_vector_retrievable_callbacks(
                store=vs,
                collection=collection,
                trust_tier="first-party",
                top_k=top_k,
                filter=None if exclude is None else {"id": {"$ne": exclude}},
            )
            config = TurnRunnerConfig(
                model=ScriptedModel(["ok"]),
                fetch_messages=history.fetch_messages,
                store_message=history.store_message,
                **callbacks,
            )
            runners[exclude] = TurnRunner(config)
        return runners[exclude]

    async def ask(text: str, exclude: str | None, n: int) -> list[str]:
        ctx = runner(exclude).new_context(conversation_id=f"q{n}")
        await history.store_message(ctx, Message(role="user", content=text))
        return [r.id for r in await ctx.fetch_retrievables()]

    async def all_of() -> list[list[str]]:
        skip = excludes or [None] * len(texts)
        return [await ask(t, x, n) for n, (t, x) in enumerate(zip(texts, skip, strict=True))]

    return asyncio.run(all_of())


def systems(
    vs: VectorStore, bm25: Callable[[str], list[str]], enc: str
) -> dict[str, Callable[[Question], list[str]]]:
    def near(q: Question) -> list[str]:
        return [m.id for m in vs("devq").near_text(q.text).select("id").limit(K).search_sync()]

    def hybrid(q: Question) -> list[str]:
        return [m.id for m in vs("devq").near_text(q.text).hybrid().select("id").limit(K).search_sync()]

    return {
        f"near_text(), vector only ({enc})": near,
        f".near_text().hybrid() ({enc})": hybrid,
        "BM25 (gensim)": lambda q: bm25(q.text)[:K],
    }


DEFAULT_LABEL = "default of every surface: callbacks, no options"


def first_right(run: Run, chunks: dict[str, Chunk]) -> int | None:
    return next((i + 1 for i, c in enumerate(run.ids[:K]) if chunks[c].page in run.question.pages), None)


def collapse_headroom(
    answers: dict[str, list[Run]], plain: str, collapsed: str, chunks: dict[str, Chunk]
) -> str:
    """How much hit@3 duplicate collapse could add: where a wrong page's copies hold top-3 slots.

    A copy of the right page in the first three is already a hit, so collapse
    can raise hit@3 only for a question whose first right page is below 3 while
    copies of a wrong page sit above it.
    """
    with_pair = right_copies = 0
    room: list[str] = []
    for run, after in zip(answers[plain], answers[collapsed], strict=True):
        pairs = duplicate_pairs(run.ids, chunks)
        if not pairs:
            continue
        with_pair += 1
        wrong = [a for a, _ in pairs if a.page not in run.question.pages]
        right_copies += len(wrong) < len(pairs)
        rank = first_right(run, chunks)
        if wrong and (rank is None or rank > 3):
            room.append(f"{run.question.id} {rank} -> {first_right(after, chunks)}")
    return (
        f"\ncollapse headroom ({plain}): {with_pair} of {len(answers[plain])} answers hold a text twice in"
        f" their first three; {right_copies} of them copies of a right page (already a hit at 3);"
        f" {len(room)} where a wrong page's copies sit above a right page below 3 (first right rank,"
        f" plain -> collapsed): {', '.join(room) or 'none'}"
    )


def devq_section(
    encoders: dict[str, object],
    lexical: Callable[[Sequence[tuple[str, str]]], dict[str, Callable[[str], list[str]]]],
    *,
    cache: Path = DEFAULT_CACHE,
    download: bool = False,
    corpus: Path | None = None,
) -> None:
    """Build the corpus, ingest it once per encoder, and print the dev set's tables."""
    questions = load_questions()
    folder = corpus or Path(tempfile.mkdtemp(prefix="devq-corpus-"))
    if corpus is None:
        import atexit

        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    manifest = build(folder, cache, download=download)
    expected = json.loads(PAGES_FILE.read_text())
    if manifest["sha256"] != expected["sha256"]:
        print(f"  warning: the corpus differs from {PAGES_FILE.name}; labels may not match", file=sys.stderr)
    rows: list[tuple[str, ...]] = []
    dups: Counter[tuple[str, str, str]] = Counter()
    done_bm25 = False
    answers_by_enc: dict[str, dict[str, list[Run]]] = {}
    chunks_by_enc: dict[str, dict[str, Chunk]] = {}
    for enc, encoder in encoders.items():
        vs, _, chunks, took = ingest_corpus(folder, encoder, enc)
        print(
            f"  devq: {len(chunks)} chunks of {manifest['files']} files, {enc}, ingested in {took:.0f} s",
            file=sys.stderr,
        )
        bm25 = lexical(sorted((c.id, c.text) for c in chunks.values()))["BM25 (gensim)"]
        answers: dict[str, list[Run]] = {}
        for label, fn in systems(vs, bm25, enc).items():
            if label.startswith("BM25") and done_bm25:
                continue
            answers[label] = [Run(q, fn(q)) for q in questions]
        done_bm25 = True
        answers_by_enc[enc], chunks_by_enc[enc] = answers, chunks
        answers[f"{DEFAULT_LABEL} ({enc})"] = [
            Run(q, ids)
            for q, ids in zip(
                questions, default_answers(vs, "devq", [q.text for q in questions]), strict=True
            )
        ]
        for label, runs in answers.items():
            for subset in ("all", *TYPES):
                sub = [r for r in runs if subset == "all" or r.question.type == subset]
                s = scores(sub, chunks)
                rows.append((label, subset, str(len(sub)), *[f"{s[m]:.2f}" for m in METRICS]))
            for r in runs:
                for a, b in duplicate_pairs(r.ids, chunks):
                    dups[(label, *sorted((a.file, b.file)))] += 1  # type: ignore[arg-type]
    print("\n## Developer questions (bench/data/devq_questions.json) over package docs ingested by turnkit\n")
    print(table(rows, ("system", "questions", "n", *METRICS)))
    print(
        f"\ncorpus: {', '.join(f'{k} {v}' for k, v in manifest['packages'].items())};"  # type: ignore[union-attr]
        f" dup@3: first three results hold the same text twice from two files (near-copy >= {NEAR_COPY})"
    )
    for enc in encoders:
        print(
            collapse_headroom(
                answers_by_enc[enc],
                f".near_text().hybrid() ({enc})",
                f"{DEFAULT_LABEL} ({enc})",
                chunks_by_enc[enc],
            )
        )
    print("\nRepeated texts in the first three (system: file, file x answers):\n")
    shown: Counter[str] = Counter()
    for (label, a, b), n in sorted(dups.items(), key=lambda kv: (kv[0][0], -kv[1])):
        shown[label] += 1
        if shown[label] <= 15:  # the most frequent pairs of each system
            print(f"  {label}: {a} = {b} x{n}")
