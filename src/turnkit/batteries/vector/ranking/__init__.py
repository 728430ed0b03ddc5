"""Ranking over matches: fusion, collapse, rerank, scorers, judge, MMR, abstention (imports no ``store``)."""
