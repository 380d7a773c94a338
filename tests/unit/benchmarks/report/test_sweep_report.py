"""sweep.md and sweep.png from a sweep report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.report.writers import write_sweep_outputs
from benchmarks.runs.sweep.run import SweepRun


def _point(value: Any, recall: float, p50: float, build: float | None) -> dict[str, Any]:
    return {
        "value": value,
        "recall_at_10": recall,
        "build_recall_at_10": build,
        "p50_ms": p50,
        "p99_ms": p50 * 3,
        "mean_ms": p50 * 1.2,
    }


REPORT: dict[str, Any] = {
    "collection": "coco:captions",
    "variant": "v",
    "bundle": "coco",
    "bundle_version": "1",
    "count": 25000,
    "index_kind": "ivf_flat",
    "factory": "IVF128,Flat",
    "index_device": "cpu",
    "on_disk": True,
    "parameter": "nprobe",
    "default_search_params": {"nprobe": 8},
    "tuning": {"target_recall": 0.95, "recall_at_10": 0.96, "held_out_queries": 1000},
    "queries": 200,
    "query_source": "sampled",
    "recall": "tie-aware",
    "latency": "client-side",
    "exact": _point("exact", 1.0, 4.0, None),
    "points": [
        _point(1, 0.61, 0.9, 0.6),
        _point(8, 0.962, 1.4, 0.96),
        _point(64, 0.999, 3.1, None),
    ],
}


def test_the_table_has_one_row_per_value_after_the_exact_one(tmp_path: Path) -> None:
    written = write_sweep_outputs(SweepRun(report=REPORT), tmp_path)
    assert set(written) == {"json", "markdown", "plot"}
    markdown = written["markdown"].read_text(encoding="utf-8")
    assert "# Crisscross sweep — coco:captions (ivf_flat, IVF128,Flat)" in markdown
    assert ", inverted lists on disk" in markdown
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    assert rows[0] == "| nprobe | recall@10 | build recall@10 | p50 ms | p99 ms | mean ms |"
    assert rows[1] == "| exact | 1.000 | – | 4.00 | 12.00 | 4.80 |"
    assert rows[3] == "| 8 (default) | 0.962 | 0.960 | 1.40 | 4.20 | 1.68 |"
    assert rows[4].startswith("| 64 | 0.999 | – |")
    assert written["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
