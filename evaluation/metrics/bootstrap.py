"""Confidence intervals of a mean over queries: the percentile bootstrap, and its normal twin.

A headline number such as R@1 or BISON accuracy is the mean of one value per query (``1`` when
the query's first positive is within the top K, else ``0``; ``1`` / ``½`` / ``0`` per BISON
row). :func:`bootstrap_mean` resamples the queries with replacement ``n_samples`` times and takes
the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the resampled means (the percentile
interval; 95 %, 1,000 samples by default, as the CxC Spearman bootstrap of
:mod:`evaluation.metrics.correlation`).

Drawing ``n`` queries with replacement from ``n`` values is the same as drawing how many times
each *distinct* value is picked from a multinomial with the values' shares, so the resampled
means come from ``numpy.random.default_rng(seed).multinomial(n, shares, size=n_samples)`` over
the distinct values (sorted): exact, and cheap for 0/1 outcomes however many queries there are.
A fixed seed gives the same interval everywhere.

:func:`normal_interval` is the interval ``mean ± z · std`` of a bootstrap that only reports its
mean and standard deviation (the CxC Spearman bootstrap).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Final

import numpy as np
import numpy.typing as npt

from evaluation.metrics.correlation import DEFAULT_SAMPLES, DEFAULT_SEED

DEFAULT_LEVEL: Final = 0.95


@dataclass(frozen=True)
class BootstrapInterval:
    """A percentile bootstrap interval of a mean.

    Attributes:
        estimate: the mean of the values (the point estimate).
        low: the lower bound (never above ``estimate``).
        high: the upper bound (never below ``estimate``).
        level: the coverage, e.g. ``0.95``.
        samples: bootstrap samples drawn.
        n: values (queries) resampled.
        seed: the seed of the random stream.
    """

    estimate: float
    low: float
    high: float
    level: float
    samples: int
    n: int
    seed: int

    def scaled(self, factor: float) -> tuple[float, float]:
        """``(low, high)`` times ``factor`` (e.g. ``100`` for a share shown ×100)."""
        return self.low * factor, self.high * factor


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"the confidence level must lie in (0, 1); got {level}")


def bootstrap_mean(
    values: npt.ArrayLike,
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> BootstrapInterval:
    """The percentile bootstrap interval of the mean of per-query ``values``.

    Args:
        values: one value per query (e.g. 0/1 outcomes), 1-D.
        n_samples: bootstrap samples (resamplings of all the queries).
        seed: seed of ``numpy.random.default_rng``.
        level: the coverage of the interval.

    Returns:
        The mean and its interval; the bounds are widened to the mean if the quantiles miss it
        (possible only for a handful of queries), and coincide with it for constant values.

    Raises:
        ValueError: no values, not 1-D, a non-finite value, ``n_samples < 1`` or a level
            outside (0, 1).
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"need a non-empty 1-D array of per-query values; got {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError("per-query values must be finite")
    if n_samples < 1:
        raise ValueError(f"need at least one bootstrap sample; got {n_samples}")
    _check_level(level)
    distinct, counts = np.unique(array, return_counts=True)
    total = int(array.size)
    estimate = float(counts @ distinct) / total
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(total, counts / total, size=n_samples)
    means = (draws @ distinct) / total
    tail = (1.0 - level) / 2.0
    low, high = (float(bound) for bound in np.quantile(means, [tail, 1.0 - tail]))
    return BootstrapInterval(
        estimate=estimate,
        low=min(low, estimate),
        high=max(high, estimate),
        level=level,
        samples=n_samples,
        n=total,
        seed=seed,
    )


def outcomes_from_counts(counts: dict[float, int]) -> npt.NDArray[np.float64]:
    """Per-query values from how many queries had each value (``{1.0: hits, 0.0: misses}``):
    the bootstrap of a mean needs only this multiset, not the queries' order."""
    if any(count < 0 for count in counts.values()):
        raise ValueError(f"counts must be ≥ 0; got {counts}")
    return np.repeat(
        np.array(list(counts), dtype=np.float64), np.array(list(counts.values()), dtype=np.int64)
    )


def normal_interval(mean: float, std: float, level: float = DEFAULT_LEVEL) -> tuple[float, float]:
    """``mean ± z · std`` with ``z`` the standard normal's ``(1 + level) / 2`` quantile (1.96 for
    95 %): the interval of a bootstrap known only by its mean and standard deviation."""
    _check_level(level)
    if std < 0:
        raise ValueError(f"a standard deviation is ≥ 0; got {std}")
    half = NormalDist().inv_cdf((1.0 + level) / 2.0) * std
    return mean - half, mean + half
