"""The files each run writes: JSON, Markdown (also printed) and PNG plots."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.report.writers import (
    write_compare_outputs,
    write_load_outputs,
    write_quality_outputs,
)
from benchmarks.runs.compare.run import run_compare
from benchmarks.runs.load.run import LoadRun
from benchmarks.runs.quality.run import QualityRun
from evaluation.metrics.pareto import quality_metrics
from tests.fakes.fake_variants import two_variants
from tests.fakes.tiny_data import TinyDataset
from tests.unit.benchmarks.runs.compare.test_run import config_for


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_a_quality_run_s_files(quality_report: dict[str, Any], tmp_path: Path) -> None:
    run = QualityRun(report=quality_report, latencies_ms={"c1": (1.0, 2.0, 3.0)})  # type: ignore[arg-type]
    written = write_quality_outputs(run, tmp_path / "out")
    assert set(written) == {
        "json",
        "markdown",
        "recall_plot",
        "original_plot",
        "graded_plot",
        "false_negatives_plot",
        "latency_plot",
        "html",
    }
    assert json.loads(written["json"].read_text(encoding="utf-8")) == quality_report
    assert written["markdown"].name == "report.md"
    for kind, path in written.items():
        if kind.endswith("plot"):
            assert path.read_bytes().startswith(b"\x89PNG"), kind


def test_a_load_run_s_files(tmp_path: Path) -> None:
    level = {"p50_ms": 5.0, "p99_ms": 9.0, "qps": 40.0, "warnings": []}
    report = {
        "variant": "toy",
        "bundle_version": "v1",
        "closed": {"c1": level},
        "open": {"r20": {**level, "offered_rps": 20.0}},
        "saturation_qps": 40.0,
    }
    run = LoadRun(report=report, latencies_ms={"c1": [4.0, 5.0], "r20": [5.0]})  # type: ignore[arg-type]
    written = write_load_outputs(run, tmp_path)
    assert {path.name for path in written.values()} == {
        "load.json",
        "load.md",
        "load.png",
        "load_latency.png",
    }


@pytest.mark.slow  # over a second: the fast lane leaves it to `make test`
def test_outputs_hold_the_tables_and_the_plot(tiny: TinyDataset, tmp_path: Path) -> None:
    service = two_variants(tiny)
    run = asyncio.run(run_compare(config_for(tiny), transport=service.transport()))
    written = write_compare_outputs(run, tmp_path / "out")
    assert json.loads(written["json"].read_text(encoding="utf-8")) == json.loads(
        json.dumps(run.report)
    )
    assert written["pareto_plot"].read_bytes().startswith(b"\x89PNG")
    markdown = written["markdown"].read_text(encoding="utf-8")
    full_r1 = quality_metrics(run.report["variants"][0]["tasks"])["t2t R@1"]
    assert "| `full` | fp32 | 8 | CPU | tiny-full@v-full |" in markdown
    assert f"| `full` | {full_r1:.1f} [" in markdown  # the value, then its 95 % interval
    short_p50 = run.report["variants"][1]["latency"]["c1"]["p50_ms"]
    assert f"| `short` | {short_p50:.1f} |" in markdown
    assert "## Against the baseline `full`" in markdown
    assert "interleaved" in markdown
    assert "compare_pareto.png" in markdown
