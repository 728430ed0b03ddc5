"""``get(ids)``: one record per distinct id, in the order each id was first asked for."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import HashEncoder, create_vector_store

STORED = ["a", "b", "c", "d"]
_vs = create_vector_store(uri="memory://", encoder=HashEncoder(16), auto_optimize=None)
_vs("g").upsert_sync([{"id": i, "document": f"doc {i}"} for i in STORED])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*STORED, "missing", "nope"]), max_size=12))
def test_get_returns_each_existing_id_once_in_first_asked_order(ids: list[str]) -> None:
    want = [i for i in dict.fromkeys(ids) if i in STORED]
    assert [m.id for m in _vs("g").get_sync(ids)] == want


def test_repeated_ids_collapse() -> None:
    assert [m.id for m in _vs("g").get_sync(["a", "a", "b"])] == ["a", "b"]
    assert [m.id for m in _vs("g").get_sync(["b", "a", "b"])] == ["b", "a"]
