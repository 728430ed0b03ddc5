"""The in-memory full-text leg against LanceDB's own FTS query on the same rows."""

from __future__ import annotations

import asyncio
import re
import tempfile
import time
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import MemoryCache, create_vector_store
from turnkit.batteries.vector.ranking._phrases import query_phrases
from turnkit.batteries.vector.store import _memory_bm25
from turnkit.batteries.vector.store._hybrid import _folds_agree, _mark_letters, full_text_query
from turnkit.batteries.vector.store._memory_bm25 import LexicalIndex, top

WORDS = ["alpha", "beta", "gamma", "os", "path", "join", "socket", "options", "the", "a", "x42", "Foo"]
# Non-ASCII text of each kind the copy handles: accented Latin letters (folded to ASCII, as LanceDB
# confirms), scripts folding leaves alone, a combining mark LanceDB takes as a letter (the Arabic
# shadda) or as a separator (an accent written apart), an IPA word with no known folding, symbols.
UNICODE = ["café", "Décembre", "straße", "Ærø", "января", "ドメイン", "تقدّم", "e\u0301x", "ɡʁif", "“q”", "x²"]
PIECES = [
    *WORDS,
    *UNICODE,
    "os.path.join",
    "socket_options",
    '"path join"',
    "...",
    "—",
    ",",
    "x" * 39,
    "y" * 40,
]
document = st.lists(st.sampled_from(PIECES), max_size=25).map(" ".join)
QUERY_PIECES = [
    *WORDS,
    "cafe",
    "decembre",
    "strasse",
    "if",
    "os.path.join",
    "socket_options",
    '"path join"',
    "zzz",
]
query = st.lists(st.sampled_from(QUERY_PIECES), min_size=1, max_size=5)
# Filters and the rows they keep: a third of the rows, and two (LanceDB then scans the few rows it keeps).
FILTERS: dict[str | None, Any] = {None: None, "n % 3 = 0": lambda n: n % 3 == 0, "n < 2": lambda n: n < 2}


async def _lancedb(docs: list[str], queries: list[str], where: str | None) -> list[dict[str, float]]:
    import lancedb  # noqa: TID251 - LanceDB's own FTS query on a table built below the store
    from lancedb.index import FTS  # noqa: TID251 - the index options `ensure_fts_index` uses

    db = await lancedb.connect_async(tempfile.mkdtemp())
    ids = [f"d{i:03d}" for i in range(len(docs))]
    table = await db.create_table("t", pa.table({"id": ids, "document": docs, "n": list(range(len(docs)))}))
    # The options `ensure_fts_index` builds the index with.
    await table.create_index("document", config=FTS(stem=False, remove_stop_words=False, with_position=True))
    out = []
    for text in queries:
        search = table.query().nearest_to_text(full_text_query(text, True))
        if where is not None:
            search = search.where(where)
        rows = await search.select(["id", "_score"]).limit(1000).to_list()
        out.append({r["id"]: float(r["_score"]) for r in rows})
    return out


def _memory(docs: list[str], queries: list[str], where: str | None) -> list[dict[str, float] | None]:
    """The copy's answers, built as a store builds them (marks and foldings confirmed by LanceDB)."""
    marks = _memory_bm25.marks_to_learn(docs)
    if marks:
        _memory_bm25.learn_marks(asyncio.run(_mark_letters(marks)))
    index = LexicalIndex(docs)
    assert asyncio.run(_folds_agree(index.folds))
    ids = [f"d{i:03d}" for i in range(len(docs))]
    keep = FILTERS[where]
    mask = None if keep is None else keep(np.arange(len(docs)))
    out: list[dict[str, float] | None] = []
    for text in queries:
        scored = index.scores(text, query_phrases(text), docs)
        if scored is None:  # a word a token of unknown folding might be: LanceDB answers it
            out.append(None)
            continue
        rows, scores = top(*scored, mask, np.arange(len(docs)), 1000)
        assert list(scores) == sorted(scores, reverse=True)
        out.append({ids[r]: float(s) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)})
    return out


def _same(mine: dict[str, float] | None, theirs: dict[str, float]) -> bool:
    """The same ids with the same scores: the same order but among equal scores (LanceDB leaves it open)."""
    if mine is None:
        return True  # LanceDB answers this one
    return mine.keys() == theirs.keys() and all(
        abs(mine[k] - theirs[k]) <= 1e-5 * max(1.0, theirs[k]) for k in mine
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    docs=st.lists(document, min_size=1, max_size=40),
    queries=st.lists(query.map(" ".join), min_size=1, max_size=4),
    where=st.sampled_from(list(FILTERS)),
)
def test_memory_scores_equal_lancedb_fts(docs: list[str], queries: list[str], where: str | None) -> None:
    theirs = asyncio.run(_lancedb(docs, queries, where))
    mine = _memory(docs, queries, where)
    for text, a, b in zip(queries, mine, theirs, strict=True):
        assert _same(a, b), (text, a, b)


FIXED_DOCS = [
    "alpha beta os.path.join",
    "alpha alpha gamma, the socket_options of the path",
    "os path join join os ...",
    "beta",
    "gamma — gamma gamma alpha beta",
    "x42.Foo and foo",
]
FIXED_QUERIES = ["alpha os.path.join", "gamma beta", "foo x42", '"path join" the']


@pytest.mark.parametrize(
    "name, value",
    [
        ("K1", np.float32(1.3)),
        ("B", np.float32(0.7)),
        ("_WORD", re.compile(r"[a-z0-9.]+")),
        # The rows' tokenizer: a dot kept inside words, as in "os.path.join".
        ("_BYTES", _memory_bm25._BYTES[:46] + b"." + _memory_bm25._BYTES[47:]),
    ],
)
def test_the_comparison_sees_a_perturbed_scorer(
    monkeypatch: pytest.MonkeyPatch, name: str, value: Any
) -> None:
    theirs = asyncio.run(_lancedb(FIXED_DOCS, FIXED_QUERIES, None))
    assert all(_same(a, b) for a, b in zip(_memory(FIXED_DOCS, FIXED_QUERIES, None), theirs, strict=True))
    monkeypatch.setattr(_memory_bm25, name, value)
    assert not all(_same(a, b) for a, b in zip(_memory(FIXED_DOCS, FIXED_QUERIES, None), theirs, strict=True))


def _store(full_text: bool, collection: str, docs: list[str]) -> Any:
    vs = create_vector_store(
        uri="memory://", auto_optimize=None, memory_cache=MemoryCache(full_text=full_text)
    )
    rng = np.random.default_rng(7)
    vs(collection).upsert_sync(
        [
            {"id": f"r{i}", "document": d, "vector": rng.normal(size=8).tolist(), "metadata": {"n": i % 3}}
            for i, d in enumerate(docs)
        ]
    )
    return vs


def _hybrid(vs: Any, collection: str, text: str, **where: Any) -> list[tuple[str, float]]:
    q = vs(collection).near_vector(np.ones(8).tolist()).hybrid(text=text).limit(6)
    if where:
        q = q.where(*next(iter(where.items())))
    return [(m.id, m.score) for m in q.select("id", "document").search_sync()]


def _same_results(fast: list[tuple[str, float]], slow: list[tuple[str, float]]) -> None:
    """The same ids in the same order; fused scores equal to float32 rounding of the BM25 inputs."""
    assert [i for i, _ in fast] == [i for i, _ in slow]
    assert [s for _, s in fast] == pytest.approx([s for _, s in slow], rel=1e-6)


def _built(vs: Any, collection: str) -> None:
    """Search until the copy is read and its posting lists are built (or refused), off the searches' path."""
    for _ in range(400):
        _hybrid(vs, collection, "warm")
        snapshot = vs._memory._snapshots.get(collection)
        if snapshot is not None and (snapshot.lexical is False or isinstance(snapshot.lexical, LexicalIndex)):
            return
        if snapshot is not None and not vs._memory.config.full_text:
            return
        time.sleep(0.01)
    raise AssertionError("the posting lists were never built")


def test_hybrid_search_from_memory_equals_lancedb_and_falls_back(collection: str) -> None:
    rng = np.random.default_rng(3)
    # A different length for every row: no two rows tie, so both orders are fully determined.
    words = [*WORDS, "café", "تقدّم", "ɡʁif"]
    docs = [" ".join(rng.choice(words, size=4 + i)) + " os.path.join" * (i % 4 == 0) for i in range(60)]
    fast, slow = _store(True, collection, docs), _store(False, collection, docs)
    texts = ["alpha os.path.join", "socket options", "the gamma x42", '"path join" beta', "cafe alpha"]
    for vs in (fast, slow):
        _built(vs, collection)
    for text in texts:
        _same_results(_hybrid(fast, collection, text), _hybrid(slow, collection, text))
        _same_results(_hybrid(fast, collection, text, n=0), _hybrid(slow, collection, text, n=0))
    assert isinstance(fast._memory._snapshots[collection].lexical, LexicalIndex)
    assert fast._memory._snapshots[collection].lexical.nbytes > 0
    assert slow._memory._snapshots[collection].lexical is None

    # A row written after the index is unindexed (LanceDB scores it by a flat search): LanceDB answers.
    for vs in (fast, slow):
        vs(collection).upsert_sync(
            [{"id": "new", "document": "alpha alpha os path join", "vector": [1.0] * 8}]
        )
        _hybrid(vs, collection, "warm")
        _hybrid(vs, collection, "warm")
    _same_results(
        _hybrid(fast, collection, "alpha os.path.join"), _hybrid(slow, collection, "alpha os.path.join")
    )
    assert fast._memory._snapshots[collection].lexical is False


def test_text_it_cannot_tokenize_as_lancedb_goes_to_lancedb() -> None:
    assert _memory_bm25.plain("ASCII, “quoted” — and … symbols ©")
    assert not _memory_bm25.plain("café")  # ASCII folding makes it "cafe" in LanceDB
    with pytest.raises(_memory_bm25.Unsupported):
        LexicalIndex(["Ⓐ alpha"])  # an enclosed letter: alphabetic to LanceDB, and folded
    assert (
        LexicalIndex(["ɡʁif alpha"]).scores("motif", [], ["ɡʁif alpha"]) is None
    )  # "motif" might be its fold
    index = LexicalIndex(["alpha beta"])
    assert index.scores("naïve alpha", [], ["alpha beta"]) is None
    assert index.scores("a" * 40 + " alpha", [], ["alpha beta"]) is None
