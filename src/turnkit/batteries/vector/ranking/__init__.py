"""Ranking over matches: fusion, rerank, scorers, judge, MMR, abstention (never imports ``store``)."""
