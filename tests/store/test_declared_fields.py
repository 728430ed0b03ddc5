"""Declared fields: metadata keys kept as typed, indexed columns answer every filter as the JSON would."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import (
    VectorStoreUsageError,
    create_vector_store,
)
from turnkit.batteries.vector.filters._ast import FilterNode
from turnkit.batteries.vector.filters._core import and_, condition, evaluate, not_, or_, to_sql

FIELDS: dict[str, Any] = {"s": str, "n": int, "f": float, "b": bool, "t": list[str]}
CANONICAL = {"s": "str", "n": "int", "f": "float", "b": "bool", "t": "list[str]"}
_names = itertools.count()

# Values a declared key can hold (its own type), and literals of every type to compare them with.
STRINGS = st.sampled_from(["", "a", "A", "ab", "a%", "it's", "é", "2021", "true", "x y"])
NUMBERS = st.one_of(
    st.sampled_from([0, 1, -1, 2021, 2**53, -(2**53), 2**31]),
    st.integers(min_value=-50, max_value=50),
)
FLOATS = st.one_of(NUMBERS, st.sampled_from([0.5, -0.0, 2021.0, 1e300, -2.5]))
VALUES = {
    "s": STRINGS,
    "n": NUMBERS,
    "f": FLOATS,
    "b": st.booleans(),
    "t": st.lists(STRINGS, max_size=3),
}
LITERALS = st.one_of(STRINGS, FLOATS, st.booleans(), st.just(2**53 + 1), st.just(2**63 - 1))


@st.composite
def metadata(
    draw: st.DrawFn,
    keys: Mapping[str, st.SearchStrategy[Any]] = VALUES,
    other: st.SearchStrategy[Any] | None = None,
) -> dict[str, Any] | None:
    """Records' metadata: each key missing, null or one of its values (or, with ``other``, one of those)."""
    if draw(st.integers(0, 9)) == 0:
        return None
    out: dict[str, Any] = {}
    for key, values in keys.items():
        choice = draw(st.integers(0, 4))
        if choice == 0:
            continue  # missing
        out[key] = None if choice == 1 else draw(other if other is not None and choice == 2 else values)
    return out


@st.composite
def conditions(draw: st.DrawFn, keys: tuple[str, ...] = tuple(sorted(VALUES))) -> FilterNode:
    field = "metadata." + draw(st.sampled_from(keys))
    op = draw(
        st.sampled_from(
            ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like", "contains", "exists", "null"]
        )
    )
    if op in ("exists", "null"):
        return condition(field, op, draw(st.booleans()))
    if op in ("in", "nin"):
        return condition(field, op, draw(st.lists(st.one_of(LITERALS, st.none()), max_size=4)))
    if op == "like":
        return condition(field, op, draw(st.sampled_from(["a%", "%", "_", "a", "%b", "it''s"])))
    if op == "contains":
        return condition(field, op, draw(st.one_of(STRINGS, st.integers(-3, 3), st.booleans())))
    value = draw(LITERALS if op in ("eq", "ne") else st.one_of(STRINGS, FLOATS))
    return condition(field, op, value)


def filter_trees(keys: tuple[str, ...] = tuple(sorted(VALUES))) -> st.SearchStrategy[FilterNode]:
    """Random filters of up to five conditions on ``metadata.<key>`` for ``keys``."""
    return st.recursive(
        conditions(keys),
        lambda children: st.one_of(
            st.lists(children, min_size=1, max_size=3).map(lambda c: and_(*c)),
            st.lists(children, min_size=1, max_size=3).map(lambda c: or_(*c)),
            children.map(not_),
        ),
        max_leaves=5,
    )


trees = filter_trees()


def _store(**kwargs: Any) -> Any:
    # No memory cache: every filter runs as SQL on LanceDB.
    return create_vector_store(uri="memory://", memory_cache=None, **kwargs)


def _records(metas: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "vector": [1.0, 0.5], "metadata": m} for i, m in enumerate(metas)]


def _ids(vs: Any, name: str, node: FilterNode) -> set[str]:
    return {m.id for m in vs(name).where(node).get_sync([f"r{i}" for i in range(20)])}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(metas=st.lists(metadata(), min_size=1, max_size=10), nodes=st.lists(trees, min_size=1, max_size=4))
def test_declared_columns_select_what_evaluate_accepts(
    metas: list[dict[str, Any] | None], nodes: list[FilterNode]
) -> None:
    vs = _store(fields=FIELDS)
    name = f"d{next(_names)}"
    records = _records(metas)
    vs(name).upsert_sync(records)
    for node in nodes:
        expected = {r["id"] for r in records if evaluate(node, r)}
        assert _ids(vs, name, node) == expected, to_sql(node, CANONICAL)
        assert vs(name).where(node).count_sync() == len(expected)


@pytest.mark.parametrize(
    ("node", "column"),
    [
        (condition("metadata.s", "eq", "a"), "`s` = 'a'"),
        (condition("metadata.n", "gt", 5), "`n` > 5"),
        # Numbers compare as float64: 2**53 + 1 rounds to 2**53; 0.5 lies between 0 and 1.
        (condition("metadata.n", "eq", 2**53 + 1), "`n` = 9007199254740992)"),
        (condition("metadata.n", "gt", 0.5), "`n` > 0)"),
        (condition("metadata.n", "lt", 0.5), "`n` < 1)"),
        (condition("metadata.f", "lte", 0.5), "`f` <= 0.5"),
        (condition("metadata.b", "eq", True), "`b` = true"),
        (condition("metadata.t", "contains", "a"), "array_has(`t`, 'a')"),
        (condition("metadata.s", "null"), "`s` IS NULL"),
    ],
    ids=repr,
)
def test_declared_fields_compile_to_their_column(node: FilterNode, column: str) -> None:
    sql = to_sql(node, CANONICAL)
    assert column in sql
    assert "json" not in sql  # the metadata JSON is not read at all


def test_other_keys_and_nested_paths_still_read_the_json() -> None:
    assert "json_extract" in to_sql(condition("metadata.other", "eq", 1), CANONICAL)
    assert "json_extract" in to_sql(condition("metadata.s.inner", "eq", 1), CANONICAL)
    # A literal of another type can never equal a typed column: nothing to read.
    assert to_sql(condition("metadata.n", "eq", "5"), CANONICAL) == "false"


def test_declaring_on_a_collection_with_rows_migrates_it() -> None:
    vs = _store()
    metas = [{"s": "a" if i % 3 else "b", "n": i, "t": ["x"] if i % 2 else []} for i in range(40)]
    metas.append({"other": 1})
    vs("m").upsert_sync(_records(metas))
    node = and_(condition("metadata.s", "eq", "a"), condition("metadata.n", "gte", 10))
    before = vs("m").where(node).count_sync()
    info = vs.declare_fields_sync("m", {"s": str, "n": "int", "t": list[str]})
    assert info.fields == {"s": "str", "n": "int", "t": "list[str]"}
    assert {"s_idx:BTree", "n_idx:BTree", "t_idx:LabelList"} <= set(info.indexes)
    assert info.rows == 41
    assert (
        vs("m").where(node).count_sync()
        == before
        == sum(1 for m in metas if m.get("s") == "a" and m.get("n", -1) >= 10)
    )
    assert vs("m").where("metadata.t", "contains", "x").count_sync() == 20
    # Reads still return the whole metadata, declared keys included.
    assert vs("m").get_sync(["r3"])[0].metadata == {"s": "b", "n": 3, "t": ["x"]}
    # Idempotent; a new type for the same key is refused.
    assert vs.declare_fields_sync("m", {"s": str}).fields == info.fields
    with pytest.raises(VectorStoreUsageError, match="cannot become") as exc_info:
        vs.declare_fields_sync("m", {"s": int})
    assert exc_info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"


def test_a_row_of_another_type_refuses_the_declaration_and_changes_nothing() -> None:
    vs = _store()
    vs("w").upsert_sync(_records([{"year": 2020}, {"year": "2021"}]))
    version = vs.collection_info_sync("w").version
    with pytest.raises(
        VectorStoreUsageError, match=r"id 'r1'.*metadata\.year is a declared int field"
    ) as exc_info:
        vs.declare_fields_sync("w", {"year": int})
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    info = vs.collection_info_sync("w")
    assert (info.fields, info.version) == ({}, version)


def test_writes_refuse_a_value_of_another_type_naming_the_record() -> None:
    vs = _store(fields={"tenant": str, "n": int})
    with pytest.raises(VectorStoreUsageError) as caught:
        vs("v").upsert_sync(_records([{"tenant": "A"}, {"tenant": 7}]))
    assert caught.value.code == "E_INVALID_VECTOR_RECORD"
    assert "id 'r1'" in str(caught.value) and "metadata.tenant" in str(caught.value)
    with pytest.raises(VectorStoreUsageError, match="larger than 2") as exc_info:
        vs("v").upsert_sync(_records([{"n": 2**60}]))
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    assert not vs.has_collection_sync("v")  # a refused first batch creates nothing


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        ({"id": str}, "column of every collection"),
        ({"_x": str}, "reserved"),
        ({"a.b": str}, "plain metadata key"),
        ({"a": dict}, "supported: str, int, float, bool, list"),
        ({"a": "list[int]"}, "supported"),
        ({"a": ["str"]}, "supported"),
        ({"a": {"type": "str"}}, "supported"),
    ],
)
def test_bad_declarations_are_refused(fields: dict[str, Any], match: str) -> None:
    with pytest.raises(VectorStoreUsageError, match=match) as exc_info:
        create_vector_store(uri="memory://", fields=fields)
    assert exc_info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"


def test_a_declaration_by_another_process_reaches_this_processs_writes(tmp_path: Path) -> None:
    uri = str(tmp_path / "db")
    vs = create_vector_store(uri=uri, memory_cache=None)
    vs("p").upsert_sync(_records([{"tenant": "A"}]))
    assert vs.collection_info_sync("p").fields == {}  # this process's handle predates the declaration
    script = textwrap.dedent(
        f"""
        from turnkit.batteries.vector import create_vector_store
        create_vector_store(uri={uri!r}).declare_fields_sync("p", {{"tenant": str}})
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ, "LANCEDB_LOG": "error"})
    # This store never heard of the field; its write still fills the column (read on the version it lands on).
    vs("p").upsert_sync([{"id": "late", "vector": [0.2, 0.9], "metadata": {"tenant": "B"}}])
    fresh = create_vector_store(uri=uri, memory_cache=None)
    assert fresh.collection_info_sync("p").fields == {"tenant": "str"}
    assert {m.id for m in fresh("p").where("metadata.tenant", "B").get_sync(["r0", "late"])} == {"late"}
    assert fresh("p").where("metadata.tenant", "A").count_sync() == 1


@pytest.mark.parametrize("op", ["gt", "gte", "lt", "lte", "eq", "ne"])
@pytest.mark.parametrize("value", [1e300, -1e300, 1e20, -(1e20), 2**63 - 1, 2.0**53 + 2, -(2.0**53) - 2])
def test_int_fields_compare_with_numbers_beyond_2_53_as_evaluate_does(op: str, value: float) -> None:
    # The largest storable magnitudes sit right at the edge an out-of-range bound is clamped to.
    vs = _store(fields={"n": int})
    records = _records([{"n": 2**53}, {"n": -(2**53)}, {"n": 0}, {"n": None}, {}])
    vs("big").upsert_sync(records)
    node = condition("metadata.n", op, value)
    expected = {r["id"] for r in records if evaluate(node, r)}
    assert _ids(vs, "big", node) == expected, to_sql(node, CANONICAL)


def test_fragments_written_before_a_declaration_are_refused_at_commit(tmp_path: Path) -> None:
    pytest.importorskip("lance")
    from turnkit.batteries.vector import VectorStoreRuntimeError
    from turnkit.batteries.vector.store._fragments import commit_fragments_sync, write_fragments_sync

    vs = create_vector_store(uri=str(tmp_path / "db"), memory_cache=None, fields={"z": str})
    vs("f").upsert_sync(_records([{"z": "a", "late": "L0"}]))
    before = write_fragments_sync(vs, "f", [{"id": "b", "vector": [0.3, 1.0], "metadata": {"late": "L"}}])
    vs.declare_fields_sync("f", {"late": str})
    # Committed, the fragment would read NULL in `late` while its JSON holds "L": the filter would miss it.
    with pytest.raises(
        VectorStoreRuntimeError, match="gained the columns late .* after these fragments"
    ) as exc_info:
        commit_fragments_sync(vs, "f", before)
    assert exc_info.value.code == "E_VECTOR_STORE_UPSERT_FAILED"
    assert vs("f").count_sync() == 1
    after = write_fragments_sync(vs, "f", [{"id": "b", "vector": [0.3, 1.0], "metadata": {"late": "L"}}])
    assert commit_fragments_sync(vs, "f", after) == 1
    assert {m.id for m in vs("f").where("metadata.late", "L").get_sync(["r0", "b"])} == {"b"}
    assert vs("f").where("metadata.late", "L0").count_sync() == 1


def test_a_declaration_cut_short_can_be_made_again_with_another_type(tmp_path: Path) -> None:
    import lancedb  # noqa: TID251 - a cut-short declaration is made below the store
    import pyarrow as pa

    uri = str(tmp_path / "db")
    vs = create_vector_store(uri=uri, memory_cache=None)
    vs("cut").upsert_sync(_records([{"u": 1}, {"u": 2}, {}]))
    # What a declaration killed after adding its column, before marking it, leaves behind.
    lancedb.connect(uri).open_table("cut").add_columns([pa.field("u", pa.string())])
    fresh = create_vector_store(uri=uri, memory_cache=None)
    assert fresh.collection_info_sync("cut").fields == {}
    assert fresh.declare_fields_sync("cut", {"u": int}).fields == {"u": "int"}
    assert {m.id for m in fresh("cut").where("metadata.u", "gte", 2).get_sync(["r0", "r1", "r2"])} == {"r1"}


def test_float_fields_take_integers_beyond_2_53() -> None:
    # JSON keeps any 64-bit integer; the float column holds it as float64, which is how filters compare it.
    big = [2**53 + 1, 2**63 - 1, -(2**63)]
    vs = _store()
    records = _records([{"f": v} for v in big] + [{"f": 0.5}])
    vs("fb").upsert_sync(records[:2])
    vs.declare_fields_sync("fb", {"f": float})
    vs("fb").upsert_sync(records[2:])
    assert vs("fb").get_sync(["r0"])[0].metadata == {"f": 2**53 + 1}
    for node in (
        condition("metadata.f", "eq", 2**53),
        condition("metadata.f", "gt", 1e18),
        condition("metadata.f", "lt", 0),
    ):
        assert _ids(vs, "fb", node) == {r["id"] for r in records if evaluate(node, r)}, node


def test_declaring_on_a_table_holding_an_id_twice_fills_each_row_from_its_own_metadata(
    tmp_path: Path,
) -> None:
    from tests.store.test_store_writers import _duplicated

    uri = str(tmp_path / "db")
    ids = [f"i{k}" for k in range(10)]
    _duplicated(uri, ids)  # each id twice: metadata v=1, and a newer copy with v=2
    vs = create_vector_store(uri, memory_cache=None, auto_optimize=None)
    vs.declare_fields_sync("d", {"v": int})
    # Reads return the newest copy of each id (v=2); the column must agree row by row with the JSON.
    assert sorted((m.id, m.metadata) for m in vs("d").get_sync(ids)) == [(i, {"v": 2}) for i in ids]
    assert vs("d").where("metadata.v", 2).count_sync() == vs("d").count_sync() == 10
    assert vs("d").where("metadata.v", 1).count_sync() == 0


def test_declaring_scalar_fields_keeps_every_row_in_the_vector_index() -> None:
    vs = _store()
    vs("ix").upsert_sync(
        [{"id": f"r{i}", "vector": [1.0, float(i % 7)], "metadata": {"t": f"v{i % 5}"}} for i in range(3000)]
    )
    vs("ix").create_index_sync("ivf_flat")
    assert vs.collection_info_sync("ix").unindexed_rows == 0
    info = vs.declare_fields_sync("ix", {"t": str})
    # The column is computed from the JSON without rewriting rows: nothing left the vector index.
    assert info.unindexed_rows == 0
    assert vs("ix").where("metadata.t", "v3").count_sync() == 600


def test_create_collection_with_exist_ok_declares_the_fields_on_an_existing_one() -> None:
    vs = _store()
    vs("e").upsert_sync(_records([{"t": "a"}, {"t": "b"}]))
    info = vs.create_collection_sync("e", dimension=2, fields={"t": str}, exist_ok=True)
    assert (info.fields, info.rows) == ({"t": "str"}, 2)
    assert vs("e").where("metadata.t", "b").count_sync() == 1
