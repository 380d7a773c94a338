"""The ``report`` phase: ``results.json`` and ``report.md`` (method, results table, fit check,
extrapolation) with the plots, under ``--report``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from studies.scale_simulation.cache_layout import fit_check_path
from studies.scale_simulation.config import Config
from studies.scale_simulation.extrapolation import extrapolate
from studies.scale_simulation.json_files import write_json
from studies.scale_simulation.machine import machine_info
from studies.scale_simulation.markdown import render_markdown
from studies.scale_simulation.plots import plot_all
from studies.scale_simulation.progress import log
from studies.scale_simulation.results import collect


def write_report(cfg: Config, scales: Sequence[int], argv: Sequence[str]) -> dict[str, Any]:
    cfg.report.mkdir(parents=True, exist_ok=True)
    fit_json = fit_check_path(cfg)
    fit = json.loads(fit_json.read_text()) if fit_json.is_file() else {}
    results = collect(cfg, scales)
    extra = extrapolate(results, cfg)
    plots = plot_all(results, fit, cfg.report)
    fit_summary = {
        name: {
            "nn_cos_quantiles_10_25_50_75_90": s["nn_cos_quantiles"],
            "pair_cos_quantiles_10_50_90": s["pair_cos_quantiles"],
            "variance_top10": float(sum(s["spectrum"][:10])),
            "ivf_recall": s["ivf_recall"],
        }
        for name, s in fit.get("sets", {}).items()
    }
    payload = {
        "machine": machine_info(),
        "command": "-m studies.scale_simulation " + " ".join(reproducing(argv)),
        "seed": cfg.seed,
        "generator": {"clusters": cfg.clusters, "rank": cfg.rank, "source": fit.get("source")},
        "fit_check": fit_summary,
        "fit_ivf": fit.get("ivf"),
        "scales": results,
        "extrapolation": extra,
        "plots": plots,
    }
    write_json(cfg.report / "results.json", payload)
    (cfg.report / "report.md").write_text(render_markdown(cfg, payload))
    log(f"report written to {cfg.report}")
    return payload


def reproducing(argv: Sequence[str]) -> list[str]:
    """The arguments that reproduce a report: ``argv`` without ``--phase`` (all phases)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--phase":
            skip = True
        elif not arg.startswith("--phase="):
            out.append(arg)
    return out
