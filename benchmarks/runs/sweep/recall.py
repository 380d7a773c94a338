"""Tie-aware recall@k of an approximate answer against the exact one.

The exact top ``k`` is not unique when scores tie at the cut: any row scoring as much as the
``k``-th exact one belongs there as much as the row the tie rule kept. A returned id counts as a
hit when its exact score is at least the ``k``-th exact score less :data:`TIE_TOLERANCE`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

TIE_TOLERANCE: Final = 1e-6
"""How far below the ``k``-th exact score a returned row's exact score may be and still tie."""


def cut_score(exact_scores: Sequence[float], k: int) -> float:
    """The lowest exact score a hit may have: the ``k``-th exact score (the last one when there
    are fewer) less :data:`TIE_TOLERANCE`."""
    if not exact_scores:
        raise ValueError("no exact answer to compare with")
    return exact_scores[min(k, len(exact_scores)) - 1] - TIE_TOLERANCE


def tie_aware_recall(
    returned: Sequence[str], exact_score_of: Mapping[str, float], cut: float, wanted: int
) -> float:
    """The share of ``wanted`` exact slots that ``returned`` (the approximate top ids) fills:
    returned ids whose exact score (``exact_score_of``; an id absent there scores below the
    cut) is at least ``cut``, at most ``wanted`` of them."""
    if wanted < 1:
        raise ValueError("wanted must be ≥ 1")
    hits = sum(1 for item in returned if exact_score_of.get(item, float("-inf")) >= cut)
    return min(hits, wanted) / wanted
