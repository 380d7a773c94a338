"""The search core: what is served (the catalog of variants and collections), query sides,
filters and search parameters, exact and approximate nearest-neighbour search with one tie rule,
micro-batching of encoder calls and admission at the door. Raises domain errors only."""
