"""The only code importing lancedb: collections, records, scores, writes, spec execution.

Execution includes the hybrid legs and the MMR over-fetch.
"""
