"""Property: whatever valid record goes in comes back unchanged, and delete removes exactly it."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit.batteries.vector import HashEncoder, create_vector_store

_names = itertools.count()
STORE = create_vector_store(uri="memory://", encoder=HashEncoder(16), auto_optimize=None)

# Whitespace-only ids are refused by design (see test_invalid_records_write_nothing).
ids = st.text(min_size=1, max_size=20).filter(lambda s: "\x00" not in s and s.strip() != "")
texts = st.text(max_size=80).filter(lambda s: "\x00" not in s)
keys = st.text(min_size=1, max_size=8).filter(lambda s: "\x00" not in s)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)
metadata = st.dictionaries(keys, json_values, max_size=5)
instants = st.datetimes(
    min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=d.microsecond))
records = st.fixed_dictionaries(
    {"id": ids, "document": texts, "metadata": metadata, "created_at": instants, "updated_at": instants}
)
batches = st.lists(records, min_size=1, max_size=6, unique_by=lambda r: r["id"])


def _same_json(a: object, b: object) -> bool:
    # -0.0 == 0.0 in Python; JSON keeps the sign, so compare the representation too.
    if isinstance(a, float) and isinstance(b, float):
        return a == b and np.signbit(a) == np.signbit(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch=batches, data=st.data())
def test_upsert_get_round_trip_and_exact_delete(batch: list[dict], data: st.DataObject) -> None:
    name = f"rt{next(_names)}"
    STORE(name).upsert_sync(batch)
    got = STORE(name).select("*").get_sync([r["id"] for r in batch])
    assert [m.id for m in got] == [r["id"] for r in batch]
    for record, match in zip(batch, got, strict=True):
        assert match.document == record["document"]
        assert _same_json(match.metadata, record["metadata"]), (match.metadata, record["metadata"])
        assert match.created_at == record["created_at"]
        assert match.updated_at == record["updated_at"]
        assert match.vector is not None and len(match.vector) == 16

    victim = data.draw(st.sampled_from(batch))["id"]
    assert STORE(name).where("id", victim).delete_sync() == 1
    left = {m.id for m in STORE(name).select("id").limit(100).search_sync()}
    assert left == {r["id"] for r in batch} - {victim}
    STORE.drop_collection_sync(name)


def test_timestamps_default_to_now_and_created_at_survives_an_update() -> None:
    name = f"rt{next(_names)}"
    before = datetime.now(UTC) - timedelta(seconds=1)
    STORE(name).upsert_sync([{"id": "a", "document": "one"}])
    first = STORE(name).get_sync(["a"])[0]
    assert first.created_at is not None and first.created_at >= before
    assert first.updated_at is not None and first.updated_at >= first.created_at
