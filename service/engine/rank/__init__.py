"""Ranking primitives: the tie rule, exact scans, search parameters of an index, keyword (BM25)
indexes, fusion of two rankings."""
