"""create_vector_retrievable_callbacks over a real LanceDB store: options, fetch, store, mutate, delete."""

from __future__ import annotations

import dataclasses
import logging
from datetime import UTC, datetime

import numpy as np
import pytest

from turnkit import (
    RawRetrievable,
    Retrievable,
    ScriptedModel,
    TrustTierRequiredError,
    TurnRunnerConfig,
    UnknownTrustTierError,
    UsageError,
)
from turnkit.batteries.vector import (
    EncoderRequiredError,
    HashEncoder,
    InvalidFilterError,
    RetrievableSkippedWarning,
    UnknownFieldError,
    VectorMatch,
    VectorRetrievableCallbacks,
    VectorRetrievableGlue,
    VectorStoreUsageError,
    and_,
    condition,
    create_vector_retrievable_callbacks,
    create_vector_store,
)
from turnkit.batteries.vector import Raw as RawFilter
from turnkit.batteries.vector._glue_parts import GLUE_METADATA_KEYS

pytestmark = pytest.mark.anyio

T0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)

CORPUS = [
    Retrievable(
        id="refunds",
        content="Refunds are paid back to the card within five days.",
        trust_tier="first-party",
        source="faq/refunds.md",
        kind="faq",
        created_at=T0,
        metadata={"year": 2024},
    ),
    Retrievable(
        id="refunds-old",
        content="Refunds were paid back by cheque within thirty days.",
        trust_tier="first-party",
        source="archive/refunds-2019.md",
        kind="archive",
        created_at=T0,
        metadata={"year": 2019},
    ),
    Retrievable(
        id="shipping",
        content="Orders ship from Lyon and arrive within four days.",
        trust_tier="first-party",
        source="faq/shipping.md",
        kind="faq",
        created_at=T0,
        metadata={"year": 2023},
    ),
]


def make(vs, collection, **options) -> VectorRetrievableCallbacks:
    options.setdefault("trust_tier", "first-party")
    return create_vector_retrievable_callbacks(store=vs, collection=collection, **options)


async def seed(harness, callbacks, records=CORPUS):
    h = harness(callbacks)
    ctx = await h.context()
    for r in records:
        await ctx.store_retrievable(r)
    return h


# -- creation -----------------------------------------------------------------------------------


def test_trust_tier_is_required_at_creation(vs, collection) -> None:
    with pytest.raises(TrustTierRequiredError) as info:
        create_vector_retrievable_callbacks(store=vs, collection=collection)
    assert info.value.code == "E_TRUST_TIER_REQUIRED"
    assert "first-party" in info.value.hint and "never guesses" in info.value.hint
    assert collection in info.value.message


@pytest.mark.parametrize("tier", ["First-Party", "first_party", "", "trusted"])
def test_an_unknown_flat_tier_fails_at_creation(vs, collection, tier) -> None:
    with pytest.raises(UnknownTrustTierError) as info:
        make(vs, collection, trust_tier=tier)
    assert info.value.code == "E_UNKNOWN_TRUST_TIER"


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"store": object()}, "store"),
        ({"top_k": 0}, "top_k"),
        ({"top_k": True}, "top_k"),
        ({"top_k": "5"}, "top_k"),
        ({"top_k": 10_001}, "top_k"),
        ({"filter": 42}, "filter"),
        ({"derive_query": "last message"}, "derive_query"),
        ({"to_retrievable": {}}, "to_retrievable"),
    ],
)
def test_unusable_options_fail_at_creation(vs, collection, options, field) -> None:
    options = {"store": vs, "collection": collection, "trust_tier": "first-party", **options}
    with pytest.raises(VectorStoreUsageError) as info:
        create_vector_retrievable_callbacks(**options)
    assert info.value.code == "E_INVALID_RETRIEVABLE_GLUE_CONFIG"
    assert info.value.field == field
    assert info.value.hint and info.value.hint != "Change the call; the message says what was wrong."


def test_filter_and_collection_are_checked_at_creation(vs, collection) -> None:
    make(vs, collection, filter={"kind": "faq"})  # a metadata key, with or without "metadata."
    with pytest.raises(UnknownFieldError) as unknown:
        make(vs, collection, filter={"Metadata.kind": "faq"})
    assert "metadata.kind" in unknown.value.hint
    with pytest.raises(InvalidFilterError) as exc_info:
        make(vs, collection, filter=("id = ? OR id = ?", ["a"]))
    assert exc_info.value.code == "E_VECTOR_STORE_RAW_BINDING_MISMATCH"
    with pytest.raises(VectorStoreUsageError) as exc_info:
        make(vs, "not a name!")
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_COLLECTION_NAME"


def test_callbacks_are_frozen_and_unpack_into_a_runner_config(vs, collection) -> None:
    cbs = make(vs, collection)
    assert list(cbs) == [
        "fetch_retrievables",
        "store_retrievable",
        "mutate_retrievable",
        "delete_retrievable",
    ]
    assert dict(cbs) == {name: getattr(cbs, name) for name in cbs.NAMES}
    assert cbs["fetch_retrievables"] == cbs.fetch_retrievables
    with pytest.raises(KeyError):
        cbs["glue"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cbs.fetch_retrievables = None  # type: ignore[misc]
    for config in (
        TurnRunnerConfig(model=ScriptedModel(["x"]), **cbs),
        TurnRunnerConfig(model=ScriptedModel(["x"]), **cbs),
    ):
        assert config.fetch_retrievables == cbs.fetch_retrievables
        assert config.store_retrievable == cbs.store_retrievable
        assert config.mutate_retrievable == cbs.mutate_retrievable
        assert config.delete_retrievable == cbs.delete_retrievable
    assert isinstance(cbs.glue, VectorRetrievableGlue)
    assert "first-party" in repr(cbs.glue)


# -- fetch --------------------------------------------------------------------------------------


async def test_fetch_searches_with_the_last_user_message(vs, collection, harness) -> None:
    h = await seed(harness, make(vs, collection, top_k=2))
    ctx = await h.context(
        ("user", "Where do orders ship from?"),
        ("assistant", "From Lyon."),
        ("user", "How are refunds paid back to the card?"),
    )
    got = await ctx.fetch_retrievables()
    assert [r.id for r in got][0] == "refunds"
    assert len(got) == 2
    top = got[0]
    want = CORPUS[0]
    assert (top.content, top.source, top.kind, top.metadata) == (
        want.content,
        want.source,
        want.kind,
        want.metadata,
    )
    assert (top.created_at, top.updated_at, top.trust_tier) == (T0, T0, "first-party")
    assert top.score is not None and 0.5 < top.score <= 1.0
    assert got[0].score >= got[1].score  # type: ignore[operator]


async def test_no_user_message_means_nothing_is_searched(tmp_path, collection, harness) -> None:
    # A store without an encoder raises on any text search, so [] proves no search ran.
    bare = create_vector_store(uri=str(tmp_path / "bare"), auto_optimize=None)
    h = harness(make(bare, collection))
    assert await (await h.context()).fetch_retrievables() == []
    assert await (await h.context(("assistant", "Hello, how can I help?"))).fetch_retrievables() == []
    with pytest.raises(EncoderRequiredError) as info:
        await (await h.context(("user", "refunds?"))).fetch_retrievables()
    assert info.value.code == "E_VECTOR_STORE_ENCODER_REQUIRED"


async def test_a_missing_collection_fetches_nothing(vs, collection, harness) -> None:
    h = harness(make(vs, collection))
    assert await (await h.context(("user", "refunds?"))).fetch_retrievables() == []
    assert not await vs.has_collection(collection)


async def test_top_k_limits_the_matches(vs, collection, harness) -> None:
    h = await seed(harness, make(vs, collection, top_k=1))
    assert [r.id for r in await (await h.context(("user", "refunds card"))).fetch_retrievables()] == [
        "refunds"
    ]


def _sync_query(ctx):
    # Sync hooks run in a worker thread, so they may use the context's sync forms.
    last = ctx.last_user_message_sync()
    return f"{last.content} shipping Lyon"


async def _async_query(ctx):
    return "orders ship from Lyon"


@pytest.mark.parametrize("derive", [_sync_query, _async_query, lambda ctx: "orders ship from Lyon"])
async def test_derive_query_may_return_text_sync_or_async(vs, collection, harness, derive) -> None:
    h = await seed(harness, make(vs, collection, derive_query=derive))
    got = await (await h.context(("user", "hi"))).fetch_retrievables()
    assert got[0].id == "shipping"


@pytest.mark.parametrize("as_array", [False, True])
async def test_derive_query_may_return_a_vector(tmp_path, collection, harness, as_array) -> None:
    # No encoder at all: the query vector and the records' vectors are precomputed.
    bare = create_vector_store(uri=str(tmp_path / "bare"), auto_optimize=None)
    await bare(collection).upsert(
        [
            {"id": "x", "document": "east", "vector": [1.0, 0.0, 0.0]},
            {"id": "y", "document": "north", "vector": [0.0, 1.0, 0.0]},
        ]
    )
    query = np.array([0.1, 0.9, 0.0]) if as_array else [0.1, 0.9, 0.0]
    h = harness(make(bare, collection, derive_query=lambda ctx: query))
    got = await (await h.context()).fetch_retrievables()
    assert [r.id for r in got] == ["y", "x"]
    assert got[0].content == "north"


@pytest.mark.parametrize("nothing", [None, "", "   "])
async def test_derive_query_none_or_blank_skips_retrieval(tmp_path, collection, harness, nothing) -> None:
    bare = create_vector_store(uri=str(tmp_path / "bare"), auto_optimize=None)
    h = harness(make(bare, collection, derive_query=lambda ctx: nothing))
    assert await (await h.context(("user", "refunds?"))).fetch_retrievables() == []


async def test_derive_query_returning_something_else_is_an_error(vs, collection, harness) -> None:
    h = harness(make(vs, collection, derive_query=lambda ctx: 42))
    with pytest.raises(VectorStoreUsageError, match="derive_query returned int") as exc_info:
        await (await h.context(("user", "refunds?"))).fetch_retrievables()
    assert exc_info.value.code == "E_VECTOR_STORE_INVALID_QUERY"


@pytest.mark.parametrize(
    "filter_",
    [
        pytest.param(condition("metadata.kind", "eq", "archive"), id="node"),
        pytest.param(and_(condition("metadata.year", "<", 2020), condition("id", "ne", "x")), id="tree"),
        pytest.param({"metadata.kind": "archive"}, id="mongo"),
        pytest.param({"metadata.year": {"$lt": 2020}}, id="mongo-op"),
        pytest.param(("json_get_string(metadata, 'kind') = ?", ["archive"]), id="raw-pair"),
        pytest.param(RawFilter("document LIKE ?", ("%cheque%",)), id="raw-node"),
        pytest.param("json_get_int(metadata, 'year') < 2020", id="raw-sql"),
        pytest.param(lambda g: g.where("metadata.kind", "archive").or_where("id", "nope"), id="group"),
    ],
)
async def test_filter_restricts_every_search(vs, collection, harness, filter_) -> None:
    unfiltered = await seed(harness, make(vs, collection))
    question = ("user", "Refunds are paid back to the card within five days.")
    assert (await (await unfiltered.context(question)).fetch_retrievables())[0].id == "refunds"
    h = harness(make(vs, collection, filter=filter_))
    got = await (await h.context(question)).fetch_retrievables()
    assert [r.id for r in got] == ["refunds-old"]


async def test_a_tier_function_decides_per_match(vs, collection, harness) -> None:
    records = [
        {"id": "ours", "document": "refund policy", "metadata": {"origin": "handbook"}},
        {"id": "theirs", "document": "refund policy forum", "metadata": {"origin": "forum"}},
    ]
    await vs(collection).upsert(records)

    async def tier(match: VectorMatch) -> str:
        return "first-party" if (match.metadata or {}).get("origin") == "handbook" else "third-party"

    h = harness(make(vs, collection, trust_tier=tier))
    got = await (await h.context(("user", "refund policy"))).fetch_retrievables()
    assert {r.id: r.trust_tier for r in got} == {"ours": "first-party", "theirs": "third-party"}
    assert got[0].metadata == {"origin": "handbook"}


@pytest.mark.parametrize(
    ("value", "error"), [("partner", UnknownTrustTierError), (None, TrustTierRequiredError)]
)
async def test_a_tier_function_result_is_validated(vs, collection, harness, value, error) -> None:
    await vs(collection).upsert([{"id": "doc-7", "document": "refund policy"}])
    h = harness(make(vs, collection, trust_tier=lambda m: value))
    with pytest.raises(error) as info:
        await (await h.context(("user", "refund policy"))).fetch_retrievables()
    assert "'doc-7'" in info.value.message and info.value.record_id == "doc-7"


async def test_a_record_is_never_fetched_more_trusted_than_it_was_stored(vs, collection, harness) -> None:
    web = Retrievable(id="web-1", content="refund scam page", trust_tier="third-party", created_at=T0)
    vetted = web.replace(id="doc-1", content="refund policy page", trust_tier="first-party")
    writer = await seed(harness, make(vs, collection, trust_tier="third-party"), [web, vetted])
    assert writer  # records written through the glue carry their tier in metadata
    first = harness(make(vs, collection, trust_tier="first-party"))
    got = {
        r.id: r.trust_tier for r in await (await first.context(("user", "refund page"))).fetch_retrievables()
    }
    assert got == {"web-1": "third-party", "doc-1": "first-party"}
    third = harness(make(vs, collection, trust_tier="third-party"))
    got = {
        r.id: r.trust_tier for r in await (await third.context(("user", "refund page"))).fetch_retrievables()
    }
    assert got == {"web-1": "third-party", "doc-1": "third-party"}


async def test_matches_that_cannot_become_retrievables_are_skipped_and_reported(
    vs, collection, harness, caplog
) -> None:
    await vs(collection).upsert(
        [
            {"id": "good", "document": "refund policy"},
            {
                "id": "blank",
                "document": "   ",
                "vector": HashEncoder(256).encode(["refund"], kind="query")[0],
            },
            {"id": "bad-time", "document": "refund policy v2", "metadata": {"created_at": "last tuesday"}},
            {"id": "bad-tier", "document": "refund policy v3", "metadata": {"trust_tier": "partner"}},
        ]
    )
    h = harness(make(vs, collection, top_k=10))
    ctx = await h.context(("user", "refund policy"))
    with caplog.at_level(logging.WARNING, logger="turnkit.vector.retrievables"):
        with pytest.warns(RetrievableSkippedWarning) as caught:
            got = await ctx.fetch_retrievables()
    assert [r.id for r in got] == ["good"]
    skipped = {w.message.record_id: w.message for w in caught}  # type: ignore[union-attr]
    assert set(skipped) == {"blank", "bad-time", "bad-tier"}
    assert all(w.collection == collection for w in skipped.values())
    assert "content" in skipped["blank"].reason and "created_at" in skipped["bad-time"].reason
    assert "'partner'" in skipped["bad-tier"].reason
    logged = {
        getattr(rec, "record_id", None) for rec in caplog.records if rec.name == "turnkit.vector.retrievables"
    }
    assert logged == {"blank", "bad-time", "bad-tier"}


async def test_to_retrievable_function_replaces_the_mapping(vs, collection, harness) -> None:
    await vs(collection).upsert(
        [
            {"id": "p1", "document": "refund policy", "metadata": {"title": "Refunds", "lang": "en"}},
            {"id": "p2", "document": "politique de remboursement refund", "metadata": {"lang": "fr"}},
        ]
    )

    def english_only(match: VectorMatch):
        meta = match.metadata or {}
        if meta.get("lang") != "en":
            return None  # dropped on purpose: no warning
        return {"id": match.id, "content": match.document, "source": meta["title"], "created_at": T0}

    h = harness(make(vs, collection, to_retrievable=english_only))
    got = await (await h.context(("user", "refund policy"))).fetch_retrievables()
    assert [(r.id, r.source, r.created_at, r.score) for r in got] == [("p1", "Refunds", T0, None)]


async def test_hooks_can_be_overridden_in_a_subclass(vs, collection, harness) -> None:
    class ShippingGlue(VectorRetrievableGlue):
        def derive_query(self, ctx):  # a sync override runs in a worker thread
            return ctx.last_user_message_sync().content + " ship Lyon orders"

        async def to_retrievable(self, match):
            raw = super().to_retrievable(match)
            assert isinstance(raw, RawRetrievable)
            return raw.replace(kind="override")

    glue = ShippingGlue(store=vs, collection=collection, trust_tier="third-party", top_k=1)
    h = await seed(harness, glue.callbacks())
    got = await (await h.context(("user", "where from?"))).fetch_retrievables()
    assert [(r.id, r.kind, r.trust_tier) for r in got] == [("shipping", "override", "third-party")]


# -- store / mutate / delete --------------------------------------------------------------------


async def test_store_upserts_text_and_metadata_and_the_store_encodes_it(vs, collection, harness) -> None:
    h = harness(make(vs, collection))
    await (await h.context()).store_retrievable(CORPUS[0])
    [row] = await vs(collection).select("*").get(["refunds"])
    assert row.document == CORPUS[0].content
    assert row.metadata == {
        "year": 2024,
        "trust_tier": "first-party",
        "source": "faq/refunds.md",
        "kind": "faq",
        "created_at": "2024-05-01T09:00:00+00:00",
        "updated_at": "2024-05-01T09:00:00+00:00",
    }
    assert (row.created_at, row.updated_at) == (T0, T0)
    expected = HashEncoder(256).encode([CORPUS[0].content], kind="document")[0]
    assert row.vector is not None and np.allclose(row.vector, expected)


async def test_mutate_replaces_the_record(vs, collection, harness) -> None:
    h = await seed(harness, make(vs, collection))
    ctx = await h.context()
    changed = CORPUS[0].replace(
        content="Refunds now take ten days.", updated_at=datetime(2025, 1, 1, tzinfo=UTC)
    )
    await ctx.mutate_retrievable(changed)
    assert await vs(collection).where_in("id", ["refunds"]).count() == 1
    ctx = await h.context(("user", "Refunds now take ten days."))
    top = (await ctx.fetch_retrievables())[0]
    assert (top.id, top.content, top.updated_at) == ("refunds", changed.content, changed.updated_at)


async def test_delete_removes_only_that_record(vs, collection, harness) -> None:
    h = await seed(harness, make(vs, collection))
    ctx = await h.context()
    await ctx.delete_retrievable("refunds")
    remaining = await vs(collection).select("id").get([r.id for r in CORPUS])
    assert [m.id for m in remaining] == ["refunds-old", "shipping"]
    await ctx.delete_retrievable("refunds")  # already gone: nothing happens
    assert await vs(collection).count() == 2
    with pytest.raises(UsageError) as exc_info:
        await h.runner.config.delete_retrievable(ctx, "")  # type: ignore[misc]
    assert exc_info.value.code == "E_INVALID_RETRIEVABLE"


async def test_delete_in_a_missing_collection_is_a_no_op(vs, collection, harness) -> None:
    h = harness(make(vs, collection))
    await (await h.context()).delete_retrievable("anything")
    assert not await vs.has_collection(collection)


async def test_without_an_encoder_store_and_mutate_raise_the_stores_error(
    tmp_path, collection, harness
) -> None:
    bare = create_vector_store(uri=str(tmp_path / "bare"), auto_optimize=None)
    cbs = make(bare, collection)
    ctx = await harness(cbs).context()
    for call in (cbs.store_retrievable, cbs.mutate_retrievable):
        with pytest.raises(EncoderRequiredError) as info:
            await call(ctx, CORPUS[0])
        assert type(info.value) is EncoderRequiredError
        assert info.value.code == "E_VECTOR_STORE_ENCODER_REQUIRED"
        assert "encoder=" in info.value.hint
    assert not await bare.has_collection(collection)


@pytest.mark.parametrize("key", GLUE_METADATA_KEYS)
async def test_glue_metadata_keys_are_refused_in_a_records_metadata(vs, collection, harness, key) -> None:
    cbs = make(vs, collection)
    ctx = await harness(cbs).context()
    # Even the value the glue would write itself: fetch reads these keys into
    # the record's own fields, so the metadata would not come back as stored.
    agreeing = {
        "trust_tier": "first-party",
        "source": "faq/refunds.md",
        "kind": "faq",
        "created_at": "2024-05-01T09:00:00+00:00",
        "updated_at": "2024-05-01T09:00:00+00:00",
    }
    for value in ("something else", agreeing[key]):
        with pytest.raises(VectorStoreUsageError) as info:
            await cbs.store_retrievable(ctx, CORPUS[0].replace(metadata={key: value}))
        assert info.value.key == key and info.value.record_id == "refunds"
        assert info.value.code == "E_VECTOR_GLUE_RESERVED_METADATA_KEY"
    assert not await vs.has_collection(collection)  # nothing was written
    await cbs.store_retrievable(ctx, CORPUS[0].replace(metadata={"note": "fine"}))
    assert await vs(collection).count() == 1


async def test_storing_a_raw_retrievable_is_refused(vs, collection, harness) -> None:
    cbs = make(vs, collection)
    ctx = await harness(cbs).context()
    with pytest.raises(TrustTierRequiredError):
        await cbs.store_retrievable(ctx, CORPUS[0].to_raw())  # type: ignore[arg-type]
    assert not await vs.has_collection(collection)


def test_the_factory_takes_exactly_the_glue_options() -> None:
    import inspect

    from turnkit.batteries.vector import VectorRetrievableGlue, create_vector_retrievable_callbacks
    from turnkit.batteries.vector._callbacks import _GlueOptions

    assert list(inspect.signature(create_vector_retrievable_callbacks).parameters) == ["options"]
    glue = inspect.signature(VectorRetrievableGlue).parameters
    assert list(_GlueOptions.__annotations__) == list(glue)
    required = {n for n, p in glue.items() if p.default is inspect.Parameter.empty}
    # The module postpones annotations, so NotRequired is read from their text.
    options = _GlueOptions.__annotations__
    marked = {n for n, ref in options.items() if not ref.__forward_arg__.startswith("NotRequired[")}
    assert required == marked == {"store", "collection"}
