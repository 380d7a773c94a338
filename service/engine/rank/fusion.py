"""Fusing two ranked legs of a hybrid search (dense and lexical) into one ranking.

Each leg is its best ``window`` rows, ordered by its own score descending then row ascending.
Two ways to fuse them, as the peers offer:

- **RRF** (reciprocal rank fusion): a row scores ``sum over legs of 1 / (k + rank)`` with its
  1-based rank in each leg that holds it; ``k`` damps the top ranks (60 in the RRF paper,
  Elasticsearch, Milvus, LanceDB and Marqo; Qdrant uses 2).
- **Weighted sum** of scores normalised per leg (Weaviate's relative-score fusion): each leg's
  scores are mapped onto 0..1 by its window's minimum and maximum (all equal: 1), and a row
  scores ``alpha * dense + (1 - alpha) * lexical``, a leg that lacks it adding 0.

Fused rows are ordered by fused score descending, then row ascending: the project's tie rule,
so a page of a fused ranking continues the previous one exactly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

FusionMethod = Literal["rrf", "weighted"]


@dataclass(frozen=True, slots=True)
class Fusion:
    """How a hybrid search fuses its legs: ``rrf`` with constant ``k``, or ``weighted`` with
    the dense leg's weight ``alpha``."""

    method: FusionMethod = "rrf"
    k: int = 60
    alpha: float = 0.5

    def describe(self) -> dict[str, str | int | float]:
        """What a response reports of it."""
        if self.method == "rrf":
            return {"method": "rrf", "k": self.k}
        return {"method": "weighted", "alpha": self.alpha}


@dataclass(frozen=True)
class Leg:
    """One leg's ranking: rows and scores, best first."""

    rows: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]


def _normalised(scores: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    if len(scores) == 0:
        return scores
    low, high = float(scores.min()), float(scores.max())
    if high == low:
        return np.ones_like(scores)
    result: npt.NDArray[np.float64] = (scores - low) / (high - low)
    return result


def fuse(dense: Leg, lexical: Leg, fusion: Fusion) -> Leg:
    """The fused ranking of every row either leg holds (see the module docstring)."""
    rows = np.concatenate([dense.rows, lexical.rows])
    if fusion.method == "rrf":
        ranks = np.concatenate(
            [np.arange(1, len(dense.rows) + 1), np.arange(1, len(lexical.rows) + 1)]
        ).astype(np.float64)
        parts = 1.0 / (fusion.k + ranks)
    else:
        parts = np.concatenate(
            [
                fusion.alpha * _normalised(dense.scores),
                (1.0 - fusion.alpha) * _normalised(lexical.scores),
            ]
        )
    unique, slot = np.unique(rows, return_inverse=True)
    fused = np.bincount(slot, weights=parts, minlength=len(unique)).astype(np.float64)
    order = np.lexsort((unique, -fused))
    return Leg(unique[order].astype(np.int64), fused[order])
