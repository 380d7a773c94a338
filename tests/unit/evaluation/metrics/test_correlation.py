"""Spearman's r and the CxC bootstrap against straightforward oracles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evaluation.metrics.correlation import bootstrap_samples, bootstrap_spearman, spearman


def _rated_pairs(seed: int = 5) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Query items with 1–4 rated partners each; human scores with ties; noisy model scores."""
    rng = np.random.default_rng(seed)
    items: list[str] = []
    for index in range(41):
        items += [f"q{index}"] * int(rng.integers(1, 5))
    order = rng.permutation(len(items))  # query items interleaved, as in a real file
    items = [items[position] for position in order]
    human = np.round(rng.uniform(0, 5, len(items)) * 2) / 2  # many ties
    model = human / 5 + rng.normal(0, 0.3, len(items))
    return items, model, human


def _oracle_bootstrap(
    items: list[str], model: np.ndarray, human: np.ndarray, n_samples: int, seed: int
) -> tuple[float, float]:
    """The bootstrap as a plain loop: same random stream, scipy's Spearman."""
    rng = np.random.default_rng(seed)
    distinct = list(dict.fromkeys(items))
    rows_of = {item: [row for row, value in enumerate(items) if value == item] for item in distinct}
    values = []
    for _ in range(n_samples):
        chosen = rng.choice(len(distinct), size=len(distinct) // 2, replace=False)
        uniforms = rng.random(len(chosen))
        picked = []
        for choice, uniform in zip(chosen, uniforms, strict=True):
            rows = rows_of[distinct[choice]]
            picked.append(rows[math.floor(uniform * len(rows))])
        values.append(stats.spearmanr(model[picked], human[picked]).statistic)
    return float(np.mean(values) * 100), float(np.std(values, ddof=1) * 100)


def test_spearman_matches_scipy_with_ties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 5, 30).astype(float)
        y = x + rng.integers(0, 3, 30)
        assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y).statistic, abs=1e-12)
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)


def test_spearman_undefined_cases_are_nan_without_warning() -> None:
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))
    assert math.isnan(spearman([1], [2]))
    with pytest.raises(ValueError, match="1-D"):
        spearman([1, 2], [1, 2, 3])


def test_bootstrap_matches_loop_oracle() -> None:
    items, model, human = _rated_pairs()
    result = bootstrap_spearman(items, model, human, n_samples=200, seed=11)
    mean, std = _oracle_bootstrap(items, model, human, 200, 11)
    assert result.mean == pytest.approx(mean, abs=1e-9)
    assert result.std == pytest.approx(std, abs=1e-9)
    assert result.samples == 200
    assert result.pairs == len(items)
    assert result.query_items == 41
    assert result.sample_size == 20
    assert result.seed == 11
    assert result.undefined_samples == 0


def test_same_seed_same_result_other_seed_differs() -> None:
    items, model, human = _rated_pairs()
    first = bootstrap_spearman(items, model, human, n_samples=100, seed=0)
    again = bootstrap_spearman(items, model, human, n_samples=100, seed=0)
    other = bootstrap_spearman(items, model, human, n_samples=100, seed=1)
    assert first == again
    assert first.mean != other.mean


def test_each_sample_takes_half_the_query_items_and_one_partner_each() -> None:
    items, _, _ = _rated_pairs()
    seen_rows: set[int] = set()
    samples = list(bootstrap_samples(items, n_samples=500, seed=3))
    assert len(samples) == 500
    for rows in samples:
        chosen_items = [items[row] for row in rows]
        assert len(rows) == 41 // 2
        assert len(set(chosen_items)) == len(chosen_items)  # one partner per query item
        seen_rows.update(int(row) for row in rows)
    assert seen_rows == set(range(len(items)))  # every rated partner can be drawn


def test_report_keys_and_scale() -> None:
    items, model, human = _rated_pairs()
    report = bootstrap_spearman(items, model, human, n_samples=50).as_report()
    assert set(report) == {
        "spearman_mean",
        "spearman_std",
        "samples",
        "pairs",
        "query_items",
        "seed",
    }
    assert isinstance(report["spearman_mean"], float)
    assert 1.0 < report["spearman_mean"] <= 100.0  # ×100


def test_bootstrap_refuses_too_few_items_and_bad_shapes() -> None:
    with pytest.raises(ValueError, match="at least 4"):
        bootstrap_spearman(["a", "b", "c"], [1, 2, 3], [1, 2, 3], n_samples=2)
    with pytest.raises(ValueError, match="one model and one human"):
        bootstrap_spearman(["a", "b"], [1, 2, 3], [1, 2], n_samples=2)


def test_constant_samples_are_counted_not_averaged() -> None:
    items = ["a", "b", "c", "d", "e", "f"]
    result = bootstrap_spearman(items, [1, 1, 1, 1, 1, 1], [0, 1, 2, 3, 4, 5], n_samples=5)
    assert result.mean is None
    assert result.std is None
    assert result.undefined_samples == 5
