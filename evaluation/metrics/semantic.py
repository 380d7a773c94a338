"""Retrieval metrics beyond binary recall (Biten et al. 2022, "Is an image worth five
sentences?"): recall R (eq. 1), NCS (eq. 5) and semantic recall SR (eq. 4).

Notation: a query ``q`` gets the service's ranked list ``L(q)`` (score descending, then row
ascending — taken as given); ``top_K(q)`` is its first ``K`` items. ``P(q)`` is the task's
positive set, ``GT(q)`` the MS-COCO ground truth (an image's own captions / a caption's own
image), and ``N(q, j) ≥ 0`` the graded relevance of target ``j``: the CIDEr-D matrix of
:mod:`evaluation.metrics.cider` read as ``N[caption j, image q]`` for i2t and
``N[caption q, image j]`` for t2i.

- **R (eq. 1)** ``R_eq1@K = (1/|Q|) Σ_q |P(q) ∩ top_K(q)| / |P(q)|`` — the share of a query's
  positives found, averaged. Beside it the usual **R^V (eq. 2)**, the report's ``R@K``: the
  share of queries with at least one positive in the top K.
- **NCS (eq. 5)** ``NCS@K = Σ_q Σ_{j ∈ top_K(q)} N(q, j) / Σ_q Σ_{j ∈ ideal_K(q)} N(q, j)``,
  ``ideal_K(q)`` = the K targets with the largest ``N(q, ·)``: how much of the attainable
  CIDEr-D the service's top K collects (1 = as good as ranking by CIDEr-D itself).
- **SR (eq. 4)** with ``m`` relevant items: ``rel_m(q)`` = the ``m`` targets with the largest
  ``N(q, ·) > 0`` (ties: lower collection row first); ``SR@K = (1/|Q'|) Σ_q
  |rel_m(q) ∩ top_K(q)| / |rel_m(q)|`` over the queries ``Q'`` with a non-empty ``rel_m``
  (eq. 1 with relevance read from N).
- **non-GT variants** (``NCS_nonGT@K``, ``SR_nonGT@K``; Biten et al.'s default,
  ``include_anns=False``): ``GT(q)`` is removed from the candidates of *both* lists — from
  ``L(q)`` before cutting at K (so ``top_K`` takes the next items) and from the ideal list /
  ``rel_m``. They measure only what MS-COCO's binary labels cannot see.

Ties inside ``L(q)`` follow the service; ties in the ideal list do not change its sum; ties in
``rel_m`` are broken by collection row ascending. A metric over zero denominators is ``None``.
How a run reads a direction's ``N`` and ground truth from the split is
:mod:`benchmarks.runs.quality.graded`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

GRADED_KS: tuple[int, ...] = (1, 5, 10)
CURVE_DEPTH = 10
SR_RELEVANT: Mapping[str, int] = {"i2t": 5, "t2i": 1}
"""Relevant items m of SR per direction: one image's worth of captions (5) for i2t, one image
for t2i (Biten et al.'s threshold 1)."""


def recall_eq1(
    top_ids: Sequence[Sequence[str]], positives: Sequence[Collection[str]], ks: Sequence[int]
) -> dict[int, float]:
    """R (eq. 1): per query the share of its positives in its top K, averaged over queries.

    Args:
        top_ids: per query, its ranked target ids (at least ``max(ks)`` of them, or all).
        positives: per query, its non-empty positive set.
        ks: the cut-offs.

    Raises:
        ValueError: no queries, or a query without positives.
    """
    if not top_ids or len(top_ids) != len(positives):
        raise ValueError("need one ranked list and one positive set per query, at least one")
    if any(not wanted for wanted in positives):
        raise ValueError("every query needs at least one positive")
    result: dict[int, float] = {}
    for cut in ks:
        shares = [
            sum(item in wanted for item in ranked[:cut]) / len(wanted)
            for ranked, wanted in zip(top_ids, positives, strict=True)
        ]
        result[cut] = float(np.mean(shares))
    return result


@dataclass(frozen=True)
class GradedPerQuery:
    """Per-query sums behind NCS and SR, for cut-offs K = 1..depth (column K − 1).

    Attributes:
        retrieved_gain: float64 ``[Q, depth]``: ``Σ_{j ∈ top_K(q)} N(q, j)``.
        ideal_gain: float64 ``[Q, depth]``: ``Σ_{j ∈ ideal_K(q)} N(q, j)``.
        semantic_hits: int64 ``[Q, depth]``: ``|rel_m(q) ∩ top_K(q)|``.
        relevant: int64 ``[Q, m]``: ``rel_m(q)`` as target indices, best first, −1 padded.
        relevant_count: int64 ``[Q]``: ``|rel_m(q)|``.
    """

    retrieved_gain: npt.NDArray[np.float64]
    ideal_gain: npt.NDArray[np.float64]
    semantic_hits: npt.NDArray[np.int64]
    relevant: npt.NDArray[np.int64]
    relevant_count: npt.NDArray[np.int64]

    @staticmethod
    def concatenate(parts: Sequence[GradedPerQuery]) -> GradedPerQuery:
        """The per-query arrays of consecutive query chunks, stacked."""
        return GradedPerQuery(
            *(np.concatenate([getattr(part, name) for part in parts]) for name in _FIELDS)
        )

    def select(self, rows: npt.ArrayLike) -> GradedPerQuery:
        """The same arrays for a subset of the queries (``rows`` index the first axis)."""
        index = np.asarray(rows, dtype=np.int64)
        return GradedPerQuery(*(getattr(self, name)[index] for name in _FIELDS))

    def ncs(self, cut: int) -> float | None:
        """NCS@K over these queries; ``None`` when no ideal gain exists."""
        ideal = float(self.ideal_gain[:, cut - 1].sum())
        return float(self.retrieved_gain[:, cut - 1].sum()) / ideal if ideal > 0 else None

    def semantic_recall(self, cut: int) -> float | None:
        """SR@K over the queries with a non-empty ``rel_m``; ``None`` when there are none."""
        kept = self.relevant_count > 0
        if not kept.any():
            return None
        return float(np.mean(self.semantic_hits[kept, cut - 1] / self.relevant_count[kept]))


_FIELDS = ("retrieved_gain", "ideal_gain", "semantic_hits", "relevant", "relevant_count")


def top_relevant(
    relevance: npt.NDArray[np.floating], candidates: npt.NDArray[np.bool_], m: int
) -> npt.NDArray[np.int64]:
    """Per query, the ``m`` candidate targets with the largest positive relevance.

    Args:
        relevance: ``[Q, T]`` graded relevance ``N(q, ·)``.
        candidates: bool ``[Q, T]``: which targets may be chosen.
        m: how many per query.

    Returns:
        int64 ``[Q, m]``: target indices ordered by relevance descending, then index
        ascending; −1 where a query has fewer than ``m`` candidates with ``N > 0``.
    """
    count, targets = relevance.shape
    eligible = candidates & (relevance > 0)
    keyed = np.where(eligible, relevance, -np.inf)
    take = min(m, targets)
    # the m-th largest value bounds the chosen set; every tie at the bound is a contender
    bound = np.partition(keyed, targets - take, axis=1)[:, targets - take]
    query, target = np.nonzero(eligible & (keyed >= bound[:, None]))
    order = np.lexsort((target, -keyed[query, target], query))
    query, target = query[order], target[order]
    first = np.searchsorted(query, np.arange(count))
    position = np.arange(query.size) - first[query]
    kept = position < m
    chosen = np.full((count, m), -1, dtype=np.int64)
    chosen[query[kept], position[kept]] = target[kept]
    return chosen


def graded_per_query(
    relevance: npt.NDArray[np.floating],
    retrieved: npt.NDArray[np.int64],
    ground_truth: npt.NDArray[np.bool_],
    *,
    m: int,
    exclude_ground_truth: bool,
    depth: int = CURVE_DEPTH,
) -> GradedPerQuery:
    """NCS and SR sums of a chunk of queries for K = 1..``depth``.

    Args:
        relevance: ``[Q, T]`` graded relevance ``N(q, ·)`` (≥ 0).
        retrieved: int64 ``[Q, D]``: each query's ranked target indices, −1 padded. For the
            non-GT variant ``D`` must reach ``depth + |GT(q)|`` (or hold the whole collection).
        ground_truth: bool ``[Q, T]``: ``GT(q)``.
        m: SR's relevant items per query.
        exclude_ground_truth: the non-GT variant (GT removed from both lists).
        depth: the largest cut-off K.
    """
    count, targets = relevance.shape
    values = np.asarray(relevance, dtype=np.float64)
    candidates = ~ground_truth if exclude_ground_truth else np.ones_like(ground_truth)
    rows = np.arange(count)[:, None]
    present = retrieved >= 0
    safe = np.where(present, retrieved, 0)
    kept = present & candidates[rows, safe]
    position = np.cumsum(kept, axis=1)  # 1-based rank among kept items
    gains = np.where(kept, values[rows, safe], 0.0)
    relevant = top_relevant(values, candidates, m)
    is_relevant = np.zeros((count, targets), dtype=bool)
    chosen_rows, chosen_slots = np.nonzero(relevant >= 0)
    is_relevant[chosen_rows, relevant[chosen_rows, chosen_slots]] = True
    hits = kept & is_relevant[rows, safe]
    cuts = np.arange(1, depth + 1)
    within = kept[:, :, None] & (position[:, :, None] <= cuts[None, None, :])  # [Q, D, depth]
    retrieved_gain = np.einsum("qd,qdk->qk", gains, within)
    semantic_hits = np.einsum("qd,qdk->qk", hits.astype(np.int64), within.astype(np.int64))
    take = min(depth, targets)
    best = np.where(candidates, values, 0.0)
    top = -np.sort(-np.partition(best, targets - take, axis=1)[:, targets - take :], axis=1)
    ideal = np.zeros((count, depth), dtype=np.float64)
    ideal[:, :take] = np.cumsum(top, axis=1)
    ideal[:, take:] = ideal[:, take - 1 : take]
    return GradedPerQuery(
        retrieved_gain=retrieved_gain,
        ideal_gain=ideal,
        semantic_hits=semantic_hits,
        relevant=relevant,
        relevant_count=(relevant >= 0).sum(axis=1).astype(np.int64),
    )


def graded_entry(
    with_gt: GradedPerQuery, non_gt: GradedPerQuery, m: int, ks: Sequence[int] = GRADED_KS
) -> dict[str, object]:
    """The NCS / SR keys added to a task's report entry.

    Returns:
        ``NCS@K``, ``NCS_nonGT@K``, ``SR@K``, ``SR_nonGT@K`` for each K, and ``SR_m``.
    """
    entry: dict[str, object] = {}
    for cut in ks:
        entry[f"NCS@{cut}"] = with_gt.ncs(cut)
        entry[f"NCS_nonGT@{cut}"] = non_gt.ncs(cut)
    for cut in ks:
        entry[f"SR@{cut}"] = with_gt.semantic_recall(cut)
        entry[f"SR_nonGT@{cut}"] = non_gt.semantic_recall(cut)
    entry["SR_m"] = m
    return entry


def graded_curves(
    with_gt: GradedPerQuery, non_gt: GradedPerQuery, depth: int = CURVE_DEPTH
) -> dict[str, list[float | None]]:
    """NCS@K and SR@K for K = 1..depth, both variants (for the plots)."""
    cuts = range(1, depth + 1)
    return {
        "NCS": [with_gt.ncs(cut) for cut in cuts],
        "NCS_nonGT": [non_gt.ncs(cut) for cut in cuts],
        "SR": [with_gt.semantic_recall(cut) for cut in cuts],
        "SR_nonGT": [non_gt.semantic_recall(cut) for cut in cuts],
    }
