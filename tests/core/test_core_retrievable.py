from __future__ import annotations

import json
import pickle
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turnkit import (
    TRUST_TIERS,
    RawRetrievable,
    Retrievable,
    TrustTierRequiredError,
    UnknownTrustTierError,
    UsageError,
    trust_rank,
    validate_trust_tier,
)
from turnkit._retrievable import RetrievableSet


def rec(id: str = "a", tier: str = "first-party", **kw: object) -> Retrievable:
    return Retrievable(id=id, content=kw.pop("content", f"content of {id}"), trust_tier=tier, **kw)  # type: ignore[arg-type]


# -- trust tiers -------------------------------------------------------------------


def test_tiers_are_closed_ordered_and_spelled_exactly() -> None:
    assert TRUST_TIERS == ("first-party", "third-party")
    assert [trust_rank(t) for t in TRUST_TIERS] == [0, 1]


@pytest.mark.parametrize("bad", ["First-Party", "first_party", " first-party", "third-party-public", "", 1])
def test_unknown_tier_is_an_error(bad: object) -> None:
    with pytest.raises(UnknownTrustTierError) as info:
        validate_trust_tier(bad)
    assert info.value.code == "E_UNKNOWN_TRUST_TIER"
    with pytest.raises(UnknownTrustTierError):
        Retrievable(id="a", content="x", trust_tier=bad)  # type: ignore[arg-type]


def test_tier_is_never_defaulted() -> None:
    with pytest.raises(TrustTierRequiredError) as info:
        Retrievable(id="a", content="x")  # type: ignore[call-arg]
    assert info.value.code == "E_TRUST_TIER_REQUIRED"
    with pytest.raises(TrustTierRequiredError):
        Retrievable(id="a", content="x", trust_tier=None)  # type: ignore[arg-type]
    with pytest.raises(TrustTierRequiredError):
        Retrievable.model_validate_json('{"id": "a", "content": "x"}')
    with pytest.raises(TrustTierRequiredError):
        validate_trust_tier(None)


def test_tier_is_never_inferred_from_metadata_or_source() -> None:
    # Data that "claims" a tier does not get one.
    with pytest.raises(TrustTierRequiredError):
        Retrievable(id="a", content="x", source="internal://handbook", metadata={"trust_tier": "first-party"})  # type: ignore[call-arg]


def test_from_raw_applies_the_given_tier_and_ignores_any_other() -> None:
    raw = RawRetrievable(id="a", content="x", source="s")
    assert Retrievable.from_raw(raw, trust_tier="third-party").trust_tier == "third-party"
    claimed = {"id": "a", "content": "x", "trust_tier": "first-party"}
    assert Retrievable.from_raw(claimed, trust_tier="third-party").trust_tier == "third-party"
    with pytest.raises(TrustTierRequiredError):
        Retrievable.from_raw(raw, trust_tier=None)  # type: ignore[arg-type]
    with pytest.raises(UnknownTrustTierError):
        Retrievable.from_raw(raw, trust_tier="vetted")
    with pytest.raises(UsageError) as exc_info:
        Retrievable.from_raw(42, trust_tier="first-party")  # type: ignore[arg-type]
    assert exc_info.value.code == "E_INVALID_RETRIEVABLE"
    r = Retrievable.from_raw(raw, trust_tier="first-party")
    assert r.to_raw() == raw


def test_raw_retrievable_refuses_a_tier() -> None:
    with pytest.raises(UsageError) as info:
        RawRetrievable(id="a", content="x", trust_tier="first-party")  # type: ignore[call-arg]
    assert info.value.code == "E_INVALID_RETRIEVABLE"
    assert info.value.field == "trust_tier"
    assert "from_raw" in info.value.hint


# -- field validation ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("id", ""),
        ("id", "   "),
        ("id", 7),
        ("content", ""),
        ("content", " \n\t"),
        ("content", b"bytes"),
        ("content", None),
        ("score", 1.5),
        ("score", -0.1),
        ("score", float("nan")),
        ("score", float("inf")),
        ("score", True),
        ("score", "high"),
        ("created_at", "2024-01-01T00:00:00"),
        ("created_at", datetime(2024, 1, 1)),
        ("created_at", "yesterday"),
        ("created_at", True),
        ("updated_at", datetime(2024, 1, 1)),
        ("metadata", {"x": float("nan")}),
        ("metadata", {"x": {1, 2}}),
        ("metadata", {"x": object()}),
        ("metadata", [1, 2]),
        ("source", 3),
        ("kind", ["doc"]),
    ],
)
def test_invalid_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(UsageError) as info:
        Retrievable(**{"id": "a", "content": "x", "trust_tier": "first-party", field: value})  # type: ignore[arg-type]
    err = info.value
    assert err.code == "E_INVALID_RETRIEVABLE"
    assert err.field.split(".")[0] == field
    assert repr(err.field) in err.message
    assert isinstance(err.__cause__, Exception)


def test_unknown_field_is_rejected_by_name() -> None:
    with pytest.raises(UsageError) as info:
        Retrievable(id="a", content="x", trust_tier="first-party", sorce="typo")  # type: ignore[call-arg]
    assert info.value.code == "E_INVALID_RETRIEVABLE"
    assert info.value.field == "sorce"
    assert "not a field" in info.value.message


def test_timestamps_accept_iso_epoch_and_aware_datetimes_and_are_utc() -> None:
    paris = timezone(timedelta(hours=2))
    a = rec(created_at="2024-05-01T11:00:00+02:00")
    b = rec(created_at=datetime(2024, 5, 1, 11, 0, tzinfo=paris))
    c = rec(created_at=1714554000)
    assert a.created_at == b.created_at == c.created_at == datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
    assert a.created_at.utcoffset() == timedelta(0)
    # updated_at defaults to created_at, and is validated the same way.
    assert a.updated_at == a.created_at
    d = rec(created_at=0, updated_at="2024-01-01T00:00:00Z")
    assert d.updated_at is not None and d.updated_at.year == 2024


def test_defaults_are_aware_now() -> None:
    before = datetime.now(UTC)
    r = rec()
    assert before <= r.created_at <= datetime.now(UTC)
    assert r.metadata == {} and r.score is None and r.source is None


def test_frozen_and_replace_validates() -> None:
    r = rec(score=0.5)
    with pytest.raises(Exception, match="frozen"):
        r.content = "changed"  # type: ignore[misc]
    assert r.replace(score=0.9).score == 0.9
    assert r.score == 0.5
    with pytest.raises(UsageError) as exc_info:
        r.replace(score=3)
    assert exc_info.value.code == "E_INVALID_RETRIEVABLE"
    with pytest.raises(UnknownTrustTierError):
        r.replace(trust_tier="root")


def test_hash_eq_and_pickle() -> None:
    r = rec(metadata={"a": [1, {"b": None}]})
    same = rec(metadata={"a": [1, {"b": None}]}, created_at=r.created_at)
    assert r == same and hash(r) == hash(same)
    assert r != rec(tier="third-party", created_at=r.created_at)
    assert pickle.loads(pickle.dumps(r)) == r
    err = pickle.loads(pickle.dumps(UsageError("m", code="E_INVALID_RETRIEVABLE", field="score")))
    assert err.field == "score" and err.code == "E_INVALID_RETRIEVABLE"


# -- round trips (property) -------------------------------------------------------------

json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
non_blank = st.text(min_size=1, max_size=40).filter(lambda s: s.strip() != "")
aware = st.datetimes(
    min_value=datetime(1971, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=5, minutes=30))]),
)

retrievables = st.builds(
    Retrievable,
    id=non_blank,
    content=non_blank,
    trust_tier=st.sampled_from(TRUST_TIERS),
    source=st.none() | st.text(max_size=20),
    kind=st.none() | st.text(max_size=10),
    score=st.none() | st.floats(0, 1),
    created_at=aware,
    updated_at=st.none() | aware,
    metadata=st.dictionaries(st.text(max_size=6), json_values, max_size=4),
)


@given(retrievables)
def test_model_dump_round_trips(r: Retrievable) -> None:
    assert Retrievable.model_validate(r.model_dump()) == r
    assert Retrievable.model_validate_json(r.model_dump_json()) == r
    as_json = json.loads(json.dumps(r.model_dump(mode="json")))
    assert Retrievable.model_validate(as_json) == r
    raw = r.to_raw()
    assert RawRetrievable.model_validate(raw.model_dump()) == raw
    assert Retrievable.from_raw(raw, trust_tier=r.trust_tier) == r


# -- RetrievableSet ------------------------------------------------------------------------


def test_set_orders_and_deduplicates_by_id_replacing_in_place() -> None:
    s = RetrievableSet([rec("a"), rec("b"), rec("c")])
    s.add(rec("b", content="new b"))
    assert s.ids == ["a", "b", "c"]
    assert s.get("b") is not None and s.get("b").content == "new b"  # type: ignore[union-attr]
    assert len(s) == 3 and s[1].content == "new b"
    assert s.replace(rec("a", content="new a")) is True
    assert s.ids == ["a", "b", "c"] and s[0].content == "new a"
    assert s.replace(rec("c", content="new c")) is True
    assert s.ids == ["a", "b", "c"] and s[2].content == "new c"
    assert s.replace(rec("zzz")) is False and "zzz" not in s
    assert s.discard("a") is True and s.discard("a") is False
    with pytest.raises(KeyError):
        s.remove("a")
    s.filter(lambda r: r.id != "b")
    assert s.ids == ["c"] and rec("c", content="new c", created_at=s[0].created_at) in s
    s.clear()
    assert list(s) == []


def test_set_refuses_untiered_records() -> None:
    s = RetrievableSet()
    with pytest.raises(TrustTierRequiredError):
        s.add(RawRetrievable(id="a", content="x"))  # type: ignore[arg-type]
    with pytest.raises(UsageError) as exc_info:
        s.add({"id": "a", "content": "x", "trust_tier": "first-party"})  # type: ignore[arg-type]
    assert exc_info.value.code == "E_INVALID_RETRIEVABLE"
    assert len(s) == 0
