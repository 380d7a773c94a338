"""Maximal marginal relevance over a search's candidates and their stored vectors, in plain
Python (the LangChain extra needs no numpy).

The selection is LangChain's ``maximal_marginal_relevance``
(``langchain_core.vectorstores.utils``): the candidate most similar to the query first, then
each time the one maximising ``lambda_mult * similarity to the query - (1 - lambda_mult) *
its greatest similarity to one already chosen``, similarities being cosines, the first
candidate winning a tie. ``lambda_mult`` 1 is relevance alone, 0 diversity alone. (LlamaIndex's
store uses LlamaIndex's own MMR, whose ``mmr_threshold`` weighs the overlap with the last node
chosen only: :mod:`crisscross_client.integrations.llamaindex_queries`.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(math.fsum(value * value for value in vector))
    return [value / norm for value in vector] if norm > 0 else [0.0 for _ in vector]


def _dot(left: Sequence[float], right: Sequence[float]) -> float:
    return sum(a * b for a, b in zip(left, right, strict=True))


def maximal_marginal_relevance(
    query: Sequence[float],
    candidates: Sequence[Sequence[float]],
    lambda_mult: float = 0.5,
    k: int = 4,
) -> list[int]:
    """The positions in ``candidates`` of the ``k`` (or fewer) chosen, in the order chosen."""
    if not 0.0 <= lambda_mult <= 1.0:
        raise ValueError(f"lambda_mult {lambda_mult!r} is not in [0, 1]")
    wanted = min(k, len(candidates))
    if wanted <= 0:
        return []
    units = [_unit(vector) for vector in candidates]
    to_query = [_dot(_unit(query), unit) for unit in units]
    first = max(range(len(units)), key=lambda i: (to_query[i], -i))
    chosen = [first]
    redundancy = [_dot(unit, units[first]) for unit in units]
    while len(chosen) < wanted:
        best, best_score = -1, -math.inf
        for i in range(len(units)):
            if i in chosen:
                continue
            score = lambda_mult * to_query[i] - (1.0 - lambda_mult) * redundancy[i]
            if score > best_score:
                best, best_score = i, score
        chosen.append(best)
        redundancy = [
            max(old, _dot(unit, units[best])) for old, unit in zip(redundancy, units, strict=True)
        ]
    return chosen
