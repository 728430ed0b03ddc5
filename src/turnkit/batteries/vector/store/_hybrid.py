"""Hybrid search: LanceDB full-text (BM25) and vector search, fused in Python.

Both legs run here with the same filter; their scores are fused by the
``ranking/_fusion.py`` object the spec names (a z-score blend by default, a
min-max linear blend, or reciprocal rank fusion), not by LanceDB's hybrid
builder, so the legs, the weights and the tie-breaking are ours to test.

Fused scores rank; they do not measure relevance (RRF depends only on ranks,
and linear fusion rescales each leg within its own results, so the best of an
off-topic pool still scores high). A threshold therefore never reads them:
``min_score`` with hybrid search is compared with each match's *dense*
similarity, the score the same match would have in a plain vector search
(`dense_scores`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from turnkit._aio import finish_before_exit, on_loop, to_thread
from turnkit.batteries.vector._errors import VectorStoreRuntimeError
from turnkit.batteries.vector.filters._core import condition, to_sql
from turnkit.batteries.vector.query._spec import NearId, NearText, NearVector
from turnkit.batteries.vector.ranking._fusion import fusion_for
from turnkit.batteries.vector.ranking._phrases import query_phrases
from turnkit.batteries.vector.store._auto_fields import to_latest
from turnkit.batteries.vector.store._bulk_matches import scores_from_distances
from turnkit.batteries.vector.store._common import (
    _contains_raw,
    both,
    log,
    read_columns,
    recency,
    trim_metadata,
    vector_of,
)
from turnkit.batteries.vector.store._lancedb import translate_errors
from turnkit.batteries.vector.store._memory_bm25 import (
    LexicalIndex,
    details_match,
    learn_marks,
    marks_to_learn,
    top,
)
from turnkit.batteries.vector.store._records import match_from_row
from turnkit.batteries.vector.store._scores import Metric, score_from_distance

if TYPE_CHECKING:
    from turnkit.batteries.vector._matches import VectorMatch
    from turnkit.batteries.vector.filters._ast import FilterNode
    from turnkit.batteries.vector.query._spec import QuerySpec
    from turnkit.batteries.vector.store._handles import _Collection
    from turnkit.batteries.vector.store._store import VectorStore

__all__ = [
    "PHRASE_ROWS",
    "dense_scores",
    "ensure_fts_index",
    "full_text_query",
    "full_text_rows",
    "hybrid_search",
    "query_vector",
]


def full_text_query(text: str, positions: bool) -> Any:
    """The full-text leg's query: every word of ``text``, plus its phrases when the index has positions.

    Each phrase of `query_phrases` (an identifier split the way the index
    splits it, or quoted text) is one more optional clause, so a document
    holding it in order scores the phrase's BM25 on top of its words'.
    """
    from lancedb.query import BooleanQuery, Occur, PhraseQuery  # noqa: TID251 - inside the battery, lazily

    words = _match_query(text)
    phrases = query_phrases(text) if positions else []
    if not phrases:
        return words
    return BooleanQuery(
        [
            (Occur.SHOULD, words),
            *((Occur.SHOULD, PhraseQuery(p, "document", slop=0, document_granularity=None)) for p in phrases),
        ]
    )


async def query_vector(
    store: VectorStore, coll: _Collection, spec: QuerySpec, vector: np.ndarray[Any, Any] | None
) -> np.ndarray[Any, Any] | None:
    """The search's query vector: ``vector`` (encoded text) if given, else from ``spec.near``."""
    if vector is not None:
        return np.asarray(vector, dtype=np.float32)
    near = spec.near
    if isinstance(near, NearVector):
        return np.asarray(near.vector, dtype=np.float32)
    if isinstance(near, NearId):
        return await vector_of(coll, near.id, spec.filter)
    if isinstance(near, NearText):
        return await store._encode_query(coll.name, near.text)
    return None


def _similarities(metric: Metric, query: np.ndarray[Any, Any], vectors: np.ndarray[Any, Any]) -> list[float]:
    """What a vector search would score each row of ``vectors`` (the distances LanceDB computes)."""
    q = np.asarray(query, dtype=np.float64)
    v = np.asarray(vectors, dtype=np.float64)
    if metric == "l2":
        distances = ((v - q) ** 2).sum(axis=1)
    elif metric == "dot":
        distances = 1.0 - v @ q
    else:
        norms = np.maximum(np.linalg.norm(v, axis=1) * np.linalg.norm(q), 1e-12)
        distances = 1.0 - (v @ q) / norms
    return scores_from_distances(metric, distances)


async def _dense_scores(
    coll: _Collection, matches: Sequence[VectorMatch], query: Any, where: FilterNode | None
) -> list[float | None]:
    """Each match's dense similarity: from its distance, else computed from its stored vector.

    ``query`` is an async callable returning the query vector; it is only
    awaited when a match lacks a distance (the full-text leg alone found it).
    Stored vectors are read inside ``where`` (the search's filter, a guard
    included): another scope can hold a record under the same id.
    """
    out: list[float | None] = [
        None if m.distance is None else score_from_distance(coll.metric, m.distance) for m in matches
    ]
    missing = list(dict.fromkeys(m.id for m, s in zip(matches, out, strict=True) if s is None))
    if not missing:
        return out
    vector = await query()
    if vector is None:
        return out
    sql = to_sql(both(condition("id", "in", missing), where), coll.fields)
    with translate_errors("search", coll.name, raw_filter=_contains_raw(where)):
        rows = await coll.table.query().where(sql).select(["id", "vector", "updated_at"]).to_list()
    found: dict[str, Any] = {}
    for row in sorted(rows, key=lambda r: recency(r["updated_at"])):
        if row.get("vector") is not None:
            found[row["id"]] = row["vector"]  # the newest copy of an id wins, as reads keep it
    known = [doc for doc in missing if doc in found]
    if known:
        similar = _similarities(coll.metric, vector, np.asarray([found[d] for d in known]))
        scores = dict(zip(known, similar, strict=True))
        out = [scores.get(m.id) if s is None else s for m, s in zip(matches, out, strict=True)]
    return out


async def dense_scores(
    store: VectorStore,
    collection: str,
    text: str,
    matches: Sequence[VectorMatch],
    where: FilterNode | None = None,
) -> list[float | None]:
    """The dense similarity of each match of a hybrid search for ``text``, in [0, 1].

    It is the score the match would have in a plain vector search: computed
    from its ``distance`` when the dense leg returned it, else from its stored
    vector (read inside ``where``, the search's filter) and the encoded
    ``text``. ``None`` for a match no longer stored.
    This, not the fused score, is what ``min_score`` is compared with when
    hybrid search is on.
    """

    async def run() -> list[float | None]:
        coll = await store._collection(collection)
        return await _dense_scores(coll, matches, lambda: store._encode_query(collection, text), where)

    return await on_loop(run())


async def ensure_fts_index(coll: _Collection) -> None:
    """Create the BM25 index on ``document`` once; rows written later are still searched (flat)."""
    if coll.fts_ready:
        return
    from lancedb.index import FTS  # noqa: TID251 - inside the battery, lazily

    async with coll.lock:
        for attempt in range(3):
            try:
                with translate_errors("create_index", coll.name):
                    indices = await coll.table.list_indices()
                    found = [i for i in indices if "document" in list(getattr(i, "columns", []) or [])]
                    if not found:
                        # No stemming, stop words kept: on known-item queries that index matches
                        # plain BM25, where LanceDB's default loses 2 to 7 points; positions let
                        # identifiers and quoted text match as phrases (docs/ranking.md).
                        config = FTS(stem=False, remove_stop_words=False, with_position=True)
                        await coll.table.create_index("document", config=config, replace=False)
                        coll.wrote()
                        coll.fts_positions = True
                    else:  # an index built earlier, perhaps without positions: no phrase clauses then
                        details = getattr(found[0], "index_details", None) or {}
                        coll.fts_positions = bool(details.get("with_position", False))
                    # A new build may have landed on another process's rows this handle had not
                    # seen: they are outside the index.
                    await note_fts_whole(coll)
                break
            except VectorStoreRuntimeError as exc:
                # Another process built it at the same moment (a commit conflict, or "exists"):
                # look again at the latest version before giving up.
                if attempt == 2 or exc.code != "E_VECTOR_STORE_OPERATION_FAILED":
                    raise
                await to_latest(coll, "create_index")
        coll.fts_ready = True


def _lexical_index(store: VectorStore, coll: _Collection, snapshot: Any) -> LexicalIndex | None:
    """The snapshot's posting lists once built and checked, else ``None`` (LanceDB answers meanwhile).

    The first hybrid search of a cached version starts building them off the
    search's path (about 2.5 s for 10,000 rows of 100 to 300 words); searches
    use them once built and checked (`_build_lexical`).
    """
    found = snapshot.lexical
    if isinstance(found, LexicalIndex):
        return found
    if found is None:
        task = asyncio.ensure_future(_build_lexical(store, coll, snapshot))
        snapshot.lexical = task
        finish_before_exit(task)
    return None


async def _build_lexical(store: VectorStore, coll: _Collection, snapshot: Any) -> None:
    """Build ``snapshot.lexical``, or set it to ``False`` when LanceDB must score this version.

    The index must have the options `ensure_fts_index` gives it and cover
    every row (`_memory_bm25.py` says why); LanceDB must confirm the
    tokenizer's role for each combining mark and each guessed ASCII folding;
    and one LanceDB query (the most common word, every match) must come back
    with the same ids and scores, which catches rows deleted since the index
    was built (LanceDB still counts them).
    """
    index: LexicalIndex | None = None
    try:
        config = store._memory.config
        found = _text_indexes(await coll.table.list_indices())
        details = dict(getattr(found[0], "index_details", None) or {}) if len(found) == 1 else {}
        if details_match(details) and bool(details.get("with_position")) == coll.fts_positions:
            stats = await coll.table.index_stats(found[0].name)
            counts = None if stats is None else (stats.num_unindexed_rows, stats.num_indexed_rows)
            if counts == (0, snapshot.rows) and config is not None:
                # Only now: a version with unindexed rows (any write since the index) stays with LanceDB,
                # and must not pay for a Python copy of every document.
                documents = await to_thread(snapshot._pylist, "document")
                marks = await to_thread(marks_to_learn, documents)
                if marks:
                    learn_marks(await _mark_letters(marks))
                index = await to_thread(LexicalIndex, documents)  # raises Unsupported: LanceDB
                fits = snapshot.nbytes + index.nbytes <= config.max_bytes
                if not (fits and await _folds_agree(index.folds) and await _agrees(coll, index, snapshot)):
                    index = None
    except Exception:  # LanceDB answers (and raises) instead
        log.debug("turnkit: the full-text leg of %r stays with LanceDB", coll.name, exc_info=True)
        index = None
    snapshot.lexical = index if index is not None else False
    if index is not None and config is not None:
        store._memory._evict(config.max_bytes)  # the posting lists count in the budget


# A phrase clause held by more rows than this sends the query to LanceDB whole (`full_text_rows`).
PHRASE_ROWS = 1024


def _text_indexes(indices: Sequence[Any]) -> list[Any]:
    """The full-text indexes on ``document`` alone among ``indices`` (as `list_indices` gives them)."""
    return [i for i in indices if list(getattr(i, "columns", []) or []) == ["document"]]


async def note_fts_whole(coll: _Collection) -> None:
    """Record the handle's table version if its full-text index covers every row of it, else ``None``.

    The indexes are listed here, between two reads of the version: a write or a move of the handle
    meanwhile (the callers do not all hold the collection's lock) records nothing.
    """
    version = await coll.table.version()
    text = _text_indexes(await coll.table.list_indices())
    whole = len(text) == 1 and getattr(text[0], "num_unindexed_rows", None) == 0
    coll.fts_whole_at = version if whole and await coll.table.version() == version else None


async def full_text_rows(
    coll: _Collection, text: str, where: str | None, prefilter: bool, columns: list[str], pool: int
) -> list[dict[str, Any]]:
    """The ``pool`` best rows of `full_text_query` from LanceDB, best first, each with its ``_score``.

    LanceDB scores a boolean query of words and phrases by evaluating every
    clause in full: 45 ms at the median for identifier questions at 100,000
    rows, where its clauses took 7 ms together (`bench/fts_split.py`). So with
    phrase clauses, an index that covers every row, and no filter or a
    pre-filter, the clauses run apart and their scores are summed here as
    LanceDB sums them (float32, the words first, then each phrase in order),
    which gives its scores to within float32 rounding:

    - every row holding a phrase, with that phrase's score;
    - the ``pool`` best rows on the words alone: a row holding no phrase scores
      its words alone, so no other such row can make the pool;
    - the words' score of each row that holds a phrase, is not among those,
      and could still make the pool: one more query, by row id.

    Rows are matched by LanceDB's row id, so every query must read one
    version: the one the index was seen to cover whole (`note_fts_whole`).
    If the handle moved meanwhile (a write, a compaction, another process's
    commit), or a row holding a phrase holds none of the words as LanceDB
    splits them, the boolean query answers instead.
    """
    from lancedb.query import PhraseQuery  # noqa: TID251 - inside the battery, lazily

    async def search(
        query: Any, limit: int, selected: list[str], rows: str | None = None
    ) -> list[dict[str, Any]]:
        built = coll.table.query().nearest_to_text(query)
        clause = " AND ".join(f"({part})" for part in (where, rows) if part)
        if clause:
            built = built.where(clause)
            if where is not None and not prefilter:  # the boolean query only: the split pre-filters
                built = built.postfilter()
        found: list[dict[str, Any]] = (
            await built.with_row_id().select([*selected, "_score"]).limit(limit).to_list()
        )
        return found

    async def boolean(why: str | None = None) -> list[dict[str, Any]]:
        if why is not None:  # the tests read these
            log.debug("turnkit: the full-text query on %r runs whole: %s", coll.name, why)
        return await search(full_text_query(text, coll.fts_positions), pool, columns)

    phrases = query_phrases(text) if coll.fts_positions else []
    if not phrases:
        return await boolean()
    if where is not None and not prefilter:
        return await boolean("a post-filter")  # it cuts LanceDB's own pool
    version = await coll.table.version()
    if version != coll.fts_whole_at:  # rows outside the index: a flat search scores them otherwise
        return await boolean("rows outside the index")
    words_query = _match_query(text)
    clauses = [PhraseQuery(p, "document", slop=0, document_granularity=None) for p in phrases]
    words, *held = await asyncio.gather(
        search(words_query, pool, columns), *(search(c, PHRASE_ROWS + 1, []) for c in clauses)
    )
    if any(len(rows) > PHRASE_ROWS for rows in held):
        return await boolean(f"a phrase more than {PHRASE_ROWS} rows hold")
    shares: dict[int, list[np.float32]] = {}  # each row's phrase scores, in clause order
    for rows in held:
        for row in rows:
            shares.setdefault(row["_rowid"], []).append(np.float32(row["_score"]))

    def total(rowid: int, score: Any) -> np.float32:
        summed = np.float32(score)
        for share in shares.get(rowid, ()):
            summed = np.float32(summed + share)
        return summed

    known = {row["_rowid"]: row for row in words}
    scores = {rowid: total(rowid, row["_score"]) for rowid, row in known.items()}
    missing = [rowid for rowid in shares if rowid not in known]
    if missing and len(words) == pool:  # fewer: every row holding a word is already there
        # A missing row's words score at most the pool's last words score.
        ceiling = words[-1]["_score"]
        cut = sorted(scores.values(), reverse=True)[pool - 1]
        missing = [rowid for rowid in missing if total(rowid, ceiling) >= cut]
    for start in range(0, len(missing), PHRASE_ROWS):
        chunk = missing[start : start + PHRASE_ROWS]
        listed = f"_rowid IN ({', '.join(str(int(r)) for r in chunk)})"
        for row in await search(words_query, len(chunk), columns, listed):
            known[row["_rowid"]] = row
            scores[row["_rowid"]] = total(row["_rowid"], row["_score"])
    if any(rowid not in known for rowid in missing):
        return await boolean("a row holding a phrase holds none of the words")
    if await coll.table.version() != version:
        return await boolean("the version moved")
    best = sorted(scores, key=lambda rowid: (-scores[rowid], rowid))[:pool]
    return [{**known[rowid], "_score": float(scores[rowid])} for rowid in best]


def _match_query(text: str) -> Any:
    """A match of any word of ``text`` in ``document``, LanceDB's BM25 (the full-text leg's words)."""
    from lancedb.query import FullTextOperator, MatchQuery  # noqa: TID251 - inside the battery, lazily

    # Every field is spelled out: LanceDB's stubs declare the defaults as required.
    return MatchQuery(
        text,
        "document",
        boost=1.0,
        fuzziness=0,
        max_expansions=50,
        operator=FullTextOperator.OR,
        prefix_length=0,
        document_granularity=None,
    )


async def _scratch_table(documents: list[str]) -> Any:
    """An in-memory table of ``documents`` with a full-text index built like the collections'."""
    import lancedb  # noqa: TID251 - inside the battery, lazily
    from lancedb.index import FTS  # noqa: TID251 - inside the battery, lazily

    db = await lancedb.connect_async("memory://")
    table = await db.create_table(
        "scratch", pa.table({"i": list(range(len(documents))), "document": documents})
    )
    await table.create_index("document", config=FTS(stem=False, remove_stop_words=False, with_position=False))
    return table


async def _scratch_rows(table: Any, word: str, limit: int) -> set[int]:
    """The rows of a `_scratch_table` that LanceDB finds ``word`` in."""
    rows = (
        await table.query().nearest_to_text(_match_query(word)).select(["i", "_score"]).limit(limit).to_list()
    )
    return {r["i"] for r in rows}


async def _mark_letters(marks: set[str]) -> dict[str, bool]:
    """Which combining marks LanceDB takes as letters: then "zq<mark>zq" is one word, not "zq" twice."""
    written = sorted(marks)
    table = await _scratch_table([f"zq{m}zq" for m in written])
    apart = await _scratch_rows(table, "zq", len(written))
    return {m: i not in apart for i, m in enumerate(written)}


async def _folds_agree(folds: dict[str, str]) -> bool:
    """Whether LanceDB folds each token of ``folds`` (as written) to the ASCII word given for it.

    One row per token in a scratch in-memory table indexed like the
    collection; each word must find exactly the tokens guessed to fold to it.
    """
    if not folds:
        return True
    written = list(folds)
    table = await _scratch_table(written)
    wanted: dict[str, set[int]] = {}
    for i, token in enumerate(written):
        wanted.setdefault(folds[token], set()).add(i)
    for word, rows in wanted.items():
        if await _scratch_rows(table, word, len(written)) != rows:
            return False
    return True


async def _agrees(coll: _Collection, index: LexicalIndex, snapshot: Any) -> bool:
    """Whether LanceDB scores the index's most common token as ``index`` does, row for row."""
    probe = index.probe_token()
    if probe is None:
        return True
    token, count = probe
    query = _match_query(token)
    rows = await coll.table.query().nearest_to_text(query).select(["id", "_score"]).limit(count + 1).to_list()
    scored = index.scores(token, [], snapshot._pylist("document"))
    if scored is None or len(rows) != len(scored[0]):
        return False
    ids = snapshot._pylist("id")
    mine = sorted((ids[r], float(s)) for r, s in zip(scored[0].tolist(), scored[1].tolist(), strict=True))
    theirs = sorted((r["id"], float(r["_score"])) for r in rows)
    return all(
        a[0] == b[0] and abs(a[1] - b[1]) <= 1e-5 * max(1.0, abs(b[1]))
        for a, b in zip(mine, theirs, strict=True)
    )


async def memory_lexical(
    store: VectorStore, coll: _Collection, spec: QuerySpec, text: str, pool: int
) -> tuple[list[VectorMatch], list[float]] | None:
    """The full-text leg from the in-memory copy, as LanceDB would answer it; ``None``: LanceDB answers.

    Memory answers when the collection's current version is cached, the
    filter (if any) is a pre-filter the cached columns evaluate, and
    `_lexical_index` vouches for the version (`_memory_bm25.py`).
    """
    config = store._memory.config
    if config is None or not config.full_text:
        return None
    snapshot = store._memory.loaded(coll.name, coll.table, coll.seen_version, spec)
    if snapshot is None:
        return None
    index = _lexical_index(store, coll, snapshot)
    if index is None:
        return None
    mask = None if spec.filter is None else snapshot.mask(spec.filter)
    if spec.filter is not None and mask is None:
        return None
    phrases = query_phrases(text) if coll.fts_positions else []
    scored = index.scores(text, phrases, snapshot._pylist("document"))
    if scored is None:
        return None
    rows, scores = top(*scored, mask, snapshot.id_rank, pool)
    matches = snapshot.matches(rows, None, read_columns(spec.select or ("*",)))
    return matches, [float(s) for s in scores.tolist()]


async def hybrid_search(
    store: VectorStore, coll: _Collection, spec: QuerySpec, vector: np.ndarray[Any, Any] | None
) -> list[VectorMatch]:
    """Run both legs of ``spec`` (which has ``spec.hybrid``), fuse them, apply ``min_score`` and paging.

    ``min_score`` is compared with each match's dense similarity (see
    `dense_scores`), not with the fused score, which only ranks.
    """
    hybrid = spec.hybrid
    assert hybrid is not None
    text = hybrid.text if hybrid.text is not None else getattr(spec.near, "text", None)
    pool = hybrid.pool(spec.limit, spec.offset)
    alpha = hybrid.alpha_for(text)  # a leg with no weight is not run

    async def dense_leg() -> list[VectorMatch]:
        if alpha <= 0 or spec.near is None:
            return []
        return await store._search(replace(spec, hybrid=None, limit=pool, offset=0, min_score=None), vector)

    async def lexical_leg() -> tuple[list[VectorMatch], list[float]]:
        if alpha >= 1 or not text:
            return [], []
        await ensure_fts_index(coll)
        found = await memory_lexical(store, coll, spec, text, pool)
        if found is not None:
            return found
        where = None if spec.filter is None else to_sql(spec.filter, coll.fields)
        columns = read_columns(spec.select or ("*",))
        with translate_errors("search", coll.name, raw_filter=_contains_raw(spec.filter)):
            rows = await full_text_rows(coll, text, where, spec.prefiltered, columns, pool)
        return [match_from_row(row, None) for row in rows], [float(row.get("_score") or 0.0) for row in rows]

    # Side by side, the full-text leg first: it waits on LanceDB's threads while the dense leg computes
    # (from memory, that leg may never yield).
    (lexical, bm25), dense = await asyncio.gather(lexical_leg(), dense_leg())
    lexical = trim_metadata(lexical, spec.select or ("*",))
    out = fusion_for(hybrid, text, pool).fuse_matches(dense, lexical, bm25)
    if spec.min_score is not None and out:
        threshold = spec.min_score
        similar = await _dense_scores(coll, out, lambda: query_vector(store, coll, spec, vector), spec.filter)
        out = [m for m, s in zip(out, similar, strict=True) if s is not None and s >= threshold]
    return out[spec.offset : spec.offset + spec.limit]
