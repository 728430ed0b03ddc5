"""Declared fields on LanceDB: typed columns beside the JSON metadata, their indexes, their migration.

Invariants (what filters on a declared field rely on):

- every row's column value equals its metadata key's value, or is NULL where
  the key is missing or JSON ``null``; writes refuse any other value;
- the set of declared fields is read from the table's own schema (a column
  whose Arrow field carries ``turnkit.field``), so every process and store
  sees the same declaration as soon as it sees the version that made it;
- declaring a field on a collection with rows fills the column from the JSON
  in the same write lock as upserts, after checking every row's value;
- an *automatic* field (one the store declared because every stored value of
  the key had one type, see ``_auto_fields.py``) carries a second mark; a
  write that brings another type drops its column before it commits, so the
  key is read from the JSON again, and no write is ever refused for it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping, Sequence
from functools import partial
from typing import Any, Final

import orjson
import pyarrow as pa

from turnkit.batteries.vector._errors import VectorStoreUsageError
from turnkit.batteries.vector.filters._declared import FIELD_TYPES, MAX_EXACT_INT, FieldType, fits
from turnkit.batteries.vector.store._common import _COLUMNS, record_key
from turnkit.batteries.vector.store._lancedb import translate_errors

__all__ = [
    "auto_fields",
    "check_same_types",
    "ensure_field_indexes",
    "declared_arrays",
    "declared_fields",
    "field_marks",
    "field_schema",
    "fill_declared",
    "is_field_name",
    "kind_of",
    "normalize_fields",
    "scalar_index_config",
    "value_kind",
    "with_declared",
]

_config_error = partial(VectorStoreUsageError, code="E_INVALID_VECTOR_STORE_CONFIG")

_MARK: Final = b"turnkit.field"
_AUTO: Final = b"turnkit.auto"  # b"1": declared by the store, not the deployer
_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_ARROW: Final[Mapping[FieldType, pa.DataType]] = {
    "str": pa.string(),
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "list[str]": pa.list_(pa.string()),
}
_BY_PYTHON: Final[Mapping[Any, FieldType]] = {
    str: "str",
    int: "int",
    float: "float",
    bool: "bool",
    list[str]: "list[str]",
}
_FILL_BATCH: Final = 50_000
# Exact for JSON values of the declared type (checked first); JSON null and missing keys give NULL.
_JSON_GET: Final[Mapping[FieldType, str]] = {
    "str": "json_get_string",
    "int": "json_get_int",
    "float": "json_get_float",
    "bool": "json_get_bool",
}


def normalize_fields(fields: Mapping[str, Any] | None) -> dict[str, FieldType]:
    """Check a ``{key: type}`` declaration and return it with canonical type names.

    Types are ``str``, ``int``, ``float``, ``bool`` and ``list[str]``, as Python types or as those names.
    """
    if fields is None:
        return {}
    if not isinstance(fields, Mapping):
        raise _config_error(
            f"fields must be a mapping of metadata key to type, not {type(fields).__name__}.",
            hint="fields={'tenant': str, 'year': int, 'tags': list[str]}",
        )
    out: dict[str, FieldType] = {}
    for key, kind in fields.items():
        if not isinstance(key, str) or _NAME.fullmatch(key) is None:  # is_field_name, with its own error
            raise _config_error(
                f"Declared field name {key!r} is not a plain metadata key.",
                hint="Use ASCII letters, digits and '_' (not first a digit), at most 64 characters.",
            )
        if key in _COLUMNS or key.startswith("_"):
            raise _config_error(
                f"{key!r} cannot be a declared field: it is a column of every collection or reserved.",
                hint=f"Pick another key; {', '.join(_COLUMNS)} and names starting with '_' are taken.",
            )
        try:
            found = kind if kind in FIELD_TYPES else _BY_PYTHON.get(kind)
        except (TypeError, ValueError):  # unhashable or not comparable (['str'], an array)
            found = None
        if found is None:
            raise _config_error(
                f"Declared field {key!r} has type {kind!r}; supported: str, int, float, bool, list[str].",
                hint="Pass a Python type (str, int, float, bool, list[str]) or its name.",
            )
        out[key] = found
    return out


def check_same_types(name: str, current: Mapping[str, FieldType], fields: Mapping[str, FieldType]) -> None:
    """Refuse to declare a key again with another type than the one it has."""
    for key, kind in fields.items():
        if current.get(key, kind) != kind:
            raise _config_error(
                f"Field {key!r} of collection {name!r} is already a {current[key]} column; "
                f"it cannot become {kind}.",
                hint="Declare the new type under another metadata key.",
                collection=name,
            )


def field_schema(fields: Mapping[str, FieldType]) -> list[pa.Field]:
    """The Arrow fields of declared fields, marked so the collection knows them again when reopened."""
    return [
        pa.field(key, _ARROW[kind], metadata={_MARK: kind.encode()}) for key, kind in sorted(fields.items())
    ]


def declared_fields(schema: pa.Schema) -> dict[str, FieldType]:
    """The declared fields recorded in a table's schema."""
    marks = {fld.name: (fld.metadata or {}).get(_MARK, b"").decode() for fld in schema}
    return {key: kind for key, kind in marks.items() if kind in FIELD_TYPES}


def auto_fields(schema: pa.Schema) -> frozenset[str]:
    """Which of the table's declared fields the store declared by itself (see ``_auto_fields.py``)."""
    return frozenset(
        fld.name for fld in schema if (fld.metadata or {}).get(_MARK) and fld.metadata.get(_AUTO) == b"1"
    )


def field_marks(fields: Mapping[str, FieldType], *, auto: bool) -> list[dict[str, Any]]:
    """The ``update_field_metadata`` entries that declare ``fields`` (automatic ones, or the deployer's)."""
    flag = "1" if auto else "0"
    return [
        {"path": key, "metadata": {_MARK.decode(): kind, _AUTO.decode(): flag}}
        for key, kind in sorted(fields.items())
    ]


def value_kind(value: Any) -> str | None:
    """The type tag of one JSON value for automatic fields; None for JSON null.

    ``int`` only within 2**53 (a larger one fits a float field, as declared
    float fields take it); ``other`` (a dict, a mixed list) fits no field.
    """
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int" if -MAX_EXACT_INT <= value <= MAX_EXACT_INT else "bigint"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return "list[str]"
    return "other"


def kind_of(tags: set[str]) -> FieldType | None:
    """The one field type every tag fits, or None when the tags conflict."""
    if not tags:
        return None
    if tags == {"int"}:
        return "int"
    if tags <= {"int", "bigint", "float"}:
        return "float"
    if len(tags) == 1 and (tag := next(iter(tags))) in ("str", "bool", "list[str]"):
        return tag  # type: ignore[return-value]
    return None


def is_field_name(key: str) -> bool:
    """Whether ``key`` can be a declared field (a plain name, not a column every collection has)."""
    return _NAME.fullmatch(key) is not None and key not in _COLUMNS and not key.startswith("_")


async def ensure_field_indexes(table: Any, name: str, fields: Mapping[str, FieldType]) -> None:
    """Give each declared field its scalar index, unless it has one (optimize keeps them current)."""
    if not fields:
        return
    with translate_errors("declare fields", name):
        for key, kind in sorted(fields.items()):
            if key in await _indexed(table):
                continue
            try:
                await table.create_index(key, config=scalar_index_config(kind), replace=False)
            except Exception:
                # integrity: another process may have built it meanwhile; that is not a failure.
                await table.checkout_latest()
                if key not in await _indexed(table):
                    raise


async def _indexed(table: Any) -> set[str]:
    return {col for index in await table.list_indices() for col in (index.columns or [])}


def scalar_index_config(kind: FieldType) -> Any:
    """LanceDB's index config for a field of this type.

    BTREE orders values (range filters, many distinct values); BITMAP suits a few
    distinct values (booleans); LABEL_LIST answers "has this label" on lists.
    """
    from lancedb.index import Bitmap, BTree, LabelList  # noqa: TID251 - inside the battery, lazily

    return {"bool": Bitmap, "list[str]": LabelList}.get(kind, BTree)()


def _bad_value(index: int, rid: str, key: str, kind: FieldType, value: Any) -> VectorStoreUsageError:
    shown = repr(value)[:60]
    why = f"larger than 2**53 in magnitude ({shown})" if kind == "int" and fits("float", value) else shown
    return VectorStoreUsageError(
        f"Record {index} (id {rid!r}): metadata.{key} is a declared {kind} field, but holds {why}.",
        code="E_INVALID_VECTOR_RECORD",
        hint=f"Store a value of type {kind}, null, or no such key; or declare the field under another key.",
        index=index,
        record_id=rid,
        field=key,
    )


def declared_arrays(
    ids: Sequence[str], metadata: Sequence[Mapping[str, Any] | None], fields: Mapping[str, FieldType]
) -> dict[str, pa.Array]:
    """The declared columns of a batch, from each record's metadata; a wrong type names the record."""
    values: dict[str, list[Any]] = {key: [] for key in fields}
    for index, meta in enumerate(metadata):
        for key, kind in fields.items():
            value = None if meta is None else meta.get(key)
            if value is not None and not fits(kind, value):
                raise _bad_value(index, ids[index], key, kind, value)
            if value is not None and kind == "list[str]":
                value = list(value)
            elif value is not None and kind == "float":
                value = float(value)  # what filters compare; Arrow refuses an int beyond 2**53 as is
            values[key].append(value)
    return {key: pa.array(values[key], _ARROW[fields[key]]) for key in sorted(fields)}


def with_declared(
    data: pa.Table,
    ids: Sequence[str],
    metadata: Sequence[Mapping[str, Any] | None],
    fields: Mapping[str, FieldType],
) -> pa.Table:
    """``data`` with the declared fields' columns appended, taken from the records' metadata."""
    for fld, array in zip(field_schema(fields), declared_arrays(ids, metadata, fields).values(), strict=True):
        data = data.append_column(fld, array)
    return data


async def fill_declared(table: Any, name: str, fields: Mapping[str, FieldType], *, auto: bool = False) -> int:
    """Declare ``fields`` on a table that may hold rows: add, fill from the JSON, then mark each column.

    A first pass over ``id, metadata`` in batches (memory stays bounded)
    checks every row, so a wrong-typed value refuses the declaration before
    anything is written. Scalar fields are then added as columns computed
    from the JSON in one commit (``json_get_*``, exact for values of the
    declared type): no row is rewritten, so the vector index stays whole.
    ``list[str]`` fields, which SQL cannot build from JSON, are filled by a
    second pass that updates the rows by id (they leave the vector index
    until the next optimize). A column counts as declared only once its mark
    is committed, last: a declaration cut short leaves an unmarked column
    that filters never read. The caller drops such columns first, holding
    the collection's write locks. ``auto``: the store declares them (their
    types were found by reading every row under the same locks, so the first
    pass is skipped).
    """
    rows = 0
    if not auto:
        async for ids, metas, _ in _id_metadata_batches(table, name, "id"):
            declared_arrays(ids, metas, fields)  # pass 1: refuses before any write
            rows += len(ids)
    scalars = {key: kind for key, kind in fields.items() if kind != "list[str]"}
    lists = {key: kind for key, kind in fields.items() if kind == "list[str]"}
    with translate_errors("declare fields", name):
        if scalars:
            await table.add_columns(
                {key: f"{_JSON_GET[kind]}(metadata, '{key}')" for key, kind in sorted(scalars.items())}
            )
        if lists:
            await table.add_columns([pa.field(key, _ARROW[kind]) for key, kind in sorted(lists.items())])
    if lists:  # pass 2, only for what SQL cannot compute
        key = record_key((await table.schema()).names)  # one id in two guard scopes: two rows
        async for ids, metas, keys in _id_metadata_batches(table, name, key):
            columns = {key: keys, **declared_arrays(ids, metas, lists)}
            with translate_errors("declare fields", name):
                await table.merge_insert(key).when_matched_update_all().execute(pa.table(columns))
    with translate_errors("declare fields", name):  # one commit declares them all
        await table.update_field_metadata(*field_marks(fields, auto=auto))
    return rows


async def _id_metadata_batches(
    table: Any, name: str, key: str
) -> AsyncIterator[tuple[list[str], list[Mapping[str, Any] | None], pa.Array]]:
    columns = list(dict.fromkeys(["id", "metadata", key]))
    with translate_errors("declare fields", name):
        reader = await table.query().select(columns).to_batches(max_batch_length=_FILL_BATCH)
        async for batch in reader:
            metas = [
                None if raw is None else orjson.loads(raw) for raw in batch.column("metadata").to_pylist()
            ]
            yield batch.column("id").to_pylist(), metas, batch.column(key)
