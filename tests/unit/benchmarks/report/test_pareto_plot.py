"""Quality against cost, one point per variant and level."""

from __future__ import annotations

from pathlib import Path

from benchmarks.report.pareto_plot import plot_pareto


def test_the_pareto_plot(tmp_path: Path) -> None:
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
