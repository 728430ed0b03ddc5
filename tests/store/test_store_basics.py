import asyncio
import datetime as dt
import json
import math
import re
import threading
import uuid

import numpy as np
import pytest

from turnkit import TurnkitError
from turnkit.batteries.vector import (
    CollectionNotFoundError,
    EncoderRequiredError,
    FunctionEncoder,
    HashEncoder,
    InvalidFilterError,
    RecordNotFoundError,
    UnknownFieldError,
    VectorMatch,
    VectorStoreUsageError,
    create_vector_store,
)
from turnkit.batteries.vector.store._catalog import drop

from ._data import DOCS


def test_upsert_then_near_text_ranks_by_similarity(vs, collection):
    result = vs(collection).upsert_sync(DOCS)
    assert (result.inserted, result.updated) == (5, 0)
    matches = vs(collection).near_text("cat on a mat").select("id", "document").limit(3).search_sync()
    assert matches[0].id == "cat"
    assert [m.score for m in matches] == sorted((m.score for m in matches), reverse=True)
    for m in matches:
        assert 0.0 <= m.score <= 1.0
        assert m.distance is not None and math.isclose(m.score, 1 - m.distance / 2, abs_tol=1e-6)
        assert m.metadata is None and m.vector is None  # not selected


def test_awaiting_the_builder_searches(vs, collection):
    vs(collection).upsert_sync(DOCS)

    async def main():
        return await vs(collection).near_text("bus late").select("id").limit(1)

    assert asyncio.run(main())[0].id == "bus"


def test_upsert_replaces_whole_record(vs, collection):
    vs(collection).upsert_sync(DOCS)
    result = vs(collection).upsert_sync([{"id": "cat", "document": "a kitten", "metadata": {"new": True}}])
    assert (result.inserted, result.updated) == (0, 1)
    (cat,) = vs(collection).get_sync(["cat"])
    assert cat.document == "a kitten" and cat.metadata == {"new": True}
    assert vs(collection).count_sync() == 5


def test_default_projection_and_select_fields(vs, collection):
    vs(collection).upsert_sync(DOCS)
    # Without select(): id, document, metadata and the score, as select("id", "document", "metadata").
    plain = vs(collection).near_text("cat").limit(3).search_sync()
    chosen = vs(collection).near_text("cat").select("id", "document", "metadata").limit(3).search_sync()
    assert plain == chosen and plain[0].document and plain[0].score is not None
    assert plain[0].vector is None and plain[0].created_at is None
    assert vs(collection).near_text("cat").limit(3).spec.select is None  # the spec keeps what was asked
    (m,) = vs(collection).near_text("cat").select("*").limit(1).search_sync()
    assert m.vector is not None and len(m.vector) == 256
    assert m.created_at is not None and m.created_at.tzinfo is not None
    (m,) = (
        vs(collection)
        .near_text("sky")
        .select("id", "metadata.o.z", "metadata.missing")
        .limit(1)
        .search_sync()
    )
    assert m.metadata == {"o": {"z": "deep"}}
    with pytest.raises(UnknownFieldError):
        vs(collection).select("nope")


def test_filter_scan_has_no_score(vs, collection):
    vs(collection).upsert_sync(DOCS)
    matches = vs(collection).where("metadata.kind", "vehicle").select("id").search_sync()
    assert sorted(m.id for m in matches) == ["bus", "car"]
    assert all(m.score is None and m.distance is None for m in matches)


def test_builder_is_immutable_and_reusable(vs, collection):
    base = vs(collection).where("metadata.kind", "pet")
    a = base.limit(1)
    b = base.where("metadata.year", ">", 2021)
    assert base.spec.limit == 10 and a.spec.limit == 1
    assert base.spec.filter != b.spec.filter
    assert base.spec.where_sql != b.spec.where_sql
    vs(collection).upsert_sync(DOCS)
    assert {m.id for m in base.select("id").search_sync()} == {"cat", "dog"}
    assert {m.id for m in b.select("id").search_sync()} == {"dog"}


def test_near_clauses_are_exclusive(vs, collection):
    q = vs(collection).near_text("x")
    with pytest.raises(VectorStoreUsageError) as info:
        q.near_vector([0.1] * 256)
    assert info.value.code == "E_VECTOR_STORE_QUERY_CONFLICT"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs(collection).near_id("a").near_text("x")
    assert exc_info.value.code == "E_VECTOR_STORE_QUERY_CONFLICT"


@pytest.mark.parametrize(
    ("call", "arg"),
    [
        ("limit", 0),
        ("limit", 10_001),
        ("limit", 2.5),
        ("offset", -1),
        ("min_score", 1.5),
        ("max_distance", -1),
        ("nprobes", 0),
        ("ef", True),
        ("near_text", ""),
        ("near_vector", [math.nan]),
    ],
)
def test_options_are_validated_at_the_call(vs, collection, call, arg):
    with pytest.raises(VectorStoreUsageError) as info:
        getattr(vs(collection), call)(arg)
    assert info.value.code == "E_VECTOR_STORE_INVALID_QUERY"


def test_encoder_required_for_text(tmp_path, collection):
    store = create_vector_store(uri=str(tmp_path), encoder=None)
    with pytest.raises(EncoderRequiredError) as info:
        store(collection).upsert_sync([{"id": "a", "document": "text"}])
    assert info.value.code == "E_VECTOR_STORE_ENCODER_REQUIRED"
    assert "encoder" in info.value.hint
    store(collection).upsert_sync([{"id": "a", "vector": [1.0, 0.0, 0.0]}])
    with pytest.raises(EncoderRequiredError):
        store(collection).near_text("text").select("id").search_sync()
    (m,) = store(collection).near_vector([1.0, 0.0, 0.0]).select("id").search_sync()
    assert m.id == "a" and m.score == pytest.approx(1.0)


def test_documents_are_encoded_in_batches(tmp_path, collection):
    calls: list[int] = []
    inner = HashEncoder(16)

    def encode(texts, kind):
        calls.append(len(texts))
        return inner.encode(texts, kind=kind)

    store = create_vector_store(
        uri=str(tmp_path), encoder=FunctionEncoder(encode, name="fn", dimension=16, batch_size=100)
    )
    store(collection).upsert_sync([{"id": f"r{i}", "document": f"text {i}"} for i in range(250)])
    assert calls == [100, 100, 50]
    assert store(collection).count_sync() == 250


def test_async_encoder_is_awaited(tmp_path, collection):
    inner = HashEncoder(8)

    async def encode(texts, kind):
        await asyncio.sleep(0)
        return inner.encode(texts, kind=kind)

    store = create_vector_store(uri=str(tmp_path), encoder=FunctionEncoder(encode, name="afn", dimension=8))
    store(collection).upsert_sync([{"id": "a", "document": "hello there"}])
    assert store(collection).near_text("hello").select("id").search_sync()[0].id == "a"


@pytest.mark.parametrize(
    ("records", "index", "fragment"),
    [
        ([{"id": "ok", "document": "x"}, {"id": "", "document": "y"}], 1, "non-empty"),
        ([{"id": "a", "document": "x"}, {"id": "a", "document": "y"}], 1, "duplicate"),
        ([{"id": "a", "document": "x"}, {"id": "b", "vector": [1.0, math.nan] + [0.0] * 254}], 1, "NaN"),
        ([{"id": "a", "document": "x", "metadata": {"t": object()}}], 0, "JSON"),
        ([{"id": "a", "document": "x", "metadata": {"f": math.inf}}], 0, "JSON"),
        ([{"id": "a", "document": "x", "extra": 1}], 0, "unknown keys"),
        ([{"id": "a"}], 0, "needs a `vector` or a `document`"),
        ([{"id": "a", "document": 3}], 0, "string"),
        (["not a dict"], 0, "mapping"),
        ([{"id": "a", "document": "x", "created_at": "2024-01-01T00:00:00"}], 0, "timezone"),
    ],
)
def test_invalid_records_write_nothing(vs, collection, records, index, fragment):
    vs(collection).upsert_sync(DOCS)
    before = vs(collection).select("*").limit(100).search_sync()
    with pytest.raises(VectorStoreUsageError) as info:
        vs(collection).upsert_sync(records)
    assert info.value.code == "E_INVALID_VECTOR_RECORD"
    assert info.value.index == index
    assert fragment in str(info.value)
    assert vs(collection).select("*").limit(100).search_sync() == before


def test_wrong_dimension_is_rejected(vs, collection):
    vs(collection).upsert_sync(DOCS)
    with pytest.raises(VectorStoreUsageError) as info:
        vs(collection).upsert_sync([{"id": "v", "vector": [0.1, 0.2]}])
    assert info.value.index == 0 and info.value.code == "E_VECTOR_STORE_DIMENSION_MISMATCH"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs(collection).near_vector([0.1, 0.2]).select("id").search_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_DIMENSION_MISMATCH"
    assert vs(collection).count_sync() == 5


def test_delete_needs_a_filter_or_consent(vs, collection):
    vs(collection).upsert_sync(DOCS)
    with pytest.raises(VectorStoreUsageError) as info:
        vs(collection).delete_sync()
    assert info.value.code == "E_VECTOR_STORE_UNSAFE_DELETE"
    assert vs(collection).count_sync() == 5
    assert vs(collection).where_in("id", ["cat", "nope"]).delete_sync() == 1
    assert vs(collection).where("metadata.kind", "vehicle").delete_sync() == 2
    assert sorted(m.id for m in vs(collection).select("id").search_sync()) == ["dog", "sky"]
    assert vs(collection).delete_sync(all=True) == 2
    assert vs(collection).count_sync() == 0


def test_count_and_get(vs, collection):
    vs(collection).upsert_sync(DOCS)
    assert vs(collection).count_sync() == 5
    assert vs(collection).where("metadata.kind", "pet").count_sync() == 2
    got = vs(collection).get_sync(["sky", "missing", "cat"])
    assert [m.id for m in got] == ["sky", "cat"]
    assert got[1].metadata == DOCS[0]["metadata"] and got[1].vector is None
    assert vs(collection).where("metadata.kind", "nature").get_sync(["sky", "cat"])[0].id == "sky"
    assert vs(collection).get_sync([]) == []


def test_near_id(vs, collection):
    vs(collection).upsert_sync(DOCS)
    matches = vs(collection).near_id("cat").select("id").limit(2).search_sync()
    assert matches[0].id == "cat" and matches[0].score == pytest.approx(1.0, abs=1e-5)
    assert (
        vs(collection).near_id("cat").where_not("id", "cat").select("id").limit(1).search_sync()[0].id
        != "cat"
    )
    with pytest.raises(RecordNotFoundError):
        vs(collection).near_id("missing").select("id").search_sync()


def test_thresholds(vs, collection):
    vs(collection).upsert_sync(DOCS)
    all_matches = vs(collection).near_text("cat mat").select("id").limit(5).search_sync()
    cut = all_matches[1].score
    kept = vs(collection).near_text("cat mat").select("id").min_score(cut).limit(5).search_sync()
    assert [m.id for m in kept] == [m.id for m in all_matches if m.score >= cut]
    far = all_matches[2].distance
    kept = vs(collection).near_text("cat mat").select("id").max_distance(far).limit(5).search_sync()
    assert [m.id for m in kept] == [m.id for m in all_matches if m.distance <= far]


def test_offset(vs, collection):
    vs(collection).upsert_sync(DOCS)
    full = [m.id for m in vs(collection).near_text("the cat").select("id").limit(5).search_sync()]
    page = [m.id for m in vs(collection).near_text("the cat").select("id").offset(2).limit(2).search_sync()]
    assert page == full[2:4]


@pytest.mark.parametrize("metric", ["cosine", "l2", "dot"])
def test_scores_are_similarities_for_every_metric(tmp_path, metric):
    store = create_vector_store(uri=str(tmp_path), metric=metric)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(20, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store("m").upsert_sync([{"id": str(i), "vector": v} for i, v in enumerate(vectors)])
    matches = store("m").near_vector(vectors[3]).select("id").limit(20).search_sync()
    assert matches[0].id == "3" and matches[0].score == pytest.approx(1.0, abs=1e-5)
    scores = [m.score for m in matches]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)
    assert store.collection_info_sync("m").metric == metric


def test_sync_forms_work_inside_a_running_loop(vs, collection):
    async def main():
        # A notebook cell or an async handler calling the sync API.
        vs(collection).upsert_sync(DOCS)
        return vs(collection).near_text("dog").select("id").limit(1).search_sync()

    assert asyncio.run(main())[0].id == "dog"


def test_collection_management(tmp_path):
    store = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(16))
    assert store.list_collections_sync() == []
    info = store.create_collection_sync("docs")
    assert (info.dimension, info.metric, info.encoder, info.rows) == (16, "cosine", "turnkit-hash-16", 0)
    with pytest.raises(VectorStoreUsageError) as exc_info:
        store.create_collection_sync("docs")
    assert exc_info.value.code == "E_VECTOR_STORE_COLLECTION_EXISTS"
    store.create_collection_sync("docs", exist_ok=True)
    store.create_collection_sync("raw", dimension=3, metric="l2")
    with pytest.raises(VectorStoreUsageError) as exc_info:
        store.create_collection_sync("odd", dimension=3, metric="bogus")
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY" and "unknown metric 'bogus'" in str(
        exc_info.value
    )
    assert store.list_collections_sync() == ["docs", "raw"]
    assert store.has_collection_sync("raw") and not store.has_collection_sync("nope")
    assert store.drop_collection_sync("raw") is True
    assert store.drop_collection_sync("raw", missing_ok=True) is False
    with pytest.raises(CollectionNotFoundError):
        store.drop_collection_sync("raw")
    with pytest.raises(CollectionNotFoundError) as info:
        store("nope").near_text("x").select("id").search_sync()
    assert info.value.code == "E_VECTOR_STORE_COLLECTION_NOT_FOUND"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        store("bad name/with slash")
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_COLLECTION_NAME"


def test_metadata_survives_a_new_process_handle(tmp_path):
    a = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(16), metric="dot")
    a("docs").upsert_sync(DOCS)
    b = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(16))  # store default metric differs
    info = b.collection_info_sync("docs")
    assert (info.metric, info.dimension, info.encoder, info.rows) == ("dot", 16, "turnkit-hash-16", 5)
    assert b("docs").near_text("red car").select("id").limit(1).search_sync()[0].id == "car"
    c = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(32))
    with pytest.raises(VectorStoreUsageError) as info2:
        c("docs").near_text("car").select("id").search_sync()
    assert info2.value.code == "E_VECTOR_STORE_ENCODER_MISMATCH"


def test_reader_in_another_handle_sees_writes_with_consistency_interval(tmp_path):
    from datetime import timedelta

    writer = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(16))
    writer("docs").upsert_sync(DOCS[:2])
    reader = create_vector_store(
        uri=str(tmp_path), encoder=HashEncoder(16), read_consistency_interval=timedelta(0)
    )
    assert reader("docs").count_sync() == 2
    writer("docs").upsert_sync(DOCS[2:])
    assert reader("docs").count_sync() == 5


def test_concurrent_upserts_of_a_new_id_leave_one_row_threads(vs, collection):
    vs(collection).upsert_sync([{"id": "seed", "document": "seed"}])
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            barrier.wait()
            vs(collection).upsert_sync([{"id": "same", "document": f"version {i}"}])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert vs(collection).where("id", "same").count_sync() == 1


def test_concurrent_upserts_of_a_new_id_leave_one_row_gather(vs, collection):
    vs(collection).upsert_sync([{"id": "seed", "document": "seed"}])

    async def main():
        await asyncio.gather(
            *(vs(collection).upsert([{"id": "same", "document": f"v{i}"}]) for i in range(8))
        )
        return await vs(collection).where("id", "same").count()

    assert asyncio.run(main()) == 1


def test_store_options_are_validated():
    with pytest.raises(VectorStoreUsageError) as exc_info:
        create_vector_store(uri="memory://", metric="hamming-ish")
    assert exc_info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        create_vector_store(uri="memory://", encoder=object())
    assert exc_info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        create_vector_store(uri="")
    assert exc_info.value.code == "E_INVALID_VECTOR_STORE_CONFIG"


def test_errors_are_turnkit_errors_with_codes_and_pickle(vs, collection):
    import pickle

    with pytest.raises(TurnkitError) as info:
        vs(collection).upsert_sync([{"id": "", "document": "x"}])
    clone = pickle.loads(pickle.dumps(info.value))
    assert type(clone) is type(info.value) and clone.code == info.value.code and clone.index == 0
    assert json.dumps(info.value.to_dict())


def test_vector_match_is_frozen():
    m = VectorMatch(id="a")
    with pytest.raises(AttributeError):
        m.id = "b"  # type: ignore[misc]


def test_get_reads_long_id_lists_in_chunks(mem_vs, collection):
    from turnkit.batteries.vector import MAX_IN_VALUES

    n = MAX_IN_VALUES + 2_500
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(n, 256)).astype(np.float32)
    mem_vs(collection).upsert_sync([{"id": f"r{i}", "vector": vectors[i]} for i in range(n)])
    wanted = [f"r{i}" for i in range(n - 1, -1, -1)] + ["missing"]
    got = mem_vs(collection).select("id").get_sync(wanted)
    assert [m.id for m in got] == wanted[:-1]


@pytest.mark.parametrize("value", [2**64, -(2**63) - 1, 10**400, {"deep": [1, 2**70]}])
def test_integers_lancedb_cannot_keep_are_rejected(vs, collection, docs, value):
    vs(collection).upsert_sync(docs)
    with pytest.raises(VectorStoreUsageError, match="64 bits") as info:
        vs(collection).upsert_sync([{"id": "big", "document": "x", "metadata": {"n": value}}])
    assert info.value.code == "E_INVALID_VECTOR_RECORD"
    assert info.value.index == 0
    assert vs(collection).count_sync() == len(docs)


@pytest.mark.parametrize("value", [2**64 - 1, -(2**63), 0, True])
def test_integers_at_the_64_bit_edges_round_trip(vs, collection, value):
    vs(collection).upsert_sync([{"id": "edge", "document": "x", "metadata": {"n": value}}])
    assert vs(collection).get_sync(["edge"])[0].metadata == {"n": value}


def test_a_raw_filter_with_a_bad_json_path_is_a_filter_error(vs, collection, docs):
    vs(collection).upsert_sync(docs)
    with pytest.raises(InvalidFilterError):
        vs(collection).where_raw("json_extract(metadata, '$[[') = ?", ["x"]).select("id").search_sync()


def test_nested_non_string_keys_are_rejected_not_silently_renamed(vs, collection):
    with pytest.raises(VectorStoreUsageError, match="keys must be strings") as info:
        vs(collection).upsert_sync([{"id": "k", "document": "x", "metadata": {"a": [{"b": {1: "x"}}]}}])
    assert info.value.code == "E_INVALID_VECTOR_RECORD"
    assert "metadata.a[0].b" in str(info.value)


@pytest.mark.parametrize(
    "narrow",
    [
        lambda q: q.where(lambda g: g),
        lambda q: q.where({}),
        lambda q: q.where_not_in("id", []),
        lambda q: q.where_not(lambda g: g.where_in("id", [])),
        lambda q: q.where({"$or": [{"metadata.kind": "pet"}, {"$and": []}]}),
    ],
)
def test_a_filter_that_matches_everything_needs_consent_to_delete(vs, collection, docs, narrow):
    vs(collection).upsert_sync(docs)
    with pytest.raises(VectorStoreUsageError, match="matches every record") as exc_info:
        narrow(vs(collection)).delete_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_UNSAFE_DELETE"
    assert vs(collection).count_sync() == len(docs)
    assert narrow(vs(collection)).delete_sync(all=True) == len(docs)


def test_two_stores_on_one_directory_share_the_writer_lock_and_see_each_other(tmp_path, collection):
    a = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(8), auto_optimize=None)
    b = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(8), auto_optimize=None)
    a(collection).upsert_sync([{"id": "seed", "document": "x"}])
    assert b(collection).count_sync() == 1  # b opens its handle now

    def write(store):
        store(collection).upsert_sync([{"id": "same", "document": "y"}])

    threads = [threading.Thread(target=write, args=(s,)) for s in [a, b] * 4]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a(collection).where("id", "same").count_sync() == 1
    a(collection).upsert_sync([{"id": "late", "document": "z"}])
    assert b(collection).count_sync() == 3  # b's handle moved to a's latest commit

    a.drop_collection_sync(collection)
    a(collection).upsert_sync([{"id": "v2", "vector": [1.0, 0.0, 0.0]}])
    assert b.collection_info_sync(collection).dimension == 3
    assert [m.id for m in b(collection).select("id").search_sync()] == ["v2"]


def test_a_handle_opened_while_another_store_drops_the_collection_is_not_kept(tmp_path, collection):
    """b's search reopens the table during a's drop; after the drop that handle is stale, not reused."""
    from turnkit._aio import run_sync

    a = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    b = create_vector_store(uri=str(tmp_path), auto_optimize=None, memory_cache=None)
    a(collection).upsert_sync([{"id": "old", "vector": [1.0, 0.0]}])
    query = b(collection).near_vector([1.0, 0.0]).select("id")
    assert [m.id for m in query.search_sync()] == ["old"]

    async def drop_while_b_searches():
        # On turnkit's loop: b's search runs at the drop's first await, after the drop made b's handle stale.
        return await asyncio.gather(
            drop(a, collection, False), b._search(query.spec, None), return_exceptions=True
        )

    dropped, _ = run_sync(drop_while_b_searches())
    assert dropped is True
    b(collection).upsert_sync([{"id": "new", "vector": [1.0, 0.0]}])  # failed with lance's "Not found"
    assert [m.id for m in query.search_sync()] == ["new"]
    assert [m.id for m in a(collection).near_vector([1.0, 0.0]).select("id").search_sync()] == ["new"]


@pytest.mark.parametrize(
    ("record", "fragment"),
    [
        ({"id": "bad\ud800", "document": "x"}, "not valid Unicode"),
        ({"id": "a", "document": "half \udc00 pair"}, "not valid Unicode"),
        ({"id": "a", "document": "x", "metadata": {"k": "\ud83d"}}, "not valid Unicode"),
        ({"id": "a", "vector": []}, "non-empty"),
        ({"id": "a", "vector": [[1.0, 2.0], [3.0, 4.0]]}, "flat"),
        ({"id": "a", "vector": [0.0, 0.0, 0.0]}, "all-zero"),
    ],
)
def test_bad_records_leave_no_collection_behind(vs, collection, record, fragment):
    with pytest.raises(VectorStoreUsageError, match=fragment) as exc_info:
        vs(collection).upsert_sync([record])
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    assert collection not in vs.list_collections_sync()


def test_zero_vectors_are_fine_under_l2(tmp_path, collection):
    store = create_vector_store(uri=str(tmp_path), metric="l2", auto_optimize=None)
    store(collection).upsert_sync([{"id": "origin", "vector": [0.0, 0.0]}])
    assert store(collection).near_vector([0.0, 0.0]).select("id").search_sync()[0].id == "origin"


def test_options_without_a_near_clause_are_refused(vs, collection, docs):
    vs(collection).upsert_sync(docs)
    with pytest.raises(VectorStoreUsageError, match="min_score") as exc_info:
        vs(collection).select("id").min_score(0.1).search_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    with pytest.raises(VectorStoreUsageError, match="ef") as exc_info:
        vs(collection).select("id").ef(64).search_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"


def test_encoder_is_recorded_only_for_its_own_dimension(tmp_path, collection):
    store = create_vector_store(uri=str(tmp_path), encoder=HashEncoder(8), auto_optimize=None)
    store(collection).upsert_sync([{"id": "a", "vector": [1.0, 0.0, 0.0, 0.0]}])
    info = store.collection_info_sync(collection)
    assert (info.dimension, info.encoder) == (4, None)


def test_encoder_failures_name_the_collection(tmp_path, collection):
    def broken(texts, kind):
        raise RuntimeError("model crashed")

    store = create_vector_store(uri=str(tmp_path), encoder=FunctionEncoder(broken, name="b", dimension=4))
    with pytest.raises(TurnkitError) as info:
        store(collection).upsert_sync([{"id": "a", "vector": [1.0, 0, 0, 0]}, {"id": "b", "document": "x"}])
    assert info.value.code == "E_VECTOR_STORE_ENCODER_FAILED"
    assert info.value.context["collection"] == collection and info.value.context["index"] == 1


def test_relative_and_pathlike_uris_are_local_directories(tmp_path, monkeypatch, collection):
    monkeypatch.chdir(tmp_path)
    store = create_vector_store(uri="db", encoder=HashEncoder(8), auto_optimize=None)
    store(collection).upsert_sync([{"id": "a", "document": "x"}])
    assert (tmp_path / "db").is_dir() and store.uri == str(tmp_path / "db")
    again = create_vector_store(uri=tmp_path / "db", encoder=HashEncoder(8))
    assert again(collection).count_sync() == 1


def test_updates_replace_created_at_unless_it_is_given(vs, collection):
    vs(collection).upsert_sync([{"id": "a", "document": "v1"}])
    first = vs(collection).get_sync(["a"])[0]
    vs(collection).upsert_sync([{"id": "a", "document": "v2", "created_at": first.created_at}])
    second = vs(collection).get_sync(["a"])[0]
    assert second.created_at == first.created_at and second.updated_at > first.updated_at


@pytest.mark.parametrize(
    "build",
    [
        lambda q: q.near_text("cat").where("metadata.kind", "pet"),
        lambda q: q.where("metadata.kind", "pet").limit(1),
        lambda q: q.where("metadata.kind", "pet").offset(1),
    ],
)
def test_delete_refuses_what_would_not_narrow_it(vs, collection, docs, build):
    vs(collection).upsert_sync(docs)
    with pytest.raises(VectorStoreUsageError, match="would be ignored") as exc_info:
        build(vs(collection)).delete_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"
    assert vs(collection).count_sync() == len(docs)


def test_count_refuses_a_near_clause(vs, collection, docs):
    vs(collection).upsert_sync(docs)
    with pytest.raises(VectorStoreUsageError, match="near clause") as exc_info:
        vs(collection).near_text("cat").count_sync()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"


def test_replace_swaps_a_documents_records_in_one_commit(vs, collection):
    old = [{"id": f"a{i}", "document": f"old {i}", "metadata": {"src": "a"}} for i in range(3)]
    other = [{"id": "b0", "document": "other", "metadata": {"src": "b"}}]
    vs(collection).upsert_sync(old + other)
    version = vs(collection).info_sync().version
    new = [{"id": "a1", "document": "new 1", "metadata": {"src": "a"}}, {"id": "a9", "document": "new 9"}]
    result = vs(collection).where("metadata.src", "a").replace_sync(new)
    assert (result.inserted, result.updated, result.deleted) == (1, 1, 2)
    assert vs(collection).info_sync().version == version + 1
    got = {m.id: m.document for m in vs(collection).select("id", "document").limit(100).search_sync()}
    assert got == {"a1": "new 1", "a9": "new 9", "b0": "other"}


def test_replace_needs_a_narrowing_filter_and_checks_records_first(vs, collection, docs):
    vs(collection).upsert_sync(docs)
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs(collection).replace_sync([{"id": "x", "document": "y"}])
    assert exc_info.value.code == "E_VECTOR_STORE_UNSAFE_DELETE"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs(collection).where({}).replace_sync([{"id": "x", "document": "y"}])
    assert exc_info.value.code == "E_VECTOR_STORE_UNSAFE_DELETE"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        vs(collection).where("metadata.kind", "pet").replace_sync([{"id": "", "document": "y"}])
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
    assert vs(collection).count_sync() == len(docs)
    assert vs(collection).where("metadata.kind", "pet").replace_sync([]).deleted == 2
    assert vs(collection).count_sync() == len(docs) - 2


@pytest.mark.parametrize(
    ("metadata", "fragment"),
    [
        ({"u": uuid.UUID(int=1)}, "UUID, not JSON"),
        ({"deep": [{"x": float("nan")}]}, "metadata.deep[0].x is NaN"),
        ({"when": dt.date(2024, 1, 1)}, "date, not JSON"),
        ({"k": {"\ud800": 1}}, "not valid Unicode"),
    ],
)
def test_metadata_that_json_would_change_is_refused(vs, collection, metadata, fragment):
    with pytest.raises(VectorStoreUsageError, match=re.escape(fragment)) as exc_info:
        vs(collection).upsert_sync([{"id": "m", "document": "x", "metadata": metadata}])
    assert exc_info.value.code == "E_INVALID_VECTOR_RECORD"
