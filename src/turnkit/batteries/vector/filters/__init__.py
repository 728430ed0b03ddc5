"""Filters, pure: AST, builders, Mongo dicts, text grammar, SQL compiler, reference evaluator.

Imports only ``_errors`` and ``_matches``. One module per part:

- ``_ast``: the nodes (`Condition`, `And`, `Or`, `Not`, `Raw`) and ``Op``, the operators;
- ``_fields``: field names and paths, operator spellings (``OPERATOR_ALIASES``), ``MISSING``;
- ``_build``: `condition` and its value checks, ``and_``/``or_``/``not_``, the Mongo operator table;
- ``_mongo``: Mongo-style dicts; ``_text``: the text grammar; ``_format``: `format_filter_expression`;
- ``_sql``: the LanceDB SQL compiler; ``_evaluate``: the reference semantics;
- ``_where``: the fluent ``where`` methods; ``_core``: re-exports the public names.

Adding an operator, as a checklist:

1. Add it to ``Op`` in ``_ast.py``. ``mypy`` then names each dispatch that must
   handle it (each ends in ``assert_never``): the value checks in
   ``_build.condition``, the two compilers in ``_sql`` (columns and metadata),
   ``_evaluate._eval_condition``, the text formatter in ``_format``, and the
   in-memory masks in ``store/_memory_mask.py``.
2. Give it its spellings: ``OPERATOR_ALIASES`` (``_fields``) and the text grammar's
   tokens (``_text``); the Mongo table ``_FIELD_OPS`` (``_build``) spells it ``$<op>``
   itself. ``tests/vector/test_filter_operators.py`` fails until every operator has them.
3. Extend the hypothesis strategies in ``tests/vector/`` so the compiled SQL is
   checked against `evaluate` on real LanceDB, and document it in docs/filters.md.
"""
