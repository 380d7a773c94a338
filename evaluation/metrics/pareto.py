"""Quality against cost across variants: headline quality numbers and Pareto fronts.

A variant's quality comes from its ``tasks`` report entries (:func:`quality_metrics`: R@K and
Spearman's r and BISON accuracy, ×100, higher is better), its cost from a latency level's
``p50_ms`` / ``p99_ms`` (lower is better) or ``qps`` (higher is better). A variant is on the
Pareto front of a (quality, cost) pair when no other is at least as good on both and better on
one (:func:`pareto_front`).

Each headline number also gets a 95 % interval (:func:`quality_intervals`): R@K and BISON
accuracy are means of per-query outcomes whose multiset the entry's counts fix (``R@K × queries``
hits; BISON's right, tied and wrong rows), so their percentile bootstrap over queries
(:func:`evaluation.metrics.bootstrap.bootstrap_mean`) is exact from the report entry alone;
Spearman's ρ gets ``mean ± 1.96 · std`` of the CxC bootstrap
(:func:`evaluation.metrics.bootstrap.normal_interval`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from evaluation.metrics.bootstrap import (
    DEFAULT_LEVEL,
    bootstrap_mean,
    normal_interval,
    outcomes_from_counts,
)
from evaluation.metrics.correlation import DEFAULT_SAMPLES, DEFAULT_SEED

RECALL_CUTS: Final = ("R@1", "R@5", "R@10")


def quality_metrics(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """The headline quality numbers of one variant's ``tasks`` (all ×100, higher is better):
    ``<task> R@1/R@5/R@10`` for retrieval, ``<task> ρ`` (Spearman mean) for correlations,
    ``bison acc`` for BISON. Missing values are left out."""
    metrics: dict[str, float] = {}
    for task, entry in tasks.items():
        for cut in RECALL_CUTS:
            value = entry.get(cut)
            if isinstance(value, int | float):
                metrics[f"{task} {cut}"] = float(value) * 100.0
        rho = entry.get("spearman_mean")
        if isinstance(rho, int | float):
            metrics[f"{task} ρ"] = float(rho)
        accuracy = entry.get("accuracy")
        if task == "bison" and isinstance(accuracy, int | float):
            metrics["bison acc"] = float(accuracy) * 100.0
    return metrics


INTERVAL_METHODS: Final = {
    "R@K": "percentile bootstrap over queries (hit or miss per query)",
    "bison acc": "percentile bootstrap over rows (right 1, tie ½, wrong 0)",
    "ρ": "mean ± 1.96 · std of the CxC Spearman bootstrap",
}
"""How :func:`quality_intervals` gets each kind of headline number's interval."""


def _count(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and value > 0 else None


def quality_intervals(
    tasks: Mapping[str, Mapping[str, Any]],
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    level: float = DEFAULT_LEVEL,
) -> dict[str, tuple[float, float]]:
    """The ``level`` confidence interval of each of :func:`quality_metrics`' numbers (×100, same
    names; see :data:`INTERVAL_METHODS`). A number whose entry lacks its counts (``queries``;
    ``rows`` and ``ties``; ``spearman_std``) gets none."""
    intervals: dict[str, tuple[float, float]] = {}
    for task, entry in tasks.items():
        queries = _count(entry.get("queries"))
        for cut in RECALL_CUTS:
            value = entry.get(cut)
            if isinstance(value, int | float) and queries is not None:
                hits = round(float(value) * queries)
                outcomes = outcomes_from_counts({1.0: hits, 0.0: queries - hits})
                result = bootstrap_mean(outcomes, n_samples, seed, level)
                intervals[f"{task} {cut}"] = result.scaled(100.0)
        rho, std = entry.get("spearman_mean"), entry.get("spearman_std")
        if isinstance(rho, int | float) and isinstance(std, int | float):
            intervals[f"{task} ρ"] = normal_interval(float(rho), float(std), level)
        accuracy, rows, ties = entry.get("accuracy"), _count(entry.get("rows")), entry.get("ties")
        if (
            task == "bison"
            and isinstance(accuracy, int | float)
            and rows is not None
            and isinstance(ties, int)
        ):
            right = round(float(accuracy) * rows - 0.5 * ties)
            outcomes = outcomes_from_counts({1.0: right, 0.5: ties, 0.0: rows - right - ties})
            intervals["bison acc"] = bootstrap_mean(outcomes, n_samples, seed, level).scaled(100.0)
    return intervals


def variant_quality(
    entry: Mapping[str, Any], n_samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED
) -> dict[str, tuple[float, tuple[float, float] | None]]:
    """A compare report variant's headline numbers (×100) → ``(value, 95 % interval or None)``:
    the intervals its ``quality`` block records, else :func:`quality_intervals` of its ``tasks``
    (reports written before the block existed)."""
    tasks = entry.get("tasks") or {}
    recorded = entry.get("quality")
    if isinstance(recorded, Mapping):
        intervals: dict[str, tuple[float, float]] = {}
        for name, item in recorded.items():
            bounds = item.get("ci95") if isinstance(item, Mapping) else None
            if isinstance(bounds, list | tuple) and len(bounds) == 2:
                intervals[str(name)] = (float(bounds[0]), float(bounds[1]))
    else:
        intervals = quality_intervals(tasks, n_samples, seed)
    return {name: (value, intervals.get(name)) for name, value in quality_metrics(tasks).items()}


COST_METRICS: Final = (("p50_ms", False), ("p99_ms", False), ("qps", True))
"""Cost metric of a latency level → whether higher is better."""


def pareto_front(
    points: Mapping[str, tuple[float, float]], *, higher_cost_is_better: bool
) -> list[str]:
    """The names whose (cost, quality) point no other point dominates.

    A point dominates another when it is at least as good on both axes and better on one;
    quality is better when higher, cost when lower (or higher, with ``higher_cost_is_better``,
    for throughput). Returned in ``points``' order.
    """

    def better_or_equal(a: tuple[float, float], b: tuple[float, float]) -> tuple[bool, bool]:
        cost_ok = a[0] >= b[0] if higher_cost_is_better else a[0] <= b[0]
        cost_strict = a[0] > b[0] if higher_cost_is_better else a[0] < b[0]
        return cost_ok and a[1] >= b[1], cost_strict or a[1] > b[1]

    front = []
    for name, point in points.items():
        dominated = False
        for other_name, other in points.items():
            if other_name == name:
                continue
            at_least, strictly = better_or_equal(other, point)
            if at_least and strictly:
                dominated = True
                break
        if not dominated:
            front.append(name)
    return front


def primary_quality(variants: Sequence[Mapping[str, Any]]) -> list[str]:
    """Quality metrics every variant has, headline first: R@1 of each retrieval task, then ρ."""
    shared: list[str] | None = None
    for entry in variants:
        names = list(quality_metrics(entry.get("tasks") or {}))
        shared = names if shared is None else [name for name in shared if name in names]
    return [name for name in shared or [] if name.endswith(("R@1", "ρ", "acc"))]


def pareto_sets(variants: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """For each headline quality metric, cost metric and level every variant has:
    ``"<quality> vs <cost> @<level>"`` → the Pareto-optimal variant names."""
    sets: dict[str, list[str]] = {}
    levels: list[str] | None = None
    for entry in variants:
        names = list((entry.get("latency") or {}).keys())
        levels = names if levels is None else [name for name in levels if name in names]
    for quality in primary_quality(variants):
        for level in levels or []:
            for cost, higher_is_better in COST_METRICS:
                points = {}
                for entry in variants:
                    value = entry["latency"][level].get(cost)
                    if isinstance(value, int | float):
                        points[str(entry["name"])] = (
                            float(value),
                            quality_metrics(entry["tasks"])[quality],
                        )
                if len(points) == len(variants):
                    sets[f"{quality} vs {cost} @{level}"] = pareto_front(
                        points, higher_cost_is_better=higher_is_better
                    )
    return sets
