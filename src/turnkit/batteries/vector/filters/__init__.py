"""Filters, pure: the AST, builders, Mongo-style dicts, the text grammar, the SQL compiler and the reference evaluator (imports only ``_errors``/``_matches``)."""
