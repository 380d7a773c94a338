"""Spearman's r between model and human scores with the CxC paper's bootstrap (DESIGN §7).

The CxC correlation tasks (STS, SIS, SITS) compare the service's pair scores with CxC's
aggregated human ratings. The paper's bootstrap, reproduced here:

- a *query item* is a distinct value of the rating file's first column (``caption1``,
  ``image1``, ``caption``); its *rated partners* are the rows that carry it in that column;
- each of ``n_samples`` (default 1,000) samples picks ``floor(n_query_items / 2)`` query items
  uniformly without replacement and, for each, one of its rated rows uniformly at random;
- Spearman's r (average ranks for ties) between model and human scores over those pairs;
- the report gives the mean and standard deviation (``ddof=1``) over samples, both ×100.

The random stream is ``numpy.random.default_rng(seed)``; per sample it draws
``rng.choice(n_query_items, half, replace=False)`` then ``rng.random(half)`` (partner ``j`` of a
query item with ``m`` rows is ``floor(u * m)``), so a fixed seed gives the same result everywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.stats import rankdata

DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 0


@dataclass(frozen=True)
class BootstrapSpearman:
    """Result of the bootstrap.

    Attributes:
        mean: mean Spearman's r over samples, ×100; ``None`` when no sample was defined.
        std: standard deviation (``ddof=1``) of Spearman's r over samples, ×100.
        samples: number of bootstrap samples drawn.
        pairs: number of rated pairs available.
        query_items: number of distinct query items (first-column values).
        sample_size: query items (= pairs) per sample, ``floor(query_items / 2)``.
        seed: the seed of the random stream.
        undefined_samples: samples whose Spearman's r was undefined (a constant side); they are
            left out of the mean and std.
    """

    mean: float | None
    std: float | None
    samples: int
    pairs: int
    query_items: int
    sample_size: int
    seed: int
    undefined_samples: int

    def as_report(self) -> dict[str, object]:
        """The task's ``report.json`` entry (``spearman_mean`` and ``spearman_std`` are ×100)."""
        return {
            "spearman_mean": self.mean,
            "spearman_std": self.std,
            "samples": self.samples,
            "pairs": self.pairs,
            "query_items": self.query_items,
            "seed": self.seed,
        }


def spearman(x: npt.ArrayLike, y: npt.ArrayLike) -> float:
    """Spearman's r of two equal-length 1-D samples (Pearson's r of their average ranks).

    Returns:
        r in [-1, 1], or ``nan`` when fewer than two values or either side is constant.
    """
    left = np.asarray(x, dtype=np.float64)
    right = np.asarray(y, dtype=np.float64)
    if left.shape != right.shape or left.ndim != 1:
        raise ValueError(f"need two 1-D samples of one length; got {left.shape}, {right.shape}")
    if left.size < 2 or np.ptp(left) == 0 or np.ptp(right) == 0:
        return float("nan")
    left_ranks = np.asarray(rankdata(left), dtype=np.float64)
    right_ranks = np.asarray(rankdata(right), dtype=np.float64)
    left_ranks -= left_ranks.mean()
    right_ranks -= right_ranks.mean()
    denominator = np.sqrt(np.dot(left_ranks, left_ranks) * np.dot(right_ranks, right_ranks))
    return float(np.clip(np.dot(left_ranks, right_ranks) / denominator, -1.0, 1.0))


@dataclass(frozen=True)
class _Groups:
    order: npt.NDArray[np.int64]  # pair indices grouped by query item
    starts: npt.NDArray[np.int64]  # first position in ``order`` of each query item's rows
    counts: npt.NDArray[np.int64]  # rows per query item


def _group_by_query_item(query_items: Sequence[str]) -> _Groups:
    """Group pair indices by query item, items in order of first appearance."""
    code_of: dict[str, int] = {}
    codes = np.fromiter(
        (code_of.setdefault(item, len(code_of)) for item in query_items),
        dtype=np.int64,
        count=len(query_items),
    )
    order = np.argsort(codes, kind="stable").astype(np.int64)
    counts = np.bincount(codes, minlength=len(code_of)).astype(np.int64)
    starts = (np.cumsum(counts) - counts).astype(np.int64)
    return _Groups(order=order, starts=starts, counts=counts)


def bootstrap_samples(
    query_items: Sequence[str], n_samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED
) -> Iterator[npt.NDArray[np.int64]]:
    """The pair indices of each bootstrap sample.

    Args:
        query_items: per rated pair (in file order), its query item (first-column value).
        n_samples: number of samples.
        seed: seed of ``numpy.random.default_rng``.

    Yields:
        ``n_samples`` arrays of ``floor(n_query_items / 2)`` pair indices: one pair for each of
        that many distinct query items.

    Raises:
        ValueError: fewer than four query items (a sample would hold under two pairs).
    """
    groups = _group_by_query_item(query_items)
    n_items = groups.counts.size
    half = n_items // 2
    if half < 2:
        raise ValueError(f"need at least 4 query items for the bootstrap; got {n_items}")
    rng = np.random.default_rng(seed)
    for _ in range(n_samples):
        chosen = rng.choice(n_items, size=half, replace=False)
        offsets = np.floor(rng.random(half) * groups.counts[chosen]).astype(np.int64)
        yield groups.order[groups.starts[chosen] + offsets]


def bootstrap_spearman(
    query_items: Sequence[str],
    model_scores: npt.ArrayLike,
    human_scores: npt.ArrayLike,
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
) -> BootstrapSpearman:
    """The CxC bootstrap of Spearman's r between model and human scores.

    Args:
        query_items: per rated pair, its query item (the rating file's first column).
        model_scores: per rated pair, the service's similarity score.
        human_scores: per rated pair, CxC's ``agg_score`` (0–5).
        n_samples: number of bootstrap samples (the paper uses 1,000).
        seed: seed of the random stream.
    """
    model = np.asarray(model_scores, dtype=np.float64)
    human = np.asarray(human_scores, dtype=np.float64)
    if not (model.shape == human.shape == (len(query_items),)):
        raise ValueError(
            f"need one model and one human score per pair; got {model.shape}, {human.shape} "
            f"for {len(query_items)} pairs"
        )
    values = np.array(
        [
            spearman(model[indices], human[indices])
            for indices in bootstrap_samples(query_items, n_samples, seed)
        ],
        dtype=np.float64,
    )
    defined = values[np.isfinite(values)]
    mean = float(defined.mean()) * 100.0 if defined.size else None
    std = float(defined.std(ddof=1)) * 100.0 if defined.size > 1 else None
    query_item_count = len(set(query_items))
    return BootstrapSpearman(
        mean=mean,
        std=std,
        samples=n_samples,
        pairs=len(query_items),
        query_items=query_item_count,
        sample_size=query_item_count // 2,
        seed=seed,
        undefined_samples=int(values.size - defined.size),
    )
