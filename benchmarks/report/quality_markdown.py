"""``report.md``: the Markdown of a quality run's ``report.json`` object.

Run facts, then one table per kind of task: retrieval (R@K ×100, median rank), R (eq. 1) vs R^V,
the CIDEr-D graded metrics (NCS, SR), the false-negative view with its strongest examples,
Spearman's r (×100, bootstrap), BISON accuracy (×100), skipped tasks and latency — with links to
the PNG plots :mod:`benchmarks.report.writers` writes beside it. The keys it reads are
:class:`benchmarks.runs.quality.run.QualityReport`'s.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from benchmarks.report.markdown import cell, markdown_table

RECALL_PLOT = "recall_at_k.png"
ORIGINAL_PLOT = "cxc_vs_original.png"
LATENCY_PLOT = "latency.png"
GRADED_PLOT = "graded_at_k.png"
FALSE_NEGATIVES_PLOT = "false_negatives.png"

TASK_NOTES: Mapping[str, str] = MappingProxyType(
    {
        "t2t": "caption → captions; positives = STS partners ≥ 3; query excluded",
        "t2t_cocaptions": "as t2t, plus the other captions of the query's image",
        "i2t": "image → captions; positives = SITS captions ≥ 3; images without one skipped",
        "i2t_original": "image → captions; positives = its own captions (MS-COCO); all images",
        "t2i": "caption → images; positives = SITS images ≥ 3; captions without one skipped",
        "t2i_original": "caption → images; positive = its own image (MS-COCO); all captions",
        "i2i": "image → images; positives = SIS partners ≥ 2.5; query excluded",
    }
)
"""Retrieval task → one line on its queries and positives, for the Markdown report."""


def _median_cell(entry: Mapping[str, Any]) -> str:
    if entry.get("median_rank_censored"):
        return f"> {entry.get('k')}"
    value = entry.get("median_rank")
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return cell(value)


def _towers(report: Mapping[str, Any]) -> str:
    towers = report.get("towers")
    return ", ".join(towers) if isinstance(towers, list) else "unknown"


def render_quality_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown report of a ``report.json`` object: run facts, then one table per kind."""
    lines = [
        f"# Crisscross benchmark — {report.get('dataset')} {report.get('split')}",
        "",
        f"- service: `{report.get('service_url')}`",
        f"- variant: `{report.get('variant')}` (towers: {_towers(report)}); bundle: "
        f"`{report.get('bundle')}` version `{report.get('bundle_version')}`",
        f"- created: {report.get('created_at')}",
    ]
    served: Mapping[str, Any] = report.get("collections") or {}
    collection = report.get("collection") or {}
    if served:
        counts = ", ".join(f"`{name}` ({count} items)" for name, count in served.items())
        lines.append(f"- collections: {counts}")
    elif collection:
        lines.append(f"- collection: `{collection.get('name')}` ({collection.get('count')} items)")
    tasks: Mapping[str, Any] = report.get("tasks") or {}
    retrieval = {name: entry for name, entry in tasks.items() if "R@1" in entry}
    if retrieval:
        cut_offs = [key for key in next(iter(retrieval.values())) if key.startswith("R@")]
        rows = [
            [name]
            + [cell(entry.get(cut), scale=100.0) for cut in cut_offs]
            + [_median_cell(entry), cell(entry.get("queries")), cell(entry.get("k"))]
            for name, entry in retrieval.items()
        ]
        lines += ["", "## Retrieval (R@K ×100)", ""]
        lines += markdown_table(["task", *cut_offs, "median rank", "queries", "k"], rows)
        lines += [""]
        lines += [f"- `{name}`: {TASK_NOTES[name]}" for name in retrieval if name in TASK_NOTES]
        lines += [
            "",
            "A median rank `> k` lies beyond the results asked for. Image queries were sent as "
            f"`{(report.get('settings') or {}).get('image_queries', 'item')}`.",
            "",
            f"![recall@K]({RECALL_PLOT})",
        ]
        if any(name in retrieval for name in ("i2t", "t2i", "i2t_original", "t2i_original")):
            lines += ["", f"![CxC vs original pairs]({ORIGINAL_PLOT})"]
    lines += _graded_sections(report)
    correlation = {name: entry for name, entry in tasks.items() if "spearman_mean" in entry}
    if correlation:
        rows = [
            [
                name,
                f"{cell(entry.get('spearman_mean'))} ± {cell(entry.get('spearman_std'))}",
                cell(entry.get("samples")),
                cell(entry.get("pairs")),
                cell(entry.get("query_items")),
                cell(entry.get("pairs_skipped")),
                cell(entry.get("seed")),
            ]
            for name, entry in correlation.items()
        ]
        lines += ["", "## Correlation with human scores (Spearman's r ×100, bootstrap)", ""]
        header = ["task", "mean ± std", "samples", "pairs", "query items", "pairs skipped"]
        lines += markdown_table([*header, "seed"], rows)
    bison = tasks.get("bison")
    if bison:
        reasons = bison.get("skipped_reasons") or {}
        lines += ["", "## BISON (accuracy ×100; a tie counts ½)", ""]
        lines += markdown_table(
            ["accuracy", "rows scored", "rows skipped", "ties", "image uploads"],
            [
                [
                    cell(bison.get("accuracy"), scale=100.0),
                    cell(bison.get("rows")),
                    cell(bison.get("skipped")),
                    cell(bison.get("ties")),
                    cell(bison.get("uploads")),
                ]
            ],
        )
        if reasons:
            detail = ", ".join(f"{reason}: {count}" for reason, count in reasons.items())
            lines += ["", f"Skipped rows by reason: {detail}."]
    skipped: Mapping[str, Any] = report.get("skipped") or {}
    if skipped:
        lines += ["", "## Skipped tasks", ""]
        lines += markdown_table(
            ["task", "reason"], [[name, str(why)] for name, why in skipped.items()]
        )
    latency: Mapping[str, Any] = report.get("latency") or {}
    if latency:
        rows = [
            [
                name,
                cell(entry.get("concurrency")),
                cell(entry.get("requests")),
                cell(entry.get("p50_ms")),
                cell(entry.get("p95_ms")),
                cell(entry.get("p99_ms")),
                cell(entry.get("qps")),
                cell(entry.get("errors")),
                cell(entry.get("in_flight_mean"), digits=2),
            ]
            for name, entry in latency.items()
        ]
        lines += ["", "## Latency (client side, closed loop, warm-up excluded)", ""]
        header = ["load", "concurrency", "requests", "p50 ms", "p95 ms", "p99 ms", "qps"]
        lines += markdown_table([*header, "errors", "in flight (Little)"], rows)
        lines += ["", f"![latency]({LATENCY_PLOT})"]
    environment = report.get("environment") or {}
    if environment:
        lines += [
            "",
            f"Client: {environment.get('cpu_count')} CPUs, {environment.get('platform')}, "
            f"Python {environment.get('python')}.",
        ]
    lines += [
        "",
        "Reference (CxC paper): T2T R@1 — BoW 21.2, USE 31.2, best dual encoder 42.4; "
        "STS Spearman — USE 71.4.",
    ]
    return "\n".join(lines) + "\n"


GRADED_CUTS = (1, 5, 10)


def _graded_sections(report: Mapping[str, Any]) -> list[str]:
    """R (eq. 1) vs R^V, NCS / SR, and the false-negative view, when the report has them."""
    tasks: Mapping[str, Any] = report.get("tasks") or {}
    lines: list[str] = []
    eq1 = {name: entry for name, entry in tasks.items() if "R_eq1@1" in entry}
    if eq1:
        header = ["task"] + [f"R^V@{cut}" for cut in GRADED_CUTS]
        header += [f"R@{cut} (eq. 1)" for cut in GRADED_CUTS]
        rows = [
            [name]
            + [cell(entry.get(f"R@{cut}"), scale=100.0) for cut in GRADED_CUTS]
            + [cell(entry.get(f"R_eq1@{cut}"), scale=100.0) for cut in GRADED_CUTS]
            for name, entry in eq1.items()
        ]
        lines += [
            "",
            "## Recall: R^V (eq. 2, any positive) vs R (eq. 1, share of positives) ×100",
            "",
        ]
        lines += markdown_table(header, rows)
    graded = {name: entry for name, entry in tasks.items() if "NCS@1" in entry}
    if graded:
        header = ["task"] + [f"NCS@{cut}" for cut in GRADED_CUTS]
        header += [f"NCS nonGT@{cut}" for cut in GRADED_CUTS]
        header += [f"SR@{cut}" for cut in GRADED_CUTS] + [f"SR nonGT@{cut}" for cut in GRADED_CUTS]
        rows = [
            [name]
            + [
                cell(entry.get(f"{key}@{cut}"), scale=100.0)
                for key in ("NCS", "NCS_nonGT", "SR", "SR_nonGT")
                for cut in GRADED_CUTS
            ]
            for name, entry in graded.items()
        ]
        cider = report.get("cider") or {}
        m_values = ", ".join(f"{name}: m = {entry.get('SR_m')}" for name, entry in graded.items())
        lines += ["", "## CIDEr-D graded metrics (Biten et al. 2022; ×100)", ""]
        lines += markdown_table(header, rows)
        lines += [
            "",
            "NCS@K = Σ CIDEr-D of the top K ÷ Σ CIDEr-D of the ideal top K; SR@K = share of the "
            f"m best CIDEr-D targets found in the top K ({m_values}); nonGT: MS-COCO's own "
            "pairs removed from both lists. CIDEr-D matrix "
            f"`{cider.get('cache_file')}` ({'built' if cider.get('built') else 'cached'}, "
            f"{cider.get('build_seconds')} s to build).",
        ]
    if report.get("graded_curves"):
        lines += ["", f"![R, NCS and SR at K]({GRADED_PLOT})"]
    views: Mapping[str, Any] = report.get("false_negatives") or {}
    if views:
        lines += ["", "## False negatives of MS-COCO's labels (% of top-K results)", ""]
        header = ["direction", "K", "results", "COCO wrong", "… CxC ≥ 3", "… CIDEr-D top-m"]
        header += ["… either", "… CxC rated"]
        rows = []
        for direction, view in views.items():
            for cut in GRADED_CUTS:
                if f"results@{cut}" not in view:
                    continue
                rows.append(
                    [direction, str(cut), cell(view.get(f"results@{cut}"))]
                    + [
                        cell(view.get(f"{key}@{cut}"), scale=100.0)
                        for key in ("wrong", "wrong_cxc", "wrong_cider", "wrong_either")
                    ]
                    + [cell(view.get(f"wrong_cxc_rated@{cut}"), scale=100.0)]
                )
        lines += markdown_table(header, rows)
        for direction, view in views.items():
            examples = view.get("examples") or []
            if not examples:
                continue
            lines += ["", f"Strongest {direction} examples (COCO says wrong):", ""]
            lines += markdown_table(
                ["query", "retrieved", "rank", "CxC", "CIDEr-D", "COCO", "caption"],
                [
                    [
                        f"`{example.get('query')}`",
                        f"`{example.get('retrieved')}`",
                        cell(example.get("rank")),
                        cell(example.get("cxc_score"), digits=2),
                        cell(example.get("cider_d"), digits=2),
                        str(example.get("coco_label")),
                        str(example.get("caption", "")).replace("|", "/"),
                    ]
                    for example in examples
                ],
            )
        lines += ["", f"![false negatives]({FALSE_NEGATIVES_PLOT})"]
    return lines
