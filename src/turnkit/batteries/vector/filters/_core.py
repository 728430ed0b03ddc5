"""Filters of the vector battery: build, validate, compile to LanceDB SQL, evaluate.

Every filter form (builder calls, Mongo-style dicts, text expressions) ends up
as a tree of `Condition`/`And`/`Or`/`Not`/`Raw` nodes (``_ast.py``); this module
re-exports the public names of the package's modules (the list is in ``__init__``).
The two consumers of the tree are kept in lock-step:

- :func:`evaluate` is the pure-Python *reference semantics*;
- :func:`to_sql` compiles the same tree to a LanceDB (DataFusion) predicate
  that selects exactly the rows :func:`evaluate` accepts. The test-suite runs
  hypothesis-generated trees against a real LanceDB table to hold it to that.

Logic is two-valued: each comparison compiles to an expression that is never
SQL ``NULL`` (``coalesce(..., false)`` or ``col IS NOT NULL AND ...``), so
``NOT``/``AND``/``OR`` behave like Python's ``not``/``and``/``or``.

How the metadata JSON column is read (measured on lancedb 0.40, see
``docs/filters.md``):

- ``json_extract(metadata, '$["a"]["b"]')`` returns the value's JSON text,
  type-preserving (``2021``, ``"2021"``, ``true``, ``null``, ``[1]``), or SQL
  NULL when a key is missing; it never steps into arrays for a key.
- Strings are read with ``json_get_string`` only inside
  ``CASE WHEN starts_with(<json text>, '"') ...``: unguarded it coerces
  numbers to strings and raises on arrays. DataFusion evaluates ``THEN`` only
  for the rows where ``WHEN`` holds, and lance accepts a ``CASE`` only inside
  another expression (here ``coalesce``).
- Numbers are read with ``TRY_CAST(<json text> AS DOUBLE)``: NULL for strings
  (they keep their quotes), booleans, null, arrays and objects.
"""

from __future__ import annotations

from turnkit.batteries.vector.filters._build import (
    MONGO_OPERATORS,
    and_,
    condition,
    filter_to_dict,
    not_,
    or_,
)
from turnkit.batteries.vector.filters._evaluate import evaluate
from turnkit.batteries.vector.filters._fields import (
    MAX_IN_VALUES,
    MAX_LITERAL_LENGTH,
    MISSING,
    OPERATOR_ALIASES,
    validate_field,
)
from turnkit.batteries.vector.filters._mongo import parse_mongo
from turnkit.batteries.vector.filters._sql import bind_raw, sql_literal, to_sql

__all__ = [
    "MAX_IN_VALUES",
    "MAX_LITERAL_LENGTH",
    "MISSING",
    "MONGO_OPERATORS",
    "OPERATOR_ALIASES",
    "and_",
    "bind_raw",
    "condition",
    "evaluate",
    "filter_to_dict",
    "not_",
    "or_",
    "parse_mongo",
    "sql_literal",
    "to_sql",
    "validate_field",
]
