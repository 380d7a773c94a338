"""Retrieval metrics with the project's tie rule: R@K, median rank, the R@K curve, ranks.

Inputs are ranked id lists as the service returns them — already ordered by the tie rule of
``docs/contracts.md`` (score descending, then collection row ascending) — and each query's set of
positives. Everything here is generic over the task (t2t, i2t, t2i, i2i, ...).

Censoring. The harness asks the service for the top ``k`` results only (default 1000, the
service's ``max_k``). A query whose first positive is not among them has rank "> k", recorded as
``None``. R@K for K ≤ k is exact regardless. The median rank is exact when the middle order
statistic(s) are ≤ k; otherwise it is only known to exceed k and is reported as ``None`` with
``median_rank_censored = True`` (never silently clipped to k). For an even number of queries the
median is the mean of the two middle ranks (numpy's convention), so it may end in ``.5``.

:func:`rank_by_scores` is the in-memory twin of the service's ranking: it ranks a full score
matrix with the same tie rule (a stable sort of ``-score`` over row order). Tests and the
independent check script use it as the oracle. :func:`first_positive_ranks` gives, under the same
rule and without sorting, the rank of each query's first positive straight from a score matrix
and a positives mask (what the trainer's in-memory checks need).

Pure: this package imports only the standard library, numpy, scipy and :mod:`formats`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

DEFAULT_KS: tuple[int, ...] = (1, 5, 10)


@dataclass(frozen=True)
class RetrievalMetrics:
    """Metrics of one retrieval task.

    Attributes:
        recall_at: K → share of queries (0–1) with a positive in the top K, for the requested Ks.
        median_rank: median over queries of the 1-based rank of the first positive; ``None`` when
            censored (the median lies beyond ``k``).
        median_rank_censored: whether the median rank lies beyond ``k``.
        queries: number of queries used (queries without positives are skipped).
        k: how many results were asked for per query (the censoring depth).
        curve: R@K for K = 1..k, fractions in 0–1 (``curve[K - 1]`` is R@K).
    """

    recall_at: Mapping[int, float]
    median_rank: float | None
    median_rank_censored: bool
    queries: int
    k: int
    curve: tuple[float, ...]

    def as_report(self) -> dict[str, object]:
        """The task's ``report.json`` entry: ``R@K`` keys, median rank, censoring flag, counts."""
        entry: dict[str, object] = {f"R@{cut}": value for cut, value in self.recall_at.items()}
        entry["median_rank"] = self.median_rank
        entry["median_rank_censored"] = self.median_rank_censored
        entry["queries"] = self.queries
        entry["k"] = self.k
        return entry


def first_positive_rank(ranked_ids: Sequence[str], positives: Collection[str]) -> int | None:
    """The 1-based rank of the first positive in ``ranked_ids``; ``None`` if there is none."""
    for rank, item in enumerate(ranked_ids, start=1):
        if item in positives:
            return rank
    return None


def first_positive_ranks(
    scores: npt.NDArray[np.floating], positives: npt.NDArray[np.bool_]
) -> npt.NDArray[np.int64]:
    """1-based rank of the best-placed positive of each query row, under the tie rule.

    Args:
        scores: ``[q, n]`` similarity scores (higher is better); an excluded candidate can be
            given ``-inf`` (it then ranks after every finite score and is no positive).
        positives: bool ``[q, n]``; every row needs at least one positive.

    Returns:
        int64 ``[q]``: 1 + the number of columns scoring above the best positive score ``s*`` +
        the number of columns scoring exactly ``s*`` that come before the first positive scoring
        ``s*`` — the position :func:`rank_by_scores` would give it (score descending, then
        column ascending).

    Raises:
        ValueError: the shapes differ or are not 2-D, or a row has no positive.
    """
    if scores.shape != positives.shape or scores.ndim != 2:
        raise ValueError(
            f"need two [q, n] arrays of one shape, got {scores.shape}, {positives.shape}"
        )
    if not positives.any(axis=1).all():
        raise ValueError("every query needs at least one positive")
    best = np.where(positives, scores, -np.inf).max(axis=1, keepdims=True)
    at_best = scores == best
    first_best_positive = np.argmax(positives & at_best, axis=1)[:, None]
    columns = np.arange(scores.shape[1])[None, :]
    above = (scores > best).sum(axis=1)
    tied_before = (at_best & (columns < first_best_positive)).sum(axis=1)
    ranks: npt.NDArray[np.int64] = (1 + above + tied_before).astype(np.int64)
    return ranks


def median_rank(first_ranks: Sequence[int | None]) -> tuple[float | None, bool]:
    """Median of first-positive ranks where ``None`` means "beyond the returned list".

    Returns:
        ``(median, censored)``: ``(value, False)`` when the middle order statistic(s) are known;
        ``(None, True)`` when the median lies beyond the list; ``(None, False)`` for no ranks.
    """
    count = len(first_ranks)
    if count == 0:
        return None, False
    known = sorted(rank for rank in first_ranks if rank is not None)
    middle = [(count - 1) // 2, count // 2]
    if middle[1] >= len(known):
        return None, True
    return (known[middle[0]] + known[middle[1]]) / 2.0, False


def retrieval_metrics(
    first_ranks: Sequence[int | None], k: int, ks: Sequence[int] = DEFAULT_KS
) -> RetrievalMetrics:
    """R@K, median rank and the R@K curve from each query's first-positive rank.

    Args:
        first_ranks: one entry per query used: the 1-based rank (1..k) of its first positive, or
            ``None`` when no positive was in its top ``k``.
        k: the number of results asked for per query.
        ks: the cut-offs to report; each must be in 1..k.

    Raises:
        ValueError: no queries, a cut-off outside 1..k, or a rank outside 1..k.
    """
    if not first_ranks:
        raise ValueError("no queries: every query lacked positives, or none were given")
    if k < 1 or any(cut < 1 or cut > k for cut in ks):
        raise ValueError(f"cut-offs {list(ks)} must lie in 1..k (k={k})")
    known = np.array([rank for rank in first_ranks if rank is not None], dtype=np.int64)
    if known.size and (known.min() < 1 or known.max() > k):
        raise ValueError(f"ranks must lie in 1..{k}; got {known.min()}..{known.max()}")
    total = len(first_ranks)
    hits_at = np.cumsum(np.bincount(known, minlength=k + 1)[1:])
    recall_at = {cut: int(hits_at[cut - 1]) / total for cut in ks}
    median, censored = median_rank(first_ranks)
    return RetrievalMetrics(
        recall_at=recall_at,
        median_rank=median,
        median_rank_censored=censored,
        queries=total,
        k=k,
        curve=tuple(int(hits) / total for hits in hits_at),
    )


def evaluate_rankings(
    rankings: Mapping[str, Sequence[str]],
    positives: Mapping[str, Collection[str]],
    k: int,
    ks: Sequence[int] = DEFAULT_KS,
) -> RetrievalMetrics:
    """Metrics from full ranked lists: each query's list is cut to its top ``k``.

    Args:
        rankings: query id → ranked target ids (tie rule already applied).
        positives: query id → positive target ids. Queries with an empty set are skipped; queries
            absent here are not evaluated.
        k: the censoring depth.
        ks: the R@K cut-offs.

    Raises:
        KeyError: a query with positives has no ranking.
    """
    first_ranks = [
        first_positive_rank(rankings[query][:k], wanted)
        for query, wanted in positives.items()
        if wanted
    ]
    return retrieval_metrics(first_ranks, k, ks)


def rank_by_scores(
    scores: npt.NDArray[np.floating],
    item_ids: Sequence[str],
    k: int,
    exclude: Sequence[Collection[str]] | None = None,
) -> list[list[str]]:
    """Rank a full score matrix with the service's tie rule (in memory, for tests and checks).

    Args:
        scores: ``[n_queries, n_items]`` similarity scores; higher is better.
        item_ids: ``n_items`` target ids in collection row order.
        k: how many results to keep per query (fewer when the collection is smaller).
        exclude: per query, target ids removed from its ranking (e.g. the query itself).

    Returns:
        Per query, the top-``k`` ids ordered by score descending, then row ascending (a stable
        sort of ``-score`` over row order).
    """
    matrix = np.asarray(scores)
    if matrix.ndim != 2 or matrix.shape[1] != len(item_ids):
        raise ValueError(f"scores must be [n_queries, {len(item_ids)}]; got {matrix.shape}")
    if exclude is not None and len(exclude) != matrix.shape[0]:
        raise ValueError("exclude must hold one collection of ids per query")
    row_of = {item: row for row, item in enumerate(item_ids)}
    ranked: list[list[str]] = []
    for query_index in range(matrix.shape[0]):
        order = np.argsort(-matrix[query_index], kind="stable")
        if exclude is not None and exclude[query_index]:
            rows = [row_of[item] for item in exclude[query_index] if item in row_of]
            order = order[~np.isin(order, rows)]
        ranked.append([item_ids[row] for row in order[:k]])
    return ranked
