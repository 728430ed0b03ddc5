import pytest

from turnkit.batteries.vector import (
    InvalidFilterError,
    parse_mongo,
)

from ._data import DOCS


def ids(q):
    return sorted(m.id for m in q.select("id").limit(100).search_sync())


def test_where_forms_compile_and_run(vs, collection):
    vs(collection).upsert_sync(DOCS)
    q = vs(collection)
    assert ids(q.where("metadata.kind", "pet")) == ["cat", "dog"]
    assert ids(q.where("metadata.year", ">=", 2022)) == ["bus", "dog"]
    assert ids(q.where({"metadata.kind": "vehicle", "metadata.year": {"$lt": 2020}})) == ["car"]
    assert ids(q.where_in("id", ["cat", "sky"])) == ["cat", "sky"]
    assert ids(q.where_not_in("id", ["cat", "sky"])) == ["bus", "car", "dog"]
    assert ids(q.where_null("metadata.year")) == ["sky"]
    assert ids(q.where_exists("metadata.o")) == ["sky"]
    assert ids(q.where("metadata.o.z", "deep")) == ["sky"]
    assert ids(q.where("metadata.tags", "contains", "a")) == ["cat"]
    assert ids(q.where("document", "like", "the %")) == ["bus", "cat", "dog"]
    assert ids(q.where(parse_mongo({"kind": {"$in": ["pet", "nature"]}}, field_prefix="metadata."))) == [
        "cat",
        "dog",
        "sky",
    ]


def test_and_or_grouping(vs, collection):
    vs(collection).upsert_sync(DOCS)
    q = vs(collection)
    # (kind = pet AND year > 2021) OR id = car
    assert ids(q.where("metadata.kind", "pet").where("metadata.year", ">", 2021).or_where("id", "car")) == [
        "car",
        "dog",
    ]
    # kind = vehicle AND (year < 2020 OR year > 2022)
    grouped = q.where("metadata.kind", "vehicle").where(
        lambda g: g.where("metadata.year", "<", 2020).or_where("metadata.year", ">", 2022)
    )
    assert ids(grouped) == ["bus", "car"]
    assert ids(
        q.where_not(lambda g: g.where("metadata.kind", "pet").or_where("metadata.kind", "nature"))
    ) == [
        "bus",
        "car",
    ]


def test_filters_combine_with_near_text(vs, collection):
    vs(collection).upsert_sync(DOCS)
    matches = (
        vs(collection)
        .near_text("the cat")
        .where("metadata.kind", "vehicle")
        .select("id")
        .limit(5)
        .search_sync()
    )
    assert {m.id for m in matches} == {"bus", "car"}


def test_where_raw_binds_values_safely(vs, collection):
    vs(collection).upsert_sync(DOCS)
    q = vs(collection)
    assert ids(q.where_raw("id = ?", ["cat"])) == ["cat"]
    # A value can never become SQL: the classic injection matches nothing.
    assert ids(q.where_raw("id = ?", ["x' OR '1'='1"])) == []
    assert ids(q.where("id", "x' OR '1'='1")) == []
    assert q.where("id", "x' OR '1'='1").count_sync() == 0
    with pytest.raises(InvalidFilterError) as info:
        q.where_raw("id = ? OR id = ?", ["a"])
    assert info.value.code == "E_VECTOR_STORE_RAW_BINDING_MISMATCH"


def test_delete_with_injection_value_deletes_nothing(vs, collection):
    vs(collection).upsert_sync(DOCS)
    assert vs(collection).where("id", "x' OR '1'='1").delete_sync() == 0
    assert vs(collection).where_in("id", ["'; DELETE FROM t; --"]).delete_sync() == 0
    assert vs(collection).count_sync() == 5


def test_bad_raw_sql_is_a_filter_error(vs, collection):
    vs(collection).upsert_sync(DOCS)
    with pytest.raises(InvalidFilterError) as info:
        vs(collection).where_raw("no_such_column = ?", [1]).select("id").search_sync()
    assert info.value.code == "E_VECTOR_STORE_INVALID_FILTER"
