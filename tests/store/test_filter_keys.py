"""Filter keys on a real store: both spellings, "did you mean", and the key no record holds."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from turnkit.batteries.vector import (
    EncoderRequiredError,
    FilterKeyNotFoundError,
    FunctionEncoder,
    HashEncoder,
    UnknownFieldError,
    build_recorded_encoder,
    create_vector_store,
    parse_filter_expression,
)
from turnkit.batteries.vector.store._filter_keys import SAMPLE

RECORDS = [
    {
        "id": "p1",
        "document": "the cat sat on the mat",
        "metadata": {"kind": "pdf", "page_span": {"first": 1}},
    },
    {"id": "p2", "document": "dogs run in the park", "metadata": {"kind": "pdf", "year": 2021}},
    {"id": "m1", "document": "birds sing at dawn", "metadata": {"kind": "md", "year": 2019}},
]


@pytest.fixture
def store(vs, collection):
    vs(collection).upsert_sync(RECORDS)
    return vs


def ids(matches) -> list[str]:
    return sorted(m.id for m in matches)


def test_both_spellings_on_every_builder_form(store, collection) -> None:
    q = store(collection).near_text("animals").limit(10)
    want = ids(q.where("metadata.kind", "pdf").search_sync())
    assert want == ["p1", "p2"]
    assert ids(q.where("kind", "pdf").search_sync()) == want
    assert ids(q.where({"kind": "pdf"}).search_sync()) == want
    assert ids(q.where({"metadata.kind": {"$eq": "pdf"}}).search_sync()) == want
    assert ids(q.where_in("kind", ["pdf"]).search_sync()) == want
    assert ids(q.where(parse_filter_expression('metadata.kind = "pdf"')).search_sync()) == want
    assert ids(q.where("page_span.first", 1).search_sync()) == ["p1"]
    assert store(collection).where("kind", "md").count_sync() == 1
    assert ids(store(collection).where("year", ">", 2020).search_sync()) == ["p2"]  # a filter scan


def test_a_misspelt_key_says_did_you_mean(store, collection) -> None:
    with pytest.raises(FilterKeyNotFoundError) as info:
        store(collection).near_text("animals").where("knd", "pdf").search_sync()
    error = info.value
    assert error.code == "E_VECTOR_STORE_FILTER_KEY_NOT_FOUND" and isinstance(error, UnknownFieldError)
    assert "'knd'" in error.message and "Did you mean 'kind'?" in error.hint
    assert error.context["suggestions"] == ["kind"] and error.context["collection"] == collection
    # The prefix written twice (a key named `metadata`) is a near miss too.
    with pytest.raises(FilterKeyNotFoundError, match="metadata.kind") as twice:
        store(collection).near_text("animals").where({"metadata.metadata.kind": "pdf"}).search_sync()
    assert "Did you mean 'kind'?" in twice.value.hint
    # Async, hybrid and nested keys take the same path.
    with pytest.raises(FilterKeyNotFoundError, match="page_spam"):
        asyncio.run(store(collection).near_text("cat").hybrid().where("page_spam.first", 1).search())
    with pytest.raises(FilterKeyNotFoundError) as no_guess:
        store(collection).where("color", "red").search_sync()
    assert "Keys its records hold: kind, page_span, year." in no_guess.value.hint


def test_nothing_is_said_when_the_empty_answer_is_not_the_key(store, collection, vs) -> None:
    q = store(collection).near_text("animals")
    assert q.where("kind", "html").search_sync() == []  # the key is held; the value is not
    assert q.where("year", ">", 3000).search_sync() == []
    assert q.where("kind", "html").or_where("color", "red").search_sync() == []  # not needed by every match
    assert q.where_not("color", "red").limit(1).search_sync()  # a missing key matches a negation
    assert q.where("color", "exists", False).limit(1).search_sync()
    assert store(collection).where("color", "red").count_sync() == 0  # counts are never refused
    vs.create_collection_sync("empty", dimension=256)
    assert vs("empty").where("kind", "pdf").search_sync() == []  # an empty collection holds no key


def test_declared_fields_count_as_held(tmp_path) -> None:
    vs = create_vector_store(uri=str(tmp_path / "db"), encoder=HashEncoder(32), fields={"tenant": str})
    vs("docs").upsert_sync(RECORDS)
    assert vs("docs").where("tenant", "acme").search_sync() == []
    with pytest.raises(FilterKeyNotFoundError):
        vs("docs").where("tenantt", "acme").search_sync()


def test_a_write_that_adds_the_key_is_seen(store, collection) -> None:
    with pytest.raises(FilterKeyNotFoundError):
        store(collection).where("color", "red").search_sync()
    store(collection).upsert_sync([{"id": "c1", "document": "a red car", "metadata": {"color": "blue"}}])
    assert store(collection).where("color", "red").search_sync() == []


def test_beyond_the_sample_a_key_is_looked_up(tmp_path) -> None:
    vs = create_vector_store(uri=str(tmp_path / "db"), auto_optimize=None)
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(SAMPLE + 20, 4)).astype(np.float32)
    records = [
        {"id": f"r{i}", "vector": vectors[i], "metadata": {"kind": "md", "n": i}} for i in range(SAMPLE + 20)
    ]
    records[-1]["metadata"]["rare"] = "yes"  # held by one record the sample may not reach
    vs("big").upsert_sync(records)
    assert vs("big").where("rare", "no").search_sync() == []
    assert [m.id for m in vs("big").where("rare", "yes").search_sync()] == [f"r{SAMPLE + 19}"]
    with pytest.raises(FilterKeyNotFoundError, match="'rar'"):
        vs("big").where("rar", "yes").search_sync()


def test_a_search_without_select_returns_id_document_metadata_and_score(store, collection) -> None:
    (match,) = store(collection).near_text("cat on a mat").limit(1).search_sync()
    assert (match.id, match.document, match.metadata["kind"]) == ("p1", RECORDS[0]["document"], "pdf")
    assert match.score is not None and match.distance is not None and match.vector is None
    scanned = store(collection).where("kind", "md").search_sync()
    assert [(m.id, m.document, m.metadata, m.score) for m in scanned] == [
        ("m1", "birds sing at dawn", {"kind": "md", "year": 2019}, None)
    ]


def test_a_store_opened_without_an_encoder_uses_the_recorded_one(tmp_path) -> None:
    uri = str(tmp_path / "db")
    built = create_vector_store(uri=uri, encoder=HashEncoder(64))
    built("docs").upsert_sync(RECORDS)
    expected = [(m.id, m.score) for m in built("docs").near_text("a cat").search_sync()]
    opened = create_vector_store(uri=uri)  # one step: no encoder given
    assert opened.encoder is None
    assert [(m.id, m.score) for m in opened("docs").near_text("a cat").search_sync()] == expected
    opened("docs").upsert_sync([{"id": "n1", "document": "a new note"}])  # text is encoded too
    assert opened("docs").near_text("a new note").limit(1).search_sync()[0].id == "n1"
    # A new collection records nothing yet: the error it always gave.
    with pytest.raises(EncoderRequiredError):
        opened("fresh").upsert_sync([{"id": "x", "document": "text"}])
    with pytest.raises(EncoderRequiredError):
        opened("missing").near_text("cat").search_sync()


def test_a_recorded_encoder_the_registry_does_not_build_offline_is_named(tmp_path) -> None:
    uri = str(tmp_path / "db")

    def encode(texts, kind):
        return [[1.0, float(len(t)), 0.5] for t in texts]

    hints = {}
    for name in ("openai:text-embedding-3-small", "my-own-model"):
        store = create_vector_store(uri=uri, encoder=FunctionEncoder(encode, dimension=3, name=name))
        store(name.replace(":", "-")).upsert_sync(RECORDS)
        opened = create_vector_store(uri=uri)
        with pytest.raises(EncoderRequiredError) as info:
            opened(name.replace(":", "-")).near_text("cat").search_sync()
        assert info.value.code == "E_VECTOR_STORE_ENCODER_REQUIRED"
        assert name in info.value.message and info.value.context["recorded"] == name
        hints[name] = info.value.hint
    assert "encoder_from_spec('openai:text-embedding-3-small@3')" in hints["openai:text-embedding-3-small"]
    assert "'my-own-model'" in hints["my-own-model"]


def test_build_recorded_encoder_is_offline_unless_asked() -> None:
    hashed = build_recorded_encoder("turnkit-hash-16", 16)
    assert hashed is not None and (hashed.name, hashed.dimension) == (HashEncoder(16).name, 16)
    assert build_recorded_encoder("wordllama-l2_supercat-64", 64) is not None  # weights ship in the package
    assert build_recorded_encoder("openai:text-embedding-3-small", 1536) is None
    assert build_recorded_encoder("sentence-transformers:all-mpnet-base-v2", 768) is None
    assert build_recorded_encoder("my-own-model", 3) is None
    remote = build_recorded_encoder("openai:text-embedding-3-small", 1536, remote=True)
    assert remote is not None and remote.dimension == 1536  # built, not called


def test_a_recreated_collection_is_read_again(vs) -> None:
    vs("again").upsert_sync([{"id": "a", "document": "a red car", "metadata": {"color": "blue"}}])
    assert vs("again").where("color", "red").search_sync() == []  # held
    vs.drop_collection_sync("again")
    vs("again").upsert_sync([{"id": "a", "document": "a red car", "metadata": {"shade": "blue"}}])
    with pytest.raises(FilterKeyNotFoundError, match="'color'"):
        vs("again").where("color", "red").search_sync()
