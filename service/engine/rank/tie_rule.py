"""The tie rule, written once: score descending, then row ascending (docs/contracts.md).

Every ranking the engine makes — a bundle's index, a live collection's two parts, a shard's
answer, a lexical leg, a fusion, a re-rank — orders its rows with :func:`order`. An exact search
scores its fetched rows again from the stored vectors in float64, one row at a time in a fixed
order (:func:`exact_scores`): every path (a matrix product, faiss's selector search, a GPU, a
shard) then gives a row the same score, so equal rows tie exactly and the rule, not rounding,
orders them.

An index searched to a depth cannot say whether an unfetched row ties with the last fetched one:
a search fetches :data:`EXTRA_FETCH` rows past its cut and is *settled* (:func:`settled`) when the
lowest fetched search score is below the cut's exact score by more than :data:`SCORE_SLACK` (an
unfetched row's search score is at most the lowest fetched one, and its exact score exceeds its
search score by rounding only); otherwise it fetches deeper. COCO holds many duplicate captions,
so exact ties are common, not theoretical.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

SCORE_SLACK: Final = 1e-5
"""How much an unfetched row's exact score may exceed its float32 search score by rounding
(384 products of unit vectors in float32 round off by about 1e-7)."""

EXTRA_FETCH: Final = 16
"""Rows fetched past the cut on an exactly rescored search, so that the slack rarely forces a
second pass."""


def order(rows: npt.NDArray[np.int64], scores: np.ndarray) -> npt.NDArray[np.intp]:
    """The positions of ``rows`` (with their ``scores``) by score descending, then row
    ascending."""
    ordered: npt.NDArray[np.intp] = np.lexsort((rows, -scores))
    return ordered


def exact_scores(vectors: np.ndarray, query: np.ndarray) -> npt.NDArray[np.float32]:
    """The inner product of each of ``vectors`` (one per row) with ``query``, in float64 one
    row at a time, as float32: the score every exact path gives a row."""
    exact = np.einsum("ij,j->i", vectors.astype(np.float64), query.astype(np.float64))
    scores: npt.NDArray[np.float32] = exact.astype(np.float32)
    return scores


def settled(lowest_fetched: float, top_scores: np.ndarray, wanted: int, slack: float) -> bool:
    """Whether no unfetched row can belong among the ``wanted`` best: ``top_scores`` holds
    ``wanted`` scores and the lowest fetched search score is below the last of them by more
    than ``slack`` (0 for an index whose own scores are the ranking's)."""
    return len(top_scores) == wanted and lowest_fetched < float(top_scores[-1]) - slack
