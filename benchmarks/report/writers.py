"""The files each run writes into its ``--out`` folder: its JSON report, its Markdown and its
PNG plots. Each writer returns output kind → file written (the command line logs them and
prints the Markdown)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.report.compare_html import COMPARE_QUERIES_JSON, write_compare_html
from benchmarks.report.compare_markdown import PARETO_PLOT, render_compare_markdown
from benchmarks.report.hostile_markdown import HOSTILE_PLOT, render_hostile_markdown
from benchmarks.report.hostile_plot import plot_hostile
from benchmarks.report.html_report import QUERIES_JSON, write_quality_html
from benchmarks.report.json_file import write_json
from benchmarks.report.latency_plots import plot_latency, plot_load
from benchmarks.report.load_markdown import LOAD_LATENCY_PLOT, LOAD_PLOT, render_load_markdown
from benchmarks.report.mixed_markdown import MIXED_PLOT, render_mixed_markdown
from benchmarks.report.mixed_plot import plot_mixed
from benchmarks.report.pareto_plot import plot_pareto
from benchmarks.report.quality_markdown import (
    FALSE_NEGATIVES_PLOT,
    GRADED_PLOT,
    LATENCY_PLOT,
    ORIGINAL_PLOT,
    RECALL_PLOT,
    render_quality_markdown,
)
from benchmarks.report.quality_plots import (
    plot_false_negatives,
    plot_graded_curves,
    plot_original_vs_cxc,
    plot_recall_curves,
)
from benchmarks.report.sweep_markdown import SWEEP_PLOT, render_sweep_markdown
from benchmarks.report.sweep_plot import plot_sweep
from benchmarks.runs.compare.run import CompareRun
from benchmarks.runs.hostile.run import HostileRun
from benchmarks.runs.load.run import LoadRun
from benchmarks.runs.mixed.run import MixedRun
from benchmarks.runs.quality.run import QualityRun
from benchmarks.runs.sweep.run import SweepRun


def write_quality_outputs(run: QualityRun, out_dir: Path) -> dict[str, Path]:
    """Write ``report.json``, ``report.md``, the PNG plots of a quality run, the per-query
    sample ``queries.json`` (when the run kept one) and the self-contained ``report.html``
    (:mod:`benchmarks.report.html_report`) into ``out_dir``.

    Returns:
        Output kind (``json``, ``markdown``, ``recall_plot``, ``original_plot``,
        ``graded_plot``, ``false_negatives_plot``, ``latency_plot``, ``queries``, ``html``) →
        file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    title = f"{report['dataset']} {report['split']} — {report.get('variant')}"
    written = {"json": write_json(report, out_dir / "report.json")}
    if report["recall_curves"]:
        written["recall_plot"] = plot_recall_curves(
            report["recall_curves"], out_dir / RECALL_PLOT, f"Recall@K — {title}"
        )
    original = plot_original_vs_cxc(
        report["tasks"], out_dir / ORIGINAL_PLOT, f"CxC vs original pairs — {title}"
    )
    if original is not None:
        written["original_plot"] = original
    if report.get("graded_curves"):
        written["graded_plot"] = plot_graded_curves(
            report.get("graded_curves") or {},
            report["recall_curves"],
            out_dir / GRADED_PLOT,
            f"R@K, R (eq. 1), NCS@K, SR@K — {title}",
        )
    if report.get("false_negatives"):
        images_dir = (report.get("settings") or {}).get("images_dir")
        written["false_negatives_plot"] = plot_false_negatives(
            report.get("false_negatives") or {},
            out_dir / FALSE_NEGATIVES_PLOT,
            f"False negatives of MS-COCO's labels — {title}",
            Path(images_dir) if images_dir else None,
        )
    if run.latencies_ms:
        written["latency_plot"] = plot_latency(
            run.latencies_ms, out_dir / LATENCY_PLOT, f"Latency — {title}"
        )
    markdown = out_dir / "report.md"
    text = render_quality_markdown(report)
    markdown.write_text(text, encoding="utf-8")
    written["markdown"] = markdown
    if run.queries is not None:
        written["queries"] = write_json(run.queries, out_dir / QUERIES_JSON)
    written["html"] = write_quality_html(report, text, run.queries, out_dir)
    return written


def write_load_outputs(run: LoadRun, out_dir: Path) -> dict[str, Path]:
    """Write ``load.json``, ``load.md``, ``load.png`` (knee and throughput) and
    ``load_latency.png`` (closed-loop distributions) into ``out_dir``.

    Returns:
        ``json``, ``markdown``, ``plot``, ``latency_plot`` → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    written = {"json": write_json(report, out_dir / "load.json")}
    markdown = out_dir / "load.md"
    markdown.write_text(render_load_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    title = f"Crisscross load — {report.get('variant')} / {report.get('bundle_version')}"
    written["plot"] = plot_load(
        report["open"], report["closed"], report["saturation_qps"], out_dir / LOAD_PLOT, title
    )
    closed_latencies = {key: run.latencies_ms[key] for key in report["closed"]}
    written["latency_plot"] = plot_latency(
        closed_latencies, out_dir / LOAD_LATENCY_PLOT, f"{title} (closed loop)"
    )
    return written


def write_compare_outputs(run: CompareRun, out_dir: Path) -> dict[str, Path]:
    """Write ``compare.json``, ``compare.md``, ``compare_pareto.png``, the variants' per-query
    samples ``compare_queries.json`` (variant → sample, when kept) and the self-contained
    ``compare.html`` (:mod:`benchmarks.report.compare_html`) into ``out_dir``.

    Returns:
        Output kind (``json``, ``markdown``, ``pareto_plot``, ``queries``, ``html``) → file
        written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    names = ", ".join(str(entry.get("name")) for entry in report["variants"])
    title = f"{report['dataset']} {report['split']} — {names}"
    written = {"json": write_json(report, out_dir / "compare.json")}
    written["pareto_plot"] = plot_pareto(
        report, out_dir / PARETO_PLOT, f"Quality vs cost — {title}"
    )
    markdown = out_dir / "compare.md"
    text = render_compare_markdown(report)
    markdown.write_text(text, encoding="utf-8")
    written["markdown"] = markdown
    if run.queries:
        written["queries"] = write_json(run.queries, out_dir / COMPARE_QUERIES_JSON)
    written["html"] = write_compare_html(report, text, run.queries, out_dir)
    return written


def write_sweep_outputs(run: SweepRun, out_dir: Path) -> dict[str, Path]:
    """Write ``sweep.json``, ``sweep.md`` (the table) and ``sweep.png`` (recall against p50
    latency) into ``out_dir``.

    Returns:
        ``json``, ``markdown``, ``plot`` → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    written = {"json": write_json(report, out_dir / "sweep.json")}
    markdown = out_dir / "sweep.md"
    markdown.write_text(render_sweep_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    title = (
        f"{report['collection']} ({report['factory']}) — recall@10 vs latency, "
        f"{report['queries']} queries"
    )
    written["plot"] = plot_sweep(report, out_dir / SWEEP_PLOT, title)
    return written


def write_hostile_outputs(run: HostileRun, out_dir: Path) -> dict[str, Path]:
    """Write ``hostile.json``, ``hostile.md`` and ``hostile.png`` (the honest client's latency
    over time beside the crowd's open connections) into ``out_dir``.

    Returns:
        ``json``, ``markdown``, ``plot`` → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    written = {"json": write_json(report, out_dir / "hostile.json")}
    markdown = out_dir / "hostile.md"
    markdown.write_text(render_hostile_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    settings = report["settings"]
    title = (
        f"honest search beside {settings['stalled_bodies']} stalled bodies and "
        f"{settings['slowloris']} slowloris heads"
    )
    written["plot"] = plot_hostile(run.samples, run.crowd_open, out_dir / HOSTILE_PLOT, title)
    return written


def write_mixed_outputs(run: MixedRun, out_dir: Path) -> dict[str, Path]:
    """Write ``mixed.json``, ``mixed.md`` and ``mixed.png`` (search latency idle and while
    writing, write throughput over time) into ``out_dir``.

    Returns:
        ``json``, ``markdown``, ``plot`` → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    written = {"json": write_json(report, out_dir / "mixed.json")}
    markdown = out_dir / "mixed.md"
    markdown.write_text(render_mixed_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    settings = report["settings"]
    title = (
        f"{settings['searchers']} searchers on {settings['collection']} "
        f"({report['preload']['items']:,} preloaded, {settings['dim']}-d), idle and beside "
        f"{settings['writers']} writers (batches of {settings['batch']}, "
        f"{settings['vector_format']})"
    )
    timeline = report["phases"]["writing"]["timeline"]
    written["plot"] = plot_mixed(run.searches, timeline, out_dir / MIXED_PLOT, title)
    return written
