"""Filters, pure: AST, builders, Mongo dicts, text grammar, SQL compiler, reference evaluator.

Imports only ``_errors`` and ``_matches``.
"""
