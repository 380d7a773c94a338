"""``sweep.md``: recall@10 against exact search and latency per value of an index's search
parameter, one table (:mod:`benchmarks.runs.sweep.run`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

SWEEP_PLOT: Final = "sweep.png"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{float(value):.2f}"


def _recall(value: Any) -> str:
    return "–" if value is None else f"{float(value):.3f}"


def render_sweep_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown of ``sweep.json``: what was measured, and one row per value (the exact
    search first)."""
    parameter = report["parameter"]
    defaults = report.get("default_search_params") or {}
    tuning = report.get("tuning") or {}
    disk = ", inverted lists on disk" if report.get("on_disk") else ""
    lines = [
        f"# Crisscross sweep — {report['collection']} ({report['index_kind']}, "
        f"{report['factory']})",
        "",
        f"- bundle {report.get('bundle')} @ {report.get('bundle_version')}, variant "
        f"{report.get('variant')}, {report['count']} items, searched on "
        f"{report.get('index_device')}{disk}",
        f"- default {parameter}: {defaults.get(parameter, '–')}"
        + (
            f" (build: target recall {tuning.get('target_recall')}, measured "
            f"{tuning.get('recall_at_10')} on {tuning.get('held_out_queries')} held-out queries)"
            if tuning
            else ""
        ),
        f"- queries: {report['queries']} — {report['query_source']}",
        f"- recall: {report['recall']}",
        f"- latency: {report['latency']}",
        "",
        f"| {parameter} | recall@10 | build recall@10 | p50 ms | p99 ms | mean ms |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for point in [report["exact"], *report["points"]]:
        value = point["value"]
        marker = " (default)" if value == defaults.get(parameter) else ""
        lines.append(
            f"| {value}{marker} | {_recall(point['recall_at_10'])} | "
            f"{_recall(point.get('build_recall_at_10'))} | {_ms(point['p50_ms'])} | "
            f"{_ms(point['p99_ms'])} | {_ms(point['mean_ms'])} |"
        )
    lines += ["", f"![recall against p50 latency]({SWEEP_PLOT})", ""]
    return "\n".join(lines)
