"""The full-text leg's clauses run apart and summed (`full_text_rows`) against LanceDB's boolean query."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit._aio import run_sync
from turnkit.batteries.vector import HashEncoder, create_vector_store
from turnkit.batteries.vector.ranking._phrases import query_phrases
from turnkit.batteries.vector.store import _hybrid
from turnkit.batteries.vector.store._hybrid import ensure_fts_index, full_text_query, full_text_rows

WORDS = ["alpha", "beta", "gamma", "os", "path", "join", "socket", "options", "the", "a"]
PIECES = [*WORDS, "os.path.join", "socket_options", "path join", "join path", "os path"]
document = st.lists(st.sampled_from(PIECES), min_size=1, max_size=20).map(" ".join)
QUERY_PIECES = [*WORDS, "os.path.join", "socket_options", '"path join"', "zzz"]
query = st.lists(st.sampled_from(QUERY_PIECES), min_size=1, max_size=5).map(" ".join)
FILTERS = [None, "id < 'd020'", "id >= 'd010' AND id < 'd030'"]


def _collection(
    tmp: str, docs: list[str], later: list[str], deleted: list[int], optimized: bool = False
) -> Any:
    """A collection of ``docs`` with its full-text index, then ``later`` rows outside it, then deletions.

    ``optimized``: then ``optimize()``, which brings the later rows into the index.
    """
    vs = create_vector_store(uri=tmp, encoder=HashEncoder(8), memory_cache=None, auto_optimize=None)
    vs("c").upsert_sync([{"id": f"d{i:03d}", "document": d} for i, d in enumerate(docs)])

    async def index() -> Any:
        coll = await vs._collection("c")
        await ensure_fts_index(coll)
        return coll

    coll = run_sync(index())
    assert coll.fts_positions
    if later:
        vs("c").upsert_sync([{"id": f"d{100 + i:03d}", "document": d} for i, d in enumerate(later)])
    if deleted:
        vs("c").where_in("id", [f"d{i:03d}" for i in deleted]).delete_sync()
    if optimized:
        vs("c").optimize_sync()
    # The clauses run apart only on a version the index covers whole (else LanceDB's boolean runs).
    assert coll.fts_whole == (optimized or not (later or deleted))
    return vs, coll


def _boolean(coll: Any, text: str, where: str | None, prefilter: bool, pool: int) -> list[tuple[str, float]]:
    """LanceDB's own answer: the words and phrases in one boolean query."""

    async def run() -> list[dict[str, Any]]:
        search = coll.table.query().nearest_to_text(full_text_query(text, True))
        if where is not None:
            search = search.where(where)
            if not prefilter:
                search = search.postfilter()
        rows: list[dict[str, Any]] = await search.select(["id", "_score"]).limit(pool).to_list()
        return rows

    return [(r["id"], float(r["_score"])) for r in run_sync(run())]


def _split(coll: Any, text: str, where: str | None, prefilter: bool, pool: int) -> list[tuple[str, float]]:
    rows = run_sync(full_text_rows(coll, text, where, prefilter, ["id", "document"], pool))
    return [(r["id"], r["_score"]) for r in rows]


def _assert_same(mine: list[tuple[str, float]], theirs: list[tuple[str, float]]) -> None:
    """The same scores in the same order, and the same ids but among rows tied at the pool's end.

    Scores may differ in float32's last bit (LanceDB's summation order), so ties are within 1e-6.
    """
    assert [s for _, s in mine] == pytest.approx([s for _, s in theirs], rel=1e-6), (mine, theirs)
    if theirs:
        last = theirs[-1][1]
        tied = pytest.approx(last, rel=1e-6)
        assert {i for i, s in mine if s != tied} == {i for i, s in theirs if s != tied}, (mine, theirs)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    docs=st.lists(document, min_size=1, max_size=40),
    later=st.lists(document, max_size=4),
    deleted=st.lists(st.integers(min_value=0, max_value=39), max_size=4, unique=True),
    queries=st.lists(query, min_size=1, max_size=4),
    where=st.sampled_from(FILTERS),
    prefilter=st.booleans(),
    pool=st.sampled_from([1, 3, 10]),
    phrase_rows=st.sampled_from([1, 4, 1024]),
    optimized=st.booleans(),
)
def test_split_clauses_score_as_the_boolean_query(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    docs: list[str],
    later: list[str],
    deleted: list[int],
    queries: list[str],
    where: str | None,
    prefilter: bool,
    pool: int,
    phrase_rows: int,
    optimized: bool,
) -> None:
    # A small cap sends phrases held by more rows to the boolean query, and splits the by-id query.
    monkeypatch.setattr(_hybrid, "PHRASE_ROWS", phrase_rows)
    vs, coll = _collection(str(tmp_path_factory.mktemp("fts")), docs, later, deleted, optimized)
    for text in queries:
        _assert_same(_split(coll, text, where, prefilter, pool), _boolean(coll, text, where, prefilter, pool))


def test_a_row_whose_phrase_lifts_it_into_the_pool_is_found_by_id(tmp_path: Any) -> None:
    # Five rows score higher on the words alone than the one row holding the phrase (theirs are
    # shorter), so it is outside the words' own pool of 3, and the phrase lifts it to the top.
    docs = ["beta gamma"] * 30 + ["join beta path beta os"] * 5 + ["os.path.join " + "gamma " * 6]
    vs, coll = _collection(str(tmp_path), docs, [], [])
    text = "os.path.join"
    assert query_phrases(text)
    theirs = _boolean(coll, text, None, True, 3)
    assert theirs[0][0] == "d035"
    words_alone = run_sync(full_text_rows(coll, "os path join", None, True, ["id"], 3))
    assert "d035" not in [r["id"] for r in words_alone]  # so only the query by row id can bring it
    _assert_same(_split(coll, text, None, True, 3), theirs)
    assert _split(coll, text, None, True, 3)[0][0] == "d035"
