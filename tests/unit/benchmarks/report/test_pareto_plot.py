"""Quality against cost, one point per variant and level, with 95 % intervals."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
from matplotlib.axes import Axes
from matplotlib.container import ErrorbarContainer
from matplotlib.figure import Figure

from benchmarks.report.pareto_plot import (
    MAX_TICKS,
    MIN_SPAN,
    build_pareto_figure,
    log_limits,
    log_ticks,
    plot_pareto,
    quality_limits,
    row_colours,
)
from evaluation.metrics.pareto import quality_intervals, quality_metrics


def _variant(name: str, r1: float, p50: float, queries: int = 2000) -> dict[str, Any]:
    tasks = {"t2t": {"R@1": r1, "R@5": 0.4, "R@10": 0.5, "queries": queries}}
    intervals = quality_intervals(tasks, n_samples=200, seed=0)
    return {
        "name": name,
        "tasks": tasks,
        "quality": {
            metric: {"value": value, "ci95": list(intervals[metric])}
            for metric, value in quality_metrics(tasks).items()
        },
        "latency": {
            "c1": {"p50_ms": p50, "p99_ms": 1.9 * p50, "qps": 1000 / p50},
            "c8": {"p50_ms": 3.1 * p50, "p99_ms": 7.3 * p50, "qps": 2600 / p50},
        },
    }


def _close_variants() -> dict[str, Any]:
    """fp32 and int8 0.2 points apart, well inside their intervals (about ±1.8 points)."""
    return {
        "variants": [_variant("fp32", 0.219, 6.1), _variant("int8", 0.217, 4.3)],
        "settings": {"bootstrap_samples": 200, "seed": 0},
    }


def _drawn(figure: Figure) -> list[Axes]:
    figure.canvas.draw()
    return list(figure.axes)


def test_the_pareto_plot_is_written(tmp_path: Path) -> None:
    variants = [
        {
            "name": name,
            "tasks": {"t2t": {"R@1": r1}},
            "latency": {"c1": {"p50_ms": p50, "p99_ms": 2 * p50, "qps": 1000 / p50}},
        }
        for name, r1, p50 in (("a", 0.3, 10.0), ("b", 0.2, 5.0), ("c", 0.1, 20.0))
    ]
    path = plot_pareto({"variants": variants}, tmp_path / "p.png", "pareto")
    assert path.read_bytes().startswith(b"\x89PNG")
    path = plot_pareto(_close_variants(), tmp_path / "close.png", "close")
    assert path.read_bytes().startswith(b"\x89PNG")


def test_the_y_axis_does_not_zoom_inside_the_intervals() -> None:
    report = _close_variants()
    axes = _drawn(build_pareto_figure(report, "close"))
    assert len(axes) == 3  # one quality row, three costs
    bounds = [
        bound for entry in report["variants"] for bound in entry["quality"]["t2t R@1"]["ci95"]
    ]
    for one in axes:
        low, high = one.get_ylim()
        assert low < min(bounds)
        assert high > max(bounds)
        assert high - low >= MIN_SPAN
        # Each variant at each level: one point with a y error bar.
        bars = [c for c in one.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == 4
        assert all(bar.has_yerr for bar in bars)
    assert "95 % CI" in axes[0].get_ylabel()


def test_x_tick_labels_do_not_overlap() -> None:
    report = _close_variants()
    # A wide latency range too: many decades.
    report["variants"].append(_variant("slow", 0.1, 900.0))
    for figure in (
        build_pareto_figure(_close_variants(), "close"),
        build_pareto_figure(report, "w"),
    ):
        for axes in _drawn(figure):
            labels = [
                label
                for label in axes.get_xticklabels()
                if label.get_visible() and label.get_text()
            ]
            if axes.get_subplotspec().is_last_row():
                assert len(labels) >= 2
            boxes = [label.get_window_extent() for label in labels]
            for one, other in itertools.combinations(boxes, 2):
                assert not one.overlaps(other), [label.get_text() for label in labels]
            assert all(label.get_fontsize() >= 9 for label in labels)


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        (3.6, 22.0, [5.0, 10.0, 20.0]),
        (0.5, 2000.0, [1.0, 10.0, 100.0, 1000.0]),
        (6.0, 18.0, [6.0, 7.0, 8.0, 9.0, 10.0]),
        (0.02, 0.09, [0.02, 0.03, 0.05, 0.07]),
    ],
)
def test_log_ticks(low: float, high: float, expected: list[float]) -> None:
    ticks = log_ticks(low, high)
    assert 2 <= len(ticks) <= MAX_TICKS
    assert all(low <= tick <= high for tick in ticks)
    assert ticks == expected


def test_log_limits_widen_a_narrow_range() -> None:
    low, high = log_limits([6.1, 6.3])
    assert high / low == pytest.approx(3.0)
    assert low < 6.1
    assert high > 6.3
    assert len(log_ticks(low, high)) >= 2
    assert log_limits([1.0, 100.0]) == pytest.approx((1 / 1.2, 120.0))


def test_quality_limits() -> None:
    low, high = quality_limits([(21.9, (21.4, 22.4)), (21.7, (21.2, 22.2))])
    assert high - low == pytest.approx(MIN_SPAN)
    assert (low + high) / 2 == pytest.approx(21.8)
    # Wide intervals: all of them, padded.
    low, high = quality_limits([(50.0, (30.0, 70.0)), (40.0, None)])
    assert low < 30.0
    assert high > 70.0
    # Never below 0 for a share near 0 (the span is kept).
    assert quality_limits([(0.5, (0.0, 1.0))]) == (0.0, MIN_SPAN)
    assert quality_limits([(99.5, (99.0, 100.0))]) == (100.0 - MIN_SPAN, 100.0)


def test_a_run_of_lever_settings_has_one_point_per_setting_and_level() -> None:
    names = [f"s{index}" for index in range(12)]
    rows = [_variant(name, 0.2 + 0.01 * index, 4.0 + index) for index, name in enumerate(names)]
    report = {
        "lever_settings": [{"name": name} for name in names],
        "variants": rows,
        "settings": {"bootstrap_samples": 200, "seed": 0},
    }
    figure = build_pareto_figure(report, "levers")
    for axes in _drawn(figure):
        bars = [c for c in axes.containers if isinstance(c, ErrorbarContainer)]
        assert len(bars) == len(names) * 2  # two latency levels
        colours = {tuple(bar.lines[0].get_color()) for bar in bars}
        assert len(colours) == len(names)  # past the ten of the default cycle
    (legend,) = figure.legends
    assert legend.get_title().get_text().startswith("colour: setting,")
    labels = [text.get_text() for text in legend.get_texts()]
    assert labels == [*names, "concurrency 1", "concurrency 8"]


def test_row_colours() -> None:
    assert row_colours(["a", "b"]) == {"a": "C0", "b": "C1"}
    many = row_colours([str(index) for index in range(21)])
    assert len(set(many.values())) == 20  # tab20, then around again
    assert many["0"] == many["20"]
