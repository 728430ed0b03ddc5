"""Round-trip properties of the glue over a real LanceDB store (hypothesis)."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit import InMemoryMessageStore, Message, Retrievable, ScriptedModel, TurnRunner, TurnRunnerConfig
from turnkit._aio import run_sync
from turnkit.batteries.vector import HashEncoder, create_vector_retrievable_callbacks, create_vector_store
from turnkit.batteries.vector._glue_parts import GLUE_METADATA_KEYS

_names = itertools.count()
# One store for the module (a connection per example would dominate the run time);
# each example gets its own collection.
STORE = create_vector_store(uri="memory://", encoder=HashEncoder(256), auto_optimize=None)

# The store refuses ids with NUL or over 1,024 characters and integers beyond 64 bits
# (E_INVALID_VECTOR_RECORD, nothing written); every other valid Retrievable must survive.
ids = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() and "\x00" not in s)
contents = st.text(min_size=1, max_size=200).filter(str.strip)
zones = st.builds(lambda m: timezone(timedelta(minutes=m)), st.integers(-14 * 60, 14 * 60))
stamps = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=zones)
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
metadata = st.dictionaries(
    st.text(max_size=12).filter(lambda k: k not in GLUE_METADATA_KEYS), json_values, max_size=4
)
retrievables = st.builds(
    Retrievable,
    id=ids,
    content=contents,
    trust_tier=st.sampled_from(["first-party", "third-party"]),
    source=st.none() | st.text(max_size=30),
    kind=st.none() | st.text(max_size=12),
    created_at=stamps,
    updated_at=st.none() | stamps,
    metadata=metadata,
)


def runner_for(collection: str, tier: str) -> tuple[TurnRunner, InMemoryMessageStore]:
    history = InMemoryMessageStore()
    # Records may share a content: keep every copy, this is a round trip.
    cbs = create_vector_retrievable_callbacks(
        store=STORE, collection=collection, trust_tier=tier, top_k=10, settings={"collapse_duplicates": False}
    )
    config = TurnRunnerConfig(
        model=ScriptedModel([]),
        fetch_messages=history.fetch_messages,
        store_message=history.store_message,
        **cbs,
    )
    return TurnRunner(config), history


def same_fields(a: Retrievable, b: Retrievable) -> bool:
    fields = ("id", "content", "source", "kind", "metadata", "created_at", "updated_at", "trust_tier")
    return all(getattr(a, f) == getattr(b, f) for f in fields)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(record=retrievables, others=st.lists(retrievables, max_size=3))
def test_a_stored_retrievable_is_fetched_back_by_its_own_content(record, others) -> None:
    collection = f"prop{next(_names)}"
    runner, history = runner_for(collection, record.trust_tier)

    async def scenario() -> list[Retrievable]:
        ctx = runner.new_context()
        for other in others:
            if other.id != record.id:
                await ctx.store_retrievable(other)
        await ctx.store_retrievable(record)
        await history.store_message(ctx, Message(role="user", content=record.content))
        return await ctx.fetch_retrievables()

    got = {r.id: r for r in run_sync(scenario())}
    assert record.id in got
    back = got[record.id]
    assert same_fields(back, record), (back, record)
    # Its own content is the query, so nothing scores higher.
    assert back.score is not None
    assert back.score >= max(r.score or 0.0 for r in got.values()) - 1e-6


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(retrievables, min_size=1, max_size=5, unique_by=lambda r: r.id), data=st.data())
def test_delete_removes_exactly_that_record(records, data) -> None:
    collection = f"prop{next(_names)}"
    runner, _ = runner_for(collection, "first-party")
    victim = data.draw(st.sampled_from(records))

    async def scenario() -> list[str]:
        ctx = runner.new_context()
        for r in records:
            await ctx.store_retrievable(r)
        await ctx.delete_retrievable(victim.id)
        return [m.id for m in await STORE(collection).select("id").get([r.id for r in records])]

    assert run_sync(scenario()) == [r.id for r in records if r.id != victim.id]
