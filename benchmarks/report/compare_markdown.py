"""``compare.md``: the Markdown of a compare run's ``compare.json`` object.

Run facts, the variants (precision, dimension, providers in use, bundle versions), a quality
table, a cost table, the differences against the baseline, the Pareto sets and what was skipped,
one row per variant. A run of lever settings (``lever_settings`` in the report) has one row per
setting instead, a settings table (variant, levers, retrieval depth, modes answered) before the
variants table (one row per variant the settings use). The keys it reads are
:class:`benchmarks.runs.compare.run.CompareReport`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final

from benchmarks.report.markdown import cell, markdown_table
from benchmarks.runs.compare.levers import LeverSetting
from evaluation.metrics.correlation import DEFAULT_SAMPLES, DEFAULT_SEED
from evaluation.metrics.pareto import primary_quality, quality_metrics, variant_quality

PARETO_PLOT: Final = "compare_pareto.png"


_cell = functools.partial(cell, true="–", false="–")
"""A cell of the comparison tables: no booleans shown."""


def _ratio(value: object, baseline: object) -> str:
    """``×value/baseline`` with two decimals, or ``–`` when either is missing or zero."""
    if isinstance(value, int | float) and isinstance(baseline, int | float) and baseline:
        return f"×{float(value) / float(baseline):.2f}"
    return "–"


def _quality_cell(measured: tuple[float, tuple[float, float] | None] | None) -> str:
    """``21.9 [21.1, 22.7]``: a headline number and its interval (the number alone without)."""
    if measured is None:
        return "–"
    value, interval = measured
    if interval is None:
        return _cell(value)
    return f"{_cell(value)} [{_cell(interval[0])}, {_cell(interval[1])}]"


def _providers_cell(entry: Mapping[str, Any]) -> str:
    providers = entry.get("providers")
    if not isinstance(providers, list):
        return "unknown"
    return ", ".join(str(name).removesuffix("ExecutionProvider") for name in providers)


def _versions_cell(entry: Mapping[str, Any]) -> str:
    versions = entry.get("bundle_versions")
    if isinstance(versions, dict) and versions:
        return ", ".join(f"{name}@{version}" for name, version in versions.items())
    return f"{entry.get('bundle')}@{entry.get('bundle_version')}"


def _setting_of(entry: Mapping[str, Any]) -> LeverSetting | None:
    """The lever setting of a row's entry (``None`` when it records none)."""
    levers = entry.get("levers")
    if not isinstance(levers, Mapping):
        return None
    try:
        return LeverSetting(name=str(entry.get("name")), **levers)
    except (TypeError, ValueError):
        return None


def _settings_lines(variants: Sequence[Mapping[str, Any]], k: object) -> list[str]:
    """The settings table of a run of lever settings, and what the rows share or lack."""
    rows = []
    for entry in variants:
        setting = _setting_of(entry)
        depth = setting.quality_k(k) if setting is not None and isinstance(k, int) else k
        answered = entry.get("modes_answered")
        rows.append(
            [
                f"`{entry.get('name')}`",
                f"`{entry.get('variant')}`",
                setting.describe() if setting is not None else "–",
                _cell(depth),
                ", ".join(answered) if isinstance(answered, list) and answered else "–",
            ]
        )
    lines = [
        "## Settings",
        "",
        "Every search of a setting (each retrieval task's and the latency searches) carries its "
        "variant and levers; a lever left out is the service's default. A hybrid or re-ranked "
        "setting sends a window and its retrieval searches ask for at most that many results.",
        "",
    ]
    lines += markdown_table(
        ["setting", "variant", "levers", "results per query", "modes answered"], rows
    )
    for entry in variants:
        setting = _setting_of(entry)
        answered = entry.get("modes_answered")
        asked = "dense" if setting is None else setting.mode or "dense"
        if setting is not None and isinstance(answered, list) and answered and answered != [asked]:
            lines += [
                "",
                f"**Warning:** `{setting.name}` asked for mode {asked}; the service answered in "
                f"{', '.join(answered)}.",
            ]
    shared = [
        f"`{entry.get('name')}` takes `{entry.get('pair_tasks_from')}`'s"
        for entry in variants
        if entry.get("pair_tasks_from")
    ]
    if shared:
        lines += [
            "",
            "Correlation and BISON numbers come from `POST /v1/score`, which takes no search "
            f"levers: {'; '.join(shared)} (same variant).",
        ]
    return [*lines, ""]


def render_compare_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown of a ``compare.json`` object: run facts, variants (or lever settings),
    quality, cost, Pareto."""
    variants: list[Mapping[str, Any]] = list(report.get("variants") or [])
    schedule: Mapping[str, Any] = report.get("latency_schedule") or {}
    settings: Mapping[str, Any] = report.get("settings") or {}
    environment: Mapping[str, Any] = report.get("environment") or {}
    by_settings = bool(report.get("lever_settings"))
    noun = "setting" if by_settings else "variant"
    kind = "lever" if by_settings else "variant"
    lines = [
        f"# Crisscross {kind} comparison — {report.get('dataset')} {report.get('split')}",
        "",
        f"- service: `{report.get('service_url')}`; created {report.get('created_at')}",
        f"- one run, same queries for every {noun}: tasks {', '.join(settings.get('tasks', []))}"
        + (
            f" (first {settings['limit_queries']} queries per retrieval task), "
            if settings.get("limit_queries")
            else " (all queries), "
        )
        + f"latency k={settings.get('latency_k')}"
        + (f" on `{settings['latency_collection']}`" if settings.get("latency_collection") else "")
        + " at concurrency "
        f"{', '.join(str(c) for c in settings.get('concurrency_levels', []))}",
        f"- latency schedule: {schedule.get('mode')} ({schedule.get('note')}); "
        f"{schedule.get('rounds')} round(s) of {schedule.get('chunk_requests')} measured "
        f"requests, {schedule.get('warmup_per_chunk')} warm-up per chunk",
        f"- client machine: {environment.get('cpu_count')} CPUs, {environment.get('platform')}",
        "",
    ]
    facts = variants
    if by_settings:
        lines += _settings_lines(variants, settings.get("k"))
        first_of: dict[str, Mapping[str, Any]] = {}
        for entry in variants:
            first_of.setdefault(str(entry.get("variant")), entry)
        facts = [{**entry, "name": name} for name, entry in first_of.items()]
    lines += ["## Variants", ""]
    lines += markdown_table(
        ["variant", "precision", "dim", "providers (in use)", "bundle versions"],
        [
            [
                f"`{entry.get('name')}`",
                _cell(entry.get("precision")),
                _cell(entry.get("dim")),
                _providers_cell(entry),
                _versions_cell(entry),
            ]
            for entry in facts
        ],
    )
    metrics = {
        str(entry.get("name")): quality_metrics(entry.get("tasks") or {}) for entry in variants
    }
    samples = int(settings.get("bootstrap_samples") or DEFAULT_SAMPLES)
    seed = int(settings.get("seed") or DEFAULT_SEED)
    measured = {str(entry.get("name")): variant_quality(entry, samples, seed) for entry in variants}
    names = list(dict.fromkeys(name for values in metrics.values() for name in values))
    if names:
        lines += [
            "",
            "## Quality (×100; R@K share of queries, ρ Spearman mean; [95 % interval])",
            "",
            "Intervals: percentile bootstrap over queries for R@K and BISON accuracy "
            f"({samples} samples, seed {seed}), mean ± 1.96 sd of the CxC bootstrap for ρ. "
            "Differences inside overlapping intervals are not evidence of a gap.",
            "",
        ]
        lines += markdown_table(
            [noun, *names],
            [
                [f"`{variant}`", *(_quality_cell(measured[variant].get(name)) for name in names)]
                for variant in metrics
            ],
        )
    levels = list(
        dict.fromkeys(level for entry in variants for level in entry.get("latency") or {})
    )
    if levels:
        header = [noun]
        for level in levels:
            header += [f"{level} p50 ms", f"{level} p99 ms", f"{level} req/s", f"{level} errors"]
        rows = []
        for entry in variants:
            row = [f"`{entry.get('name')}`"]
            latency = entry.get("latency") or {}
            for level in levels:
                values = latency.get(level) or {}
                row += [
                    _cell(values.get("p50_ms")),
                    _cell(values.get("p99_ms")),
                    _cell(values.get("qps")),
                    _cell(values.get("errors")),
                ]
            rows.append(row)
        lines += ["", "## Cost (client-side latency, closed loop, warm-up excluded)", ""]
        lines += markdown_table(header, rows)
    baseline = str(report.get("baseline"))
    if len(variants) > 1 and baseline in metrics:
        lines += ["", f"## Against the baseline `{baseline}`", ""]
        base_entry = next(entry for entry in variants if entry.get("name") == baseline)
        rows = []
        for entry in variants:
            name = str(entry.get("name"))
            if name == baseline:
                continue
            cells = [f"`{name}`"]
            for metric in primary_quality(variants):
                delta = metrics[name][metric] - metrics[baseline][metric]
                cells.append(f"{delta:+.1f}")
            for level in levels:
                mine = (entry.get("latency") or {}).get(level) or {}
                theirs = (base_entry.get("latency") or {}).get(level) or {}
                for key in ("p50_ms", "qps"):
                    cells.append(_ratio(mine.get(key), theirs.get(key)))
            rows.append(cells)
        header = [noun, *(f"Δ {metric}" for metric in primary_quality(variants))]
        for level in levels:
            header += [f"{level} p50 ratio", f"{level} req/s ratio"]
        lines += markdown_table(header, rows)
    pareto: Mapping[str, list[str]] = report.get("pareto") or {}
    if pareto:
        # Keys are "<quality> vs <cost> @<level>": one row per quality and cost, a column per level.
        rows_of: dict[str, dict[str, list[str]]] = {}
        for key, front in pareto.items():
            pair, _, level = key.rpartition(" @")
            rows_of.setdefault(pair, {})[level] = front
        pareto_levels = list(dict.fromkeys(level for row in rows_of.values() for level in row))
        lines += ["", f"## Pareto-optimal {noun}s (none other is both better and cheaper)", ""]
        lines += markdown_table(
            ["quality vs cost", *pareto_levels],
            [
                [
                    pair,
                    *(", ".join(f"`{n}`" for n in row.get(level, [])) for level in pareto_levels),
                ]
                for pair, row in rows_of.items()
            ],
        )
    skipped = [
        (str(entry.get("name")), task, str(reason))
        for entry in variants
        for task, reason in (entry.get("skipped") or {}).items()
    ]
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += markdown_table([noun, "task", "reason"], [list(row) for row in skipped])
    lines += ["", f"![quality vs cost]({PARETO_PLOT})", ""]
    return "\n".join(lines)
