"""Guarded writes keep each guard's ids to itself: a model check, migration, and every read by id."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import lancedb  # noqa: TID251 - rows are checked below the store
import numpy as np
import orjson
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turnkit._aio import run_sync
from turnkit.batteries.vector import And, RecordNotFoundError, condition, create_vector_store
from turnkit.batteries.vector._matches import VectorMatch
from turnkit.batteries.vector.store._fragments import commit_fragments_sync, write_fragments_sync
from turnkit.batteries.vector.store._guarded import KEY, scope_of
from turnkit.batteries.vector.store._hybrid import _dense_scores
from turnkit.batteries.vector.store._integrity import remove_duplicates

TENANTS = ("A", "B")
IDS = ("r0", "r1", "r2")


def _guard(tenant: str) -> Any:
    return condition("metadata.tenant", "eq", tenant)


def _rows(uri: str, name: str) -> list[dict[str, Any]]:
    table = lancedb.connect(uri).open_table(name)
    columns = ["id", "metadata", *([KEY] if KEY in table.schema.names else [])]
    rows = table.to_arrow().select(columns).to_pylist()
    return [{**r, "metadata": orjson.loads(r["metadata"])} for r in rows]


# (writer, id, tenant in the record): writer None writes without a guard, as an operator would.
_write = st.tuples(st.sampled_from((None, *TENANTS)), st.sampled_from(IDS), st.sampled_from(TENANTS))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_write, min_size=1, max_size=8))
def test_guarded_writes_match_a_model_of_scoped_ids(writes: list[tuple[str | None, str, str]]) -> None:
    """Every row is where the model puts it; a guarded writer never touches a row outside its guard."""
    with tempfile.TemporaryDirectory() as uri:
        vs = create_vector_store(uri, auto_optimize=None, memory_cache=None)
        # The model: key -> (id, tenant, write number). Keys are ("", id) or (scope tenant, id).
        rows: dict[tuple[str, str], tuple[str, str, int]] = {}
        for n, (writer, rid, tenant) in enumerate(writes):
            if writer is not None:
                tenant = writer  # a guarded record must be inside its guard
            record = {"id": rid, "vector": [1.0, float(n)], "metadata": {"tenant": tenant, "n": n}}
            if writer is None:
                key = ("", rid)
                before = {k: v for k, v in rows.items() if v[1] != tenant or k != key}
            else:
                # Its own scope's row, else the newest row inside the guard, else a new one in its scope.
                inside = [(v[2], k) for k, v in rows.items() if v[0] == rid and v[1] == writer]
                own = (writer, rid)
                key = own if own in rows or not inside else max(inside)[1]
                before = {k: v for k, v in rows.items() if v[1] != writer}
            result = vs("m").upsert_sync([record], guard=None if writer is None else _guard(writer))
            assert (result.inserted, result.updated) == ((0, 1) if key in rows else (1, 0))
            rows[key] = (rid, tenant, n)
            if writer is not None:  # rows outside the guard are exactly as they were
                assert {k: v for k, v in rows.items() if v[1] != writer} == before
        stored = sorted((r["id"], r["metadata"]["tenant"], r["metadata"]["n"]) for r in _rows(uri, "m"))
        assert stored == sorted(rows.values())
        for tenant in TENANTS:  # each guarded read sees the newest of its own records per id
            got = {m.id: m.metadata["n"] for m in vs("m").where(_guard(tenant)).get_sync(list(IDS))}
            want: dict[str, int] = {}
            for rid, owner, n in rows.values():
                if owner == tenant:
                    want[rid] = max(n, want.get(rid, -1))
            assert got == want
        assert vs.repair_sync("m") == 0


def test_a_tenant_cannot_tell_whether_another_holds_an_id(tmp_path: Path) -> None:
    vs = create_vector_store(str(tmp_path), auto_optimize=None)
    a, b = _guard("A"), _guard("B")
    vs("kb").upsert_sync([{"id": "r1", "vector": [1.0, 0.0], "metadata": {"tenant": "A"}}], guard=a)
    taken = vs("kb").upsert_sync([{"id": "r1", "vector": [0.0, 1.0], "metadata": {"tenant": "B"}}], guard=b)
    fresh = vs("kb").upsert_sync([{"id": "r2", "vector": [0.0, 1.0], "metadata": {"tenant": "B"}}], guard=b)
    assert (taken.inserted, taken.updated) == (fresh.inserted, fresh.updated) == (1, 0)
    # B reads back what it wrote, whether or not A holds the id; A's record is untouched.
    assert [m.metadata for m in vs("kb").where(b).get_sync(["r1"])] == [{"tenant": "B"}]
    assert [m.metadata for m in vs("kb").where(a).get_sync(["r1"])] == [{"tenant": "A"}]
    # near_id finds the anchor inside the query's filter only: B's r1, never A's.
    near = vs("kb").where(b).near_id("r1").select("id", "metadata").limit(5).search_sync()
    assert [(m.id, m.score) for m in near][0] == ("r1", pytest.approx(1.0))
    with pytest.raises(RecordNotFoundError):
        vs("kb").where(b).near_id("r9").select("id").search_sync()
    vs("kb").upsert_sync([{"id": "a9", "vector": [1.0, 1.0], "metadata": {"tenant": "A"}}], guard=a)
    with pytest.raises(RecordNotFoundError):  # as for an id nobody holds
        vs("kb").where(b).near_id("a9").select("id").search_sync()
    # A delete behind B's guard removes B's record only.
    assert vs("kb").where(b).where_in("id", ["r1"]).delete_sync() == 1
    assert [m.metadata for m in vs("kb").get_sync(["r1"])] == [{"tenant": "A"}]


def test_the_first_guarded_write_migrates_a_collection_in_place(tmp_path: Path) -> None:
    uri = str(tmp_path)
    vs = create_vector_store(uri, auto_optimize=None, fields={"tenant": str})
    vs("kb").upsert_sync(
        [{"id": f"r{i}", "vector": [1.0, float(i)], "metadata": {"tenant": "AB"[i % 2]}} for i in range(6)]
    )
    assert KEY not in lancedb.connect(uri).open_table("kb").schema.names
    # r0 is A's: updated where it is. r1 is B's: A gets its own r1.
    out = vs("kb").upsert_sync(
        [{"id": r, "vector": [0.5, 0.5], "metadata": {"tenant": "A", "v": 2}} for r in ("r0", "r1")],
        guard=_guard("A"),
    )
    assert (out.inserted, out.updated) == (1, 1)
    keys = {(r["id"], r["metadata"]["tenant"]): r[KEY] for r in _rows(uri, "kb")}
    # Rows already there are keyed by their ids, unscoped.
    assert keys[("r0", "A")] == "\x1fr0" and keys[("r2", "A")] == "\x1fr2"
    assert keys[("r1", "B")] == "\x1fr1"
    assert keys[("r1", "A")] == f"{scope_of(_guard('A'))}\x1fr1"
    # Writes without a guard still address records by id, in this process and in a fresh store.
    for store in (vs, create_vector_store(uri, auto_optimize=None)):
        again = store("kb").upsert_sync(
            [{"id": "r3", "vector": [1.0, 3.0], "metadata": {"tenant": "B", "v": 3}}]
        )
        assert (again.inserted, again.updated) == (0, 1)
    assert len(_rows(uri, "kb")) == 7
    # A field declared later is filled per record, not per id.
    vs.declare_fields_sync("kb", {"tags": list[str]})
    hits = (
        vs("kb").where("metadata.tenant", "A").where_in("id", ["r1"]).select("id", "metadata").search_sync()
    )
    assert [m.metadata for m in hits] == [{"tenant": "A", "v": 2}]


def test_fragments_appended_to_a_keyed_collection_are_keyed_by_id(tmp_path: Path) -> None:
    uri = str(tmp_path)
    vs = create_vector_store(uri, auto_optimize=None)
    vs("kb").upsert_sync([{"id": "a", "vector": [1.0, 0.0], "metadata": {"tenant": "A"}}], guard=_guard("A"))
    fragments = write_fragments_sync(
        vs, "kb", [{"id": "f", "vector": [0.0, 1.0], "metadata": {"tenant": "B"}}]
    )
    assert commit_fragments_sync(vs, "kb", fragments) == 1
    again = vs("kb").upsert_sync([{"id": "f", "vector": [0.5, 1.0], "metadata": {"tenant": "B", "v": 2}}])
    assert (again.inserted, again.updated) == (0, 1)
    assert sorted((r["id"], r[KEY]) for r in _rows(uri, "kb")) == [
        ("a", f"{scope_of(_guard('A'))}\x1fa"),
        ("f", "\x1ff"),
    ]


def test_repair_and_the_dense_gauge_keep_scopes_apart(tmp_path: Path) -> None:
    uri = str(tmp_path)
    vs = create_vector_store(uri, auto_optimize=None)
    for tenant, vector in (("A", [1.0, 0.0]), ("B", [0.0, 1.0])):
        vs("kb").upsert_sync(
            [{"id": "r1", "vector": vector, "metadata": {"tenant": tenant}}], guard=_guard(tenant)
        )
    table = lancedb.connect(uri).open_table("kb")
    rows = table.to_arrow()
    tenants = [orjson.loads(m)["tenant"] for m in rows["metadata"].to_pylist()]
    table.add(rows.filter(pa.array([t == "A" for t in tenants])))  # a racing copy of A's record

    async def repair() -> int:
        db = await lancedb.connect_async(uri)
        return await remove_duplicates(await db.open_table("kb"), "kb")

    assert run_sync(repair()) == 1  # the copy of A's record went; B's record under the same id stayed
    assert sorted(r["metadata"]["tenant"] for r in _rows(uri, "kb")) == ["A", "B"]

    async def gauge(tenant: str) -> list[float | None]:
        coll = await vs._collection("kb")

        async def query() -> np.ndarray[Any, Any]:
            return np.asarray([1.0, 0.0], dtype=np.float32)

        # A match the full-text leg alone found has no distance: its stored vector is read.
        return await _dense_scores(coll, [VectorMatch(id="r1")], query, _guard(tenant))

    assert run_sync(gauge("A")) == [pytest.approx(1.0)]
    assert run_sync(gauge("B")) == [pytest.approx(0.5)]  # B's own vector, at 90 degrees


def test_no_id_spells_another_scopes_key(tmp_path: Path) -> None:
    """An unguarded id equal to a tenant's scoped key is another record: keys cannot be forged."""
    uri = str(tmp_path)
    vs = create_vector_store(uri, auto_optimize=None)
    a = _guard("A")
    forged = f"{scope_of(a)}\x1fr1"
    vs("kb").upsert_sync([{"id": forged, "vector": [0.0, 1.0], "metadata": {"tenant": "B"}}])
    vs("kb").upsert_sync([{"id": "r1", "vector": [1.0, 0.0], "metadata": {"tenant": "A"}}], guard=a)
    again = vs("kb").upsert_sync([{"id": forged, "vector": [0.0, 1.0], "metadata": {"tenant": "B", "v": 2}}])
    assert (again.inserted, again.updated) == (0, 1)  # the operator's own record
    assert [m.metadata for m in vs("kb").where(a).get_sync(["r1"])] == [{"tenant": "A"}]
    assert len(_rows(uri, "kb")) == 2


def test_a_broader_guard_moving_a_record_out_never_lets_the_narrow_guard_reach_it(tmp_path: Path) -> None:
    """A record a broad guard moved out of a tenant's guard is beyond that tenant's writes."""
    uri = str(tmp_path)
    vs = create_vector_store(uri, auto_optimize=None)
    app = condition("metadata.app", "eq", "kb")
    tenant_a = And((app, _guard("A")))
    tenant_b = And((app, _guard("B")))

    def record(tenant: str, note: str) -> dict[str, Any]:
        return {"id": "r1", "vector": [1.0, 0.0], "metadata": {"app": "kb", "tenant": tenant, "note": note}}

    vs("kb").upsert_sync([record("A", "A's")], guard=tenant_a)
    moved = vs("kb").upsert_sync([record("B", "moved to B")], guard=app)  # the broad guard sees A's r1
    assert (moved.inserted, moved.updated) == (0, 1)
    # A no longer sees an r1; its write is an insert under a fresh key, and B's record is untouched.
    mine = vs("kb").upsert_sync([record("A", "A's new")], guard=tenant_a)
    assert (mine.inserted, mine.updated) == (1, 0)
    assert [m.metadata["note"] for m in vs("kb").where(tenant_b).get_sync(["r1"])] == ["moved to B"]
    assert [m.metadata["note"] for m in vs("kb").where(tenant_a).get_sync(["r1"])] == ["A's new"]
    again = vs("kb").upsert_sync([record("A", "A's again")], guard=tenant_a)
    assert (again.inserted, again.updated) == (0, 1)  # found again inside its guard
    assert sorted(r["metadata"]["note"] for r in _rows(uri, "kb")) == ["A's again", "moved to B"]


def test_rows_written_over_a_late_create_keep_their_scopes_when_put_back(tmp_path: Path) -> None:
    """Two tenants' r1, written on the empty table a late create left, both come back beside the first r1."""
    from turnkit.batteries.vector.store._integrity import undo_late_create

    uri = str(tmp_path)

    def record(rid: str, tenant: str) -> dict[str, Any]:
        return {"id": rid, "vector": [1.0, 0.0], "metadata": {"tenant": tenant}}

    create_vector_store(uri, auto_optimize=None)("c").upsert_sync([record("r1", "X"), record("x", "X")])

    async def late_create() -> Any:
        conn = await lancedb.connect_async(uri)
        schema = await (await conn.open_table("c")).schema()
        return await conn.create_table("c", schema=schema, mode="overwrite")  # as Lance commits a late create

    late = run_sync(late_create())
    other = create_vector_store(uri, auto_optimize=None)  # a writer that opened the empty table
    for tenant in ("A", "B"):
        other("c").upsert_sync([record("r1", tenant)], guard=_guard(tenant))
    assert run_sync(undo_late_create(late, "c")) is True
    assert sorted((r["id"], r["metadata"]["tenant"]) for r in _rows(uri, "c")) == [
        ("r1", "A"),
        ("r1", "B"),
        ("r1", "X"),
        ("x", "X"),
    ]


def test_near_id_keeps_a_guard_that_hides_ids(tmp_path: Path) -> None:
    vs = create_vector_store(str(tmp_path), auto_optimize=None)
    vs("kb").upsert_sync(
        [
            {"id": i, "vector": [1.0, float(n)], "metadata": {"tenant": "A"}}
            for n, i in enumerate(("p", "secret"))
        ]
    )
    for hidden in (condition("id", "nin", ["secret"]), condition("id", "ne", "secret")):
        guard = And((_guard("A"), hidden))
        assert vs("kb").where(guard).get_sync(["secret"]) == []
        with pytest.raises(RecordNotFoundError):
            vs("kb").where(guard).near_id("secret").select("id").search_sync()
    # "Like p, but not p" still starts from p.
    like = vs("kb").where(_guard("A")).near_id("p").where_not("id", "p").select("id").search_sync()
    assert [m.id for m in like] == ["secret"]
