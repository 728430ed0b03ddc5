"""A vector search that LanceDB answers runs on the caller's loop, and answers what turnkit's loop answers."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit._aio import loop, run_sync
from turnkit.batteries.vector import MemoryCache, create_vector_store
from turnkit.batteries.vector.filters._core import condition

_DIM = 6
_KINDS = ["note", "faq", "log"]
# Larger than the cache admits: it is searched through LanceDB, with nothing for memory to do.
_TOO_BIG = MemoryCache(max_rows=10, max_vector_bytes=64)

_filters = st.one_of(
    st.none(),
    st.builds(lambda k: condition("metadata.kind", "eq", k), st.sampled_from(_KINDS)),
    st.builds(lambda n: condition("metadata.n", "lt", n), st.integers(-2, 40)),
    st.builds(
        lambda ids: condition("id", "in", ids), st.lists(st.sampled_from([f"r{i}" for i in range(80)]))
    ),
    st.builds(lambda k: condition("metadata.kind", "ne", k), st.sampled_from([*_KINDS, None])),
    st.just(condition("document", "like", "doc 1%")),
)


def _records(rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"r{i}",
            "vector": rng.normal(size=_DIM).astype(np.float32),
            "document": f"doc {i}",
            "metadata": {"kind": _KINDS[i % 3], "n": int(rng.integers(40))},
        }
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def stores(tmp_path_factory: Any) -> dict[tuple[str, str], Any]:
    """A store per metric, with the cache off and with a cache the collection is too big for."""
    out = {}
    rng = np.random.default_rng(7)
    records = _records(rng, 80)
    for metric in ("cosine", "l2", "dot"):
        for name, cache in (("off", None), ("too big", _TOO_BIG)):
            vs = create_vector_store(
                uri=str(tmp_path_factory.mktemp("db")), metric=metric, auto_optimize=None, memory_cache=cache
            )
            vs("c").upsert_sync(records)
            vs("c").near_vector(records[0]["vector"]).select("id").search_sync()  # opens it, finds it too big
            out[metric, name] = vs
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    metric=st.sampled_from(["cosine", "l2", "dot"]),
    cache=st.sampled_from(["off", "too big"]),
    seed=st.integers(0, 2**32 - 1),
    node=_filters,
    limit=st.integers(1, 30),
    offset=st.integers(0, 5),
    min_score=st.none() | st.floats(0, 1),
    max_distance=st.none() | st.floats(0, 4),
    prefilter=st.booleans(),
    select=st.sampled_from([("id",), ("id", "document", "metadata"), ("*",), ("metadata.kind",)]),
)
def test_the_callers_loop_answers_what_turnkits_loop_answers(
    stores: dict[tuple[str, str], Any],
    metric: str,
    cache: str,
    seed: int,
    node: Any,
    limit: int,
    offset: int,
    min_score: float | None,
    max_distance: float | None,
    prefilter: bool,
    select: tuple[str, ...],
) -> None:
    vs = stores[metric, cache]
    q = np.random.default_rng(seed).normal(size=_DIM).astype(np.float32)
    builder = vs("c").near_vector(q).select(*select).limit(limit).offset(offset).prefilter(prefilter)
    if node is not None:
        builder = builder.where(node)
    if min_score is not None:
        builder = builder.min_score(min_score)
    if max_distance is not None:
        builder = builder.max_distance(max_distance)
    on_caller = asyncio.run(builder.search())
    on_turnkit = run_sync(vs._search(builder.spec, None))  # the search the shortcut stands in for
    assert [m.id for m in on_caller] == [m.id for m in on_turnkit]
    for a, b in zip(on_caller, on_turnkit, strict=True):
        assert (a.distance, a.score, a.document, a.metadata) == (b.distance, b.score, b.document, b.metadata)


@pytest.mark.parametrize("cache", [None, _TOO_BIG, MemoryCache()], ids=["off", "too big", "in memory"])
def test_a_search_needs_no_turn_of_turnkits_loop(tmp_path: Any, cache: MemoryCache | None) -> None:
    """With turnkit's loop held up, an async search still answers: it never waited for that loop."""
    vs = create_vector_store(uri=str(tmp_path / "db"), auto_optimize=None, memory_cache=cache)
    records = _records(np.random.default_rng(1), 40)
    vs("c").upsert_sync(records)
    query = vs("c").near_vector(records[3]["vector"]).select("id").limit(3)
    expected = [m.id for m in query.search_sync()]
    # Memory answers only where the copy fits; the other two are LanceDB's answers.
    assert bool(vs.cache_stats().collections) == (cache is not None and cache.max_rows > 10)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(120)

    loop().call_soon_threadsafe(hold)
    assert held.wait(60)
    try:
        # A guard against a hang (the search waiting for the held loop), not a timing claim.
        got = asyncio.run(asyncio.wait_for(query.search(), 60))
    finally:
        release.set()
    assert [m.id for m in got] == expected == ["r3", *expected[1:]]
