"""The only code importing lancedb: collections, records, scores, execution of a spec (hybrid legs, MMR over-fetch), writes."""
