"""Shared pieces of the filter tests: a LanceDB table with turnkit's schema, and hypothesis strategies.

Strategies are handed out through session fixtures (test modules draw from
them with ``st.data()``) because the test directories have no ``__init__``
files to import a helper module through.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import strategies as st

from turnkit.batteries.vector.filters._ast import And, Condition, FilterNode, Not, Or
from turnkit.batteries.vector.filters._core import condition

os.environ.setdefault("LANCEDB_LOG", "error")

SCHEMA = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("vector", pa.list_(pa.float32(), 2)),
        pa.field("document", pa.string()),
        pa.field("metadata", pa.json_()),
        pa.field("created_at", pa.timestamp("us", tz="UTC")),
        pa.field("updated_at", pa.timestamp("us", tz="UTC")),
    ]
)
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)
_names = itertools.count()


def to_arrow(records: Sequence[dict[str, Any]]) -> pa.Table:
    n = len(records)
    metadata = [
        None
        if r["metadata"] is None
        else json.dumps(r["metadata"], ensure_ascii=False, separators=(",", ":"))
        for r in records
    ]
    return pa.Table.from_arrays(
        [
            pa.array([r["id"] for r in records], pa.string()),
            pa.FixedSizeListArray.from_arrays(pa.array([0.5] * (2 * n), pa.float32()), 2),
            pa.array([r["document"] for r in records], pa.string()),
            pa.array(metadata, pa.string()).cast(pa.json_()),
            pa.array([r["created_at"] for r in records], pa.timestamp("us", tz="UTC")),
            pa.array([r["updated_at"] for r in records], pa.timestamp("us", tz="UTC")),
        ],
        schema=SCHEMA,
    )


def record(
    rid: str, metadata: Any = None, document: str | None = None, *, minutes: int = 0
) -> dict[str, Any]:
    stamp = EPOCH + timedelta(minutes=minutes, microseconds=minutes % 7)
    return {
        "id": rid,
        "document": document,
        "metadata": metadata,
        "created_at": stamp,
        "updated_at": stamp + timedelta(seconds=minutes % 3),
    }


@dataclass
class FilterTable:
    """A LanceDB table and the records it holds, queried by compiled filter SQL."""

    table: Any
    records: list[dict[str, Any]]

    def ids(self, where: str) -> set[str]:
        rows = self.table.search().where(where).select(["id"]).limit(len(self.records) + 10).to_list()
        return {row["id"] for row in rows}


@pytest.fixture(scope="session")
def lance_db() -> Any:
    import lancedb  # noqa: TID251 - the filter tests build the table directly, below the store

    return lancedb.connect("memory://")


@pytest.fixture(scope="session")
def make_table(lance_db: Any) -> Callable[[Sequence[dict[str, Any]]], FilterTable]:
    def make(records: Sequence[dict[str, Any]]) -> FilterTable:
        table = lance_db.create_table(f"t{next(_names)}", to_arrow(records))
        return FilterTable(table, list(records))

    return make


# ---------------------------------------------------------------------------
# Values that stress every comparison: types that look alike, escaping, edges.

TRICKY_STRINGS = [
    "",
    "x",
    "X",
    "a%b",
    "a_b",
    "axb",
    "a\\b",
    "a\\%",
    "100%",
    "it's",
    "' OR '1'='1",
    "x'; DROP TABLE t; --",
    'say "hi"',
    "semi;colon -- comment /* c */",
    "?",
    "é",
    "e\u0301",
    "😀",
    "日本語",
    "\n",
    "tab\there",
    "1",
    "1.0",
    "true",
    "null",
    "[1]",
    '"x"',
    "2021",
    "\u2028",
    "z" * 40,
]
EDGE_INTS = [
    0,
    1,
    -1,
    5,
    2021,
    2**31,
    -(2**31),
    2**53 - 1,
    2**53,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    2**63,
    2**64,
    10**20,
]
EDGE_FLOATS = [0.0, -0.0, 1.0, 1.5, -2.5, 0.1, 2021.0, 5.0, 1e300, -1e300, 5e-324, 1e-7, 2.0**53, 9.5e18]
SCALARS: list[Any] = [*TRICKY_STRINGS, *EDGE_INTS, *EDGE_FLOATS, True, False, None]
LISTS: list[Any] = [
    [],
    [1],
    [1.0],
    ["1"],
    ["x"],
    ["x", "y"],
    [1, "1", True],
    [True],
    [False, 0],
    [None],
    [[1]],
    [["x"]],
    [[[1]]],
    [[True], "true"],
    [{"a": 1}],
    ["it's", 'say "hi"', "a\\b"],
    ["' OR '1'='1"],
    [5, 2021, 2**53 + 1],
    [-0.0],
    [0],
    [1e300, -5],
    ["😀", "é"],
]

METADATA_KEYS = ["a", "b", "c-d", "0", "o"]
FIELDS = [
    "id",
    "document",
    "created_at",
    "updated_at",
    "metadata.a",
    "metadata.b",
    "metadata.c-d",
    "metadata.0",
    "metadata.o",
    "metadata.o.a",
    "metadata.o.b",
    "metadata.o.0",
    "metadata.missing",
]

json_scalars = st.one_of(
    st.sampled_from(SCALARS),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=6),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
)
json_values = st.recursive(
    st.one_of(json_scalars, st.sampled_from(LISTS)),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.sampled_from(["a", "b", "0", "c-d"]), children, max_size=3),
    ),
    max_leaves=6,
)
metadata_objects = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(METADATA_KEYS), json_values, max_size=5),
)
documents = st.one_of(
    st.none(), st.sampled_from(TRICKY_STRINGS), st.text(max_size=8).filter(lambda s: "\x00" not in s)
)
timestamps = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda d: d.replace(microsecond=d.microsecond))


def fixed_records() -> list[dict[str, Any]]:
    """A diverse, fixed record set: every tricky value under several keys and nestings."""
    out: list[dict[str, Any]] = []
    # Stored-only values (never valid literals): NUL inside text, huge-but-finite numbers.
    values: list[Any] = [*SCALARS, *LISTS, {"a": 1}, {"a": "x", "b": [1]}, {}, "x\x00y", ["x\x00y"], 10**300]
    for i, value in enumerate(values):
        doc = TRICKY_STRINGS[i % len(TRICKY_STRINGS)] if i % 4 else None
        other = values[(i * 7 + 3) % len(values)]
        meta: dict[str, Any] = {"a": value, "b": other}
        if i % 3 == 0:
            meta["o"] = {"a": value, "b": other, "0": i}
        elif i % 3 == 1:
            meta["o"] = [{"a": value}]
        if i % 5 == 0:
            meta["c-d"] = value
            meta["0"] = other
        out.append(record(f"r{i:03d}", meta, doc, minutes=i * 37))
    out.append(record("m-empty", {}, "empty", minutes=1))
    out.append(record("m-null", None, None, minutes=2))
    out.append(record("é-unicode-id", {"a": "é"}, "é", minutes=3))
    out.append(record("it's", {"a": "it's"}, "it's", minutes=4))
    return out


# ---------------------------------------------------------------------------
# Filter trees


_sampled_scalars = st.sampled_from(SCALARS)
_text = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=4)
_numbers = st.one_of(st.sampled_from(EDGE_INTS + EDGE_FLOATS), st.integers(-3, 3000), st.floats(-1e6, 1e6))
_strings = st.one_of(st.sampled_from(TRICKY_STRINGS), st.text(st.sampled_from("axX1'%_\\é😀 "), max_size=4))


def _literal(field: str, op: str) -> st.SearchStrategy[Any]:
    if field in ("created_at", "updated_at"):
        return st.one_of(timestamps, st.sampled_from([EPOCH, EPOCH + timedelta(minutes=37, microseconds=2)]))
    if field in ("id", "document"):
        return st.one_of(st.sampled_from(TRICKY_STRINGS + ["r001", "r010", "it's", "m-empty"]), _text)
    if op in ("gt", "gte", "lt", "lte"):
        return st.one_of(_numbers, _strings)
    if op == "contains":
        return st.one_of(
            _strings, st.sampled_from([0, 1, 5, -5, 2021, 2**53 - 1, True, False]), st.integers(-3, 3)
        )
    return st.one_of(_sampled_scalars, _numbers, _strings, st.booleans(), st.none())


def _valid(field: str, op: str, value: Any) -> Condition | None:
    try:
        return condition(field, op, value)
    except Exception:
        return None


@st.composite
def conditions(draw: st.DrawFn, fields: Sequence[str] = FIELDS) -> Condition:
    field = draw(st.sampled_from(fields))
    ops = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like", "contains", "exists", "null"]
    if field in ("created_at", "updated_at"):
        ops = ops[:8] + ops[10:]
    op = draw(st.sampled_from(ops))
    if op in ("exists", "null"):
        return condition(field, op, draw(st.booleans()))
    if op in ("in", "nin"):
        built = _valid(field, op, draw(st.lists(_literal(field, op), max_size=4)))
    elif op == "like":
        pattern = draw(
            st.one_of(
                st.sampled_from(
                    ["%", "_", "a%", "%b", "a_b", "a\\%", "%\\_%", "%'%", "x", "", "%😀%", "1%", "%\\\\%"]
                ),
                st.text(st.sampled_from("ax%_\\'\n😀"), max_size=5),
            )
        )
        built = _valid(field, op, pattern)
    else:
        built = _valid(field, op, draw(_literal(field, op)))
    if built is None:
        return condition(field, "exists")
    return built


def filter_trees(fields: Sequence[str] = FIELDS, max_leaves: int = 6) -> st.SearchStrategy[FilterNode]:
    return st.recursive(
        conditions(fields),
        lambda children: st.one_of(
            st.lists(children, max_size=3).map(lambda c: And(tuple(c))),
            st.lists(children, max_size=3).map(lambda c: Or(tuple(c))),
            children.map(Not),
        ),
        max_leaves=max_leaves,
    )


@pytest.fixture(scope="session")
def helpers() -> SimpleNamespace:
    """Plain helpers and constants (test modules cannot import this conftest by name)."""
    return SimpleNamespace(
        record=record, EPOCH=EPOCH, TRICKY_STRINGS=TRICKY_STRINGS, SCALARS=SCALARS, LISTS=LISTS
    )


@pytest.fixture(scope="session")
def strategies() -> dict[str, Any]:
    """The hypothesis strategies, for tests that draw with ``st.data()``."""
    return {
        "trees": filter_trees(),
        "conditions": conditions(),
        "metadata": metadata_objects,
        "documents": documents,
        "timestamps": timestamps,
        "json_scalars": json_scalars,
    }


@pytest.fixture(scope="session")
def fixed_table(make_table: Callable[[Sequence[dict[str, Any]]], FilterTable]) -> FilterTable:
    return make_table(fixed_records())
