"""Automatic fields: keys of one type become typed, indexed columns at optimize, and never change a result."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import VectorStoreUsageError, create_vector_store
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import condition, evaluate
from turnkit.batteries.vector.store._auto_fields import MAX_AUTO_FIELDS

from .test_declared_fields import filter_trees, metadata

_names = itertools.count()

STRINGS = st.sampled_from(["", "a", "A", "ab", "a%", "it's", "é", "2021", "true", "x y"])
INTS = st.one_of(st.sampled_from([0, 1, -1, 2021, 2**53, -(2**53), 2**31]), st.integers(-50, 50))
FLOATS = st.one_of(INTS, st.sampled_from([0.5, -0.0, 2021.0, 1e300, -2.5, 2.0**60]))
# Each key's values have one type, except "m" (two types) and "o" (objects): those stay in the JSON.
VALUES = {
    "s": STRINGS,
    "n": INTS,
    "f": FLOATS,
    "b": st.booleans(),
    "t": st.lists(STRINGS, max_size=3),
    "m": st.one_of(STRINGS, INTS),
    "o": st.dictionaries(st.sampled_from(["x", "y"]), INTS, max_size=2),
}
# A later batch may bring any key a value of another type.
ANY_VALUE = st.one_of(STRINGS, FLOATS, st.booleans(), st.lists(STRINGS, max_size=2), st.just(2**60))


trees = filter_trees(tuple(sorted(VALUES)))


def _store(uri: str = "memory://", **kwargs: Any) -> Any:
    # No memory cache: every filter runs as SQL on LanceDB.
    return create_vector_store(uri=uri, memory_cache=None, auto_optimize=None, **kwargs)


def _records(metas: list[dict[str, Any] | None], start: int = 0) -> list[dict[str, Any]]:
    return [{"id": f"r{start + i}", "vector": [1.0, 0.5], "metadata": m} for i, m in enumerate(metas)]


def _ids(vs: Any, name: str, node: FilterNode, count: int) -> set[str]:
    return {m.id for m in vs(name).where(node).get_sync([f"r{i}" for i in range(count)])}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=st.lists(metadata(VALUES), min_size=1, max_size=10),
    later=st.lists(metadata(VALUES, ANY_VALUE), max_size=5),
    nodes=st.lists(trees, min_size=1, max_size=4),
)
def test_filters_with_automatic_fields_select_what_the_json_path_selects(
    first: list[dict[str, Any] | None], later: list[dict[str, Any] | None], nodes: list[FilterNode]
) -> None:
    auto, plain = _store(), _store(auto_fields=False)
    name = f"a{next(_names)}"
    records = _records(first)
    newer = _records(later, start=len(first))
    for vs in (auto, plain):
        vs(name).upsert_sync(records)
        vs(name).optimize_sync()
    assert plain.collection_info_sync(name).auto_fields == {}
    declared = auto.collection_info_sync(name).auto_fields
    assert "m" not in declared or len({type(m["m"]) for m in first if m and m.get("m") is not None}) == 1
    assert "o" not in declared
    # A later write may bring another type: it is not refused, and results stay the JSON path's.
    for vs in (auto, plain):
        if newer:
            vs(name).upsert_sync(newer)
    everything = records + newer
    for node in nodes:
        expected = {r["id"] for r in everything if evaluate(node, r)}
        assert _ids(auto, name, node, len(everything)) == expected
        assert _ids(plain, name, node, len(everything)) == expected
        assert auto(name).where(node).count_sync() == len(expected)
    # ... and after the next optimize, which declares what is consistent now.
    auto(name).optimize_sync()
    for node in nodes:
        expected = {r["id"] for r in everything if evaluate(node, r)}
        assert _ids(auto, name, node, len(everything)) == expected


def test_optimize_declares_each_key_of_one_type_with_its_index() -> None:
    vs = _store()
    metas = [
        {"n": i, "f": i / 2, "mixed_num": i if i % 2 else 0.5, "s": f"s{i}", "b": i % 2 == 0, "t": ["x"]}
        | {"two": "a" if i % 2 else 1, "obj": {"k": 1}, "nums": [1, 2], "bad-name": 1, "_private": 1}
        for i in range(20)
    ]
    vs("k").upsert_sync(_records(metas))
    assert vs.collection_info_sync("k").auto_fields == {}  # nothing before optimize
    vs("k").optimize_sync()
    info = vs.collection_info_sync("k")
    assert info.fields == {}
    assert info.auto_fields == {
        "n": "int",
        "f": "float",
        "mixed_num": "float",
        "s": "str",
        "b": "bool",
        "t": "list[str]",
    }
    assert sorted(i.split(":")[1] for i in info.indexes) == sorted(
        ["BTree", "BTree", "BTree", "BTree", "Bitmap", "LabelList"]
    )
    assert vs("k").where("metadata.n", "gte", 18).count_sync() == 2
    assert vs("k").get_sync(["r3"])[0].metadata == metas[3]  # the JSON stays what reads return


def test_a_write_of_another_type_drops_the_automatic_field_and_is_not_refused(tmp_path: Path) -> None:
    vs = _store(str(tmp_path / "db"))
    vs("c").upsert_sync(_records([{"g": i % 5, "s": "x"} for i in range(20)]))
    vs("c").optimize_sync()
    assert vs.collection_info_sync("c").auto_fields == {"g": "int", "s": "str"}
    vs("c").upsert_sync([{"id": "late", "vector": [0.3, 1.0], "metadata": {"g": "three"}}])
    info = vs.collection_info_sync("c")
    assert info.auto_fields == {"s": "str"}
    assert not any(i.startswith("g_") for i in info.indexes)
    assert vs("c").where("metadata.g", 3).count_sync() == 4
    assert vs("c").where("metadata.g", "three").count_sync() == 1
    assert vs("c").where("metadata.g", "exists", True).count_sync() == 21
    vs("c").optimize_sync()  # still two types: the key stays in the JSON
    assert "g" not in vs.collection_info_sync("c").auto_fields
    # A float among integers: the field goes, and the next optimize brings it back as float.
    vs("c").upsert_sync([{"id": "half", "vector": [0.3, 1.0], "metadata": {"s": "y", "h": 1}}])
    vs("c").optimize_sync()
    assert vs.collection_info_sync("c").auto_fields["h"] == "int"
    vs("c").upsert_sync([{"id": "half2", "vector": [0.3, 1.0], "metadata": {"h": 1.5}}])
    assert "h" not in vs.collection_info_sync("c").auto_fields
    vs("c").optimize_sync()
    assert vs.collection_info_sync("c").auto_fields["h"] == "float"
    assert vs("c").where("metadata.h", "gt", 1).count_sync() == 1


def test_update_metadata_of_another_type_drops_the_automatic_field() -> None:
    vs = _store()
    vs("u").upsert_sync(_records([{"g": i} for i in range(10)]))
    vs("u").optimize_sync()
    assert vs.collection_info_sync("u").auto_fields == {"g": "int"}
    assert vs("u").update_metadata_sync({"r1": {"g": ["a"]}}) == 1
    assert vs.collection_info_sync("u").auto_fields == {}
    assert vs("u").where("metadata.g", "contains", "a").count_sync() == 1
    assert vs("u").where("metadata.g", "lt", 3).count_sync() == 2


def test_declared_fields_still_refuse_and_declaring_makes_an_automatic_field_the_deployers() -> None:
    vs = _store(fields={"d": int})
    vs("p").upsert_sync(_records([{"d": 1, "a": "x"}, {"d": 2, "a": "y"}]))
    vs("p").optimize_sync()
    assert vs.collection_info_sync("p").auto_fields == {"a": "str"}
    with pytest.raises(VectorStoreUsageError, match="declared int field") as refused:
        vs("p").upsert_sync([{"id": "bad", "vector": [1.0, 0.0], "metadata": {"d": "two"}}])
    assert refused.value.code == "E_INVALID_VECTOR_RECORD"
    info = vs.declare_fields_sync("p", {"a": str})
    assert (info.fields, info.auto_fields) == ({"d": "int", "a": "str"}, {})
    with pytest.raises(VectorStoreUsageError, match="declared str field"):
        vs("p").upsert_sync([{"id": "bad", "vector": [1.0, 0.0], "metadata": {"a": 3}}])
    with pytest.raises(VectorStoreUsageError, match="already a str column"):
        vs.declare_fields_sync("p", {"a": int})


def test_turned_off_the_store_declares_nothing_and_other_values_are_refused() -> None:
    vs = _store(auto_fields=False)
    vs("off").upsert_sync(_records([{"g": i} for i in range(10)]))
    vs("off").optimize_sync()
    info = vs.collection_info_sync("off")
    assert (info.fields, info.auto_fields, info.indexes) == ({}, {}, ())
    with pytest.raises(VectorStoreUsageError) as bad:
        create_vector_store(uri="memory://", auto_fields="yes")  # type: ignore[arg-type]
    assert bad.value.code == "E_INVALID_VECTOR_STORE_CONFIG"


def test_automatic_fields_persist_and_another_store_drops_them_on_a_conflict(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    first = _store(uri)
    first("r").upsert_sync(_records([{"g": i % 3} for i in range(9)]))
    first("r").optimize_sync()
    assert first("r").where("metadata.g", 1).count_sync() == 3  # compiled to the column
    reopened = _store(uri, auto_fields=False)  # turned off: fields already there are kept and used
    assert reopened.collection_info_sync("r").auto_fields == {"g": "int"}
    reopened("r").upsert_sync([{"id": "x", "vector": [0.1, 1.0], "metadata": {"g": "1"}}])
    # The first store's handle moves to the version without the column before its next filter.
    assert first("r").where("metadata.g", 1).count_sync() == 3
    assert first("r").where("metadata.g", "1").count_sync() == 1
    assert first.collection_info_sync("r").auto_fields == {}


def test_at_most_a_bounded_number_of_keys_become_columns_the_most_held_first() -> None:
    vs = _store()
    keys = [f"k{i:02}" for i in range(MAX_AUTO_FIELDS + 4)]
    # k00 is held by every row, k01 by all but one, ...: the rarest keys stay in the JSON.
    metas = [{key: 1 for j, key in enumerate(keys) if j <= row} for row in range(len(keys))]
    vs("many").upsert_sync(_records(metas))
    vs("many").optimize_sync()
    assert sorted(vs.collection_info_sync("many").auto_fields) == keys[:MAX_AUTO_FIELDS]
    assert vs("many").where("metadata." + keys[-1], 1).count_sync() == 1


def test_fragments_of_another_type_drop_the_automatic_field_at_commit(tmp_path: Path) -> None:
    pytest.importorskip("lance")
    from turnkit.batteries.vector.store._fragments import commit_fragments_sync, write_fragments_sync

    vs = _store(str(tmp_path / "db"))
    vs("f").upsert_sync(_records([{"g": 1, "s": "a"}, {"g": 2, "s": "b"}]))
    vs("f").optimize_sync()
    assert vs.collection_info_sync("f").auto_fields == {"g": "int", "s": "str"}
    other = [{"id": "w", "vector": [0.3, 1.0], "metadata": {"g": "x", "s": "c"}}]
    written = write_fragments_sync(vs, "f", other)
    assert commit_fragments_sync(vs, "f", written) == 1
    assert vs.collection_info_sync("f").auto_fields == {"s": "str"}
    assert vs("f").where("metadata.g", "x").count_sync() == 1
    assert vs("f").where("metadata.s", "c").count_sync() == 1
    # Fragments written before an optimize declared a field lack its column: the commit drops it.
    before = write_fragments_sync(vs, "f", [{"id": "v", "vector": [0.3, 1.0], "metadata": {"s": "d"}}])
    vs("f").upsert_sync([{"id": "n", "vector": [0.3, 1.0], "metadata": {"new": 5}}])
    vs("f").optimize_sync()
    assert "new" in vs.collection_info_sync("f").auto_fields
    assert commit_fragments_sync(vs, "f", before) == 1
    assert "new" not in vs.collection_info_sync("f").auto_fields
    assert vs("f").where("metadata.new", 5).count_sync() == 1
    assert vs("f").where("metadata.s", "d").count_sync() == 1


_WRITER = """
import sys
from turnkit.batteries.vector import create_vector_store
vs = create_vector_store(uri=sys.argv[1], memory_cache=None, auto_optimize=None)
for round in range(12):
    value = f"s{round}" if round % 4 == 3 else round  # now and then a string among the integers
    vs("mp").upsert_sync([{"id": f"w{round}-{i}", "vector": [1.0, 0.5], "metadata": {"g": value, "i": i}}
                          for i in range(5)])
"""

_OPTIMIZER = """
import sys
from turnkit.batteries.vector import create_vector_store
vs = create_vector_store(uri=sys.argv[1], memory_cache=None, auto_optimize=None)
for _ in range(6):
    vs("mp").optimize_sync()
    vs("mp").where("metadata.g", 3).count_sync()
"""


def test_optimizing_and_writing_other_types_in_two_processes_keeps_every_result(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    vs = _store(uri)
    vs("mp").upsert_sync(_records([{"g": i, "i": i} for i in range(10)]))
    env = {**os.environ, "LANCEDB_LOG": "error"}
    procs = [
        subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), uri], env=env)
        for code in (_WRITER, _OPTIMIZER)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    fresh = _store(uri)
    fresh("mp").optimize_sync()
    rows = fresh("mp").get_sync(
        [f"r{i}" for i in range(10)] + [f"w{r}-{i}" for r in range(12) for i in range(5)]
    )
    records = [{"id": m.id, "metadata": m.metadata} for m in rows]
    assert len(records) == 70
    for node in (
        condition("metadata.g", "eq", 3),
        condition("metadata.g", "gt", 5),
        condition("metadata.g", "eq", "s3"),
        condition("metadata.i", "lt", 2),
    ):
        expected = {r["id"] for r in records if evaluate(node, r)}
        assert {m.id for m in fresh("mp").where(node).get_sync([r["id"] for r in records])} == expected


def test_stores_on_object_storage_declare_no_automatic_fields() -> None:
    from tests._s3 import moto_available, s3_server

    if not moto_available():
        pytest.skip("moto[server] is not installed (pip install 'turnkit[s3-test]')")
    with s3_server() as s3:
        # Writers there take no lock across processes: one could land rows between the read and the mark.
        vs = create_vector_store(s3.new_bucket(), storage_options=s3.storage_options, auto_optimize=None)
        vs("o").upsert_sync(_records([{"g": i} for i in range(5)]))
        vs("o").optimize_sync()
        assert vs.collection_info_sync("o").auto_fields == {}
        assert vs("o").where("metadata.g", "gte", 3).count_sync() == 2
