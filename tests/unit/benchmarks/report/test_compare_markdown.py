"""``compare.md``: variants, quality, cost, the baseline deltas, Pareto sets, skipped tasks."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.report.compare_markdown import PARETO_PLOT, render_compare_markdown


def _variant(name: str, r1: float, p50: float, qps: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "precision": "fp32",
        "dim": 384,
        "providers": ["CPUExecutionProvider"],
        "bundle_versions": {"captions": "v1"},
        "tasks": {"t2t": {"R@1": r1, "R@5": 0.5, "R@10": 0.6}},
        "latency": {"c1": {"p50_ms": p50, "p99_ms": 2 * p50, "qps": qps, "errors": 0}},
        "skipped": {},
        **extra,
    }


def test_tables_of_a_comparison() -> None:
    report = {
        "dataset": "coco-karpathy",
        "split": "val",
        "baseline": "fp32",
        "variants": [
            _variant("fp32", 0.25, 10.0, 100.0),
            _variant("int8", 0.2, 5.0, 200.0, precision="int8", skipped={"sis": "no SIS file"}),
        ],
        "pareto": {"t2t R@1 vs p50_ms @c1": ["fp32", "int8"]},
        "settings": {"tasks": ["t2t"], "latency_k": 10, "concurrency_levels": [1]},
        "latency_schedule": {"mode": "interleaved", "rounds": 3},
    }
    markdown = render_compare_markdown(report)
    assert "| `int8` | int8 | 384 | CPU | captions@v1 |" in markdown
    assert "| `fp32` | 25.0 | 50.0 | 60.0 |" in markdown
    assert "| `int8` | 5.0 | 10.0 | 200.0 | 0 |" in markdown
    assert "| `int8` | -5.0 | ×0.50 | ×2.00 |" in markdown
    assert "| t2t R@1 vs p50_ms | `fp32`, `int8` |" in markdown
    assert "| int8 | sis | no SIS file |" in markdown
    assert f"]({PARETO_PLOT})" in markdown


def test_quality_cells_show_the_recorded_interval_else_one_computed_from_the_counts() -> None:
    recorded = _variant(
        "fp32",
        0.219,
        10.0,
        100.0,
        quality={"t2t R@1": {"value": 21.9, "ci95": [21.1, 22.7]}, "t2t R@5": {"value": 50.0}},
    )
    counted = _variant("int8", 0.217, 5.0, 200.0)
    counted["tasks"]["t2t"]["queries"] = 1000
    report = {
        "baseline": "fp32",
        "variants": [recorded, counted],
        "settings": {"tasks": ["t2t"], "bootstrap_samples": 200, "seed": 0},
    }
    markdown = render_compare_markdown(report)
    assert "| `fp32` | 21.9 [21.1, 22.7] | 50.0 | 60.0 |" in markdown
    assert "95 % interval" in markdown
    # No quality block (an older report): the interval comes from R@K × queries.
    int8_row = next(line for line in markdown.splitlines() if line.startswith("| `int8` | 21.7 ["))
    low, high = (float(part) for part in int8_row.split("[")[1].split("]")[0].split(", "))
    assert low < 21.7 < high
    assert high - low == pytest.approx(5.1, abs=0.6)  # ±1.96 · sqrt(.217 · .783 / 1000)


def _setting(name: str, variant: str, r1: float, p50: float, **levers: Any) -> dict[str, Any]:
    entry = _variant(variant, r1, p50, 1000.0 / p50)
    entry.update(
        name=name,
        variant=variant,
        levers={"variant": variant, **levers},
        modes_answered=[levers.get("mode", "dense")],
    )
    return entry


def _lever_report() -> dict[str, Any]:
    rows = [
        _setting("dense", "minilm", 0.25, 10.0),
        _setting("hybrid", "minilm", 0.3, 14.0, mode="hybrid", fusion="rrf", rrf_k=30),
        _setting("rerank", "minilm-int8", 0.26, 6.0, rerank="minilm", window=50),
    ]
    rows[1]["pair_tasks_from"] = "dense"
    return {
        "dataset": "scenes",
        "split": "test",
        "baseline": "dense",
        "lever_settings": [{"name": row["name"], **row["levers"]} for row in rows],
        "variants": rows,
        "pareto": {"t2t R@1 vs p50_ms @c1": ["hybrid", "rerank"]},
        "settings": {"tasks": ["t2t"], "k": 1000, "latency_k": 10, "concurrency_levels": [1]},
        "latency_schedule": {"mode": "interleaved", "rounds": 3},
    }


def test_a_run_of_lever_settings_has_one_row_per_setting() -> None:
    markdown = render_compare_markdown(_lever_report())
    assert markdown.startswith("# Crisscross lever comparison — scenes test")
    assert "same queries for every setting" in markdown
    lines = markdown.splitlines()
    settings_table = lines[lines.index("## Settings") : lines.index("## Variants")]
    assert "| `dense` | `minilm` | – | 1000 | dense |" in settings_table
    assert (
        "| `hybrid` | `minilm` | mode hybrid, fusion rrf (k 30), window 100 (default) | 100 "
        "| hybrid |" in settings_table
    )
    assert "| `rerank` | `minilm-int8` | rerank minilm, window 50 | 50 | dense |" in settings_table
    assert any("`hybrid` takes `dense`'s" in line for line in settings_table)
    # one row per variant the settings use, in order of first use
    variants = lines[lines.index("## Variants") :]
    assert [line.split(" | ")[0] for line in variants[4:6]] == ["| `minilm`", "| `minilm-int8`"]
    assert not variants[6].startswith("| `")
    for header in ("| setting | t2t R@1 |", "| setting | c1 p50 ms |", "| setting | Δ t2t R@1 |"):
        assert header in markdown
    # settings, quality, cost tables; and the baseline deltas but for the baseline itself
    for name, tables in (("dense", 3), ("hybrid", 4), ("rerank", 4)):
        assert sum(line.startswith(f"| `{name}` |") for line in lines) == tables
    assert "| `hybrid` | +5.0 | ×1.40 | ×0.71 |" in markdown
    assert "## Pareto-optimal settings" in markdown
    assert "| t2t R@1 vs p50_ms | `hybrid`, `rerank` |" in markdown
    assert "Warning" not in markdown


def test_a_mode_the_service_did_not_answer_in_is_called_out() -> None:
    report = _lever_report()
    report["variants"][1]["modes_answered"] = ["dense"]
    markdown = render_compare_markdown(report)
    assert "**Warning:** `hybrid` asked for mode hybrid; the service answered in dense." in markdown
