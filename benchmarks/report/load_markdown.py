"""``load.md``: the Markdown of a load run's ``load.json`` object.

Run facts, the closed-loop and open-loop tables (latency percentiles of the 2xx answers, 503s
apart, errors by status, the client's CPU, Little's law; for open levels the offered rate, the
dispatch lag and the warm-up), the summary (saturation, efficiency ratio, overload check) and the
warnings. The keys it reads are :class:`benchmarks.runs.load.run.LoadReport`'s; latency of an
open-loop request runs from its intended (scheduled) send time.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from benchmarks.report.markdown import cell, markdown_table

LOAD_PLOT = "load.png"
LOAD_LATENCY_PLOT = "load_latency.png"


_cell = functools.partial(cell, true="yes", false="**no**")
"""A cell of the load tables: booleans (Little's law) as ``yes`` / ``**no**``."""


def _errors(entry: Mapping[str, Any]) -> str:
    by_status: Mapping[str, int] = entry.get("errors_by_status") or {}
    if not by_status:
        return "0"
    return ", ".join(f"{name}: {count}" for name, count in by_status.items())


def _common(entry: Mapping[str, Any]) -> list[str]:
    return [
        _cell(entry.get("requests")),
        _cell(entry.get("p50_ms")),
        _cell(entry.get("p95_ms")),
        _cell(entry.get("p99_ms")),
        _cell(entry.get("max_ms")),
        _cell(entry.get("qps")),
        _errors(entry),
        f"{_cell(entry.get('rejected'))} ({_cell(entry.get('rejected_p99_ms'))} ms)",
        _cell(entry.get("client_cpu_ms_per_request"), 3),
        f"{_cell(entry.get('in_flight_mean'), 2)} / {_cell(entry.get('littles_law_xw'), 2)}",
        _cell(entry.get("littles_law_ok")),
    ]


COMMON_HEADER = [
    "requests",
    "p50 ms",
    "p95 ms",
    "p99 ms",
    "max ms",
    "qps",
    "errors",
    "503 (p99)",
    "client CPU ms/req",
    "in flight / X·W",
    "Little ok",
]


def render_load_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown of a ``load.json`` object: facts, closed and open tables, the summary."""
    collection = report.get("collection") or {}
    settings = report.get("settings") or {}
    lines = [
        "# Crisscross load test",
        "",
        f"- service: `{report.get('service_url')}`; variant `{report.get('variant')}`, bundle "
        f"`{report.get('bundle')}` version `{report.get('bundle_version')}`; collection "
        f"`{collection.get('name')}` ({collection.get('count')} items)",
        f"- queries: {settings.get('queries')} shuffled captions (seed {settings.get('seed')}), "
        f"k = {settings.get('k')}, include_metadata = "
        f"{str(settings.get('include_metadata')).lower()}; ≤ {settings.get('duration_s')} s and "
        f"≤ {settings.get('max_requests')} requests per level",
        f"- client: {settings.get('client')}",
        f"- created: {report.get('created_at')}",
    ]
    closed: Mapping[str, Mapping[str, Any]] = report.get("closed") or {}
    if closed:
        lines += ["", "## Closed loop (N clients, next request when the previous answered)", ""]
        rows = [
            [key, _cell(entry.get("concurrency")), *_common(entry)] for key, entry in closed.items()
        ]
        lines += markdown_table(["level", "clients", *COMMON_HEADER], rows)
    opened: Mapping[str, Mapping[str, Any]] = report.get("open") or {}
    if opened:
        lines += [
            "",
            "## Open loop (Poisson arrivals; latency from the intended send time)",
            "",
        ]
        rows = [
            [
                key,
                _cell(entry.get("offered_rps")),
                _cell(entry.get("saturation_multiple"), 2),
                *_common(entry),
                _cell(entry.get("dispatch_lag_p99_ms"), 2),
                _cell(entry.get("backlogged")),
                _onset(entry.get("onset")),
            ]
            for key, entry in opened.items()
        ]
        header = ["level", "offered rps", "× sat.", *COMMON_HEADER, "dispatch lag p99 ms"]
        lines += markdown_table(
            [*header, "waited for a connection", "warm-up: requests, 2xx p99 ms, 503"], rows
        )
    lines += ["", "## Summary", ""]
    saturation = report.get("saturation_qps")
    inprocess = report.get("inprocess_qps")
    lines.append(f"- saturation throughput (best closed level): **{_cell(saturation)} qps**")
    if inprocess:
        lines.append(
            f"- bare in-process throughput: {_cell(inprocess)} qps → efficiency ratio "
            f"**{_cell(report.get('efficiency_ratio'), 3)}** (service ÷ in-process)"
        )
    else:
        lines.append("- bare in-process throughput: not given (`--inprocess-json`)")
    overload = report.get("overload_2x")
    if overload:
        lines.append(
            f"- overload at {_cell(overload.get('saturation_multiple'), 2)}× saturation "
            f"(`{overload.get('level')}`): admitted p99 {_cell(overload.get('admitted_p99_ms'))} "
            f"ms vs unloaded p99 {_cell(overload.get('unloaded_p99_ms'))} ms (×"
            f"{_cell(overload.get('ratio'), 2)}); 503 share "
            f"{_cell(_percent(overload.get('rejected_share')))} % with p99 "
            f"{_cell(overload.get('rejected_p99_ms'))} ms from the intended send time, "
            f"{_cell(overload.get('rejected_sent_p99_ms'))} ms from the send; other errors "
            f"{_cell(overload.get('errors'))}"
        )
    else:
        lines.append("- overload check: no open level between 1.5× and 3× saturation")
    warnings = report.get("warnings") or []
    if warnings:
        lines += ["", "### Warnings", ""]
        lines += [f"- {warning}" for warning in warnings]
    lines += [
        "",
        f"![p50/p99 and throughput vs offered load]({LOAD_PLOT})",
        "",
        f"![closed-loop latency distribution]({LOAD_LATENCY_PLOT})",
        "",
        "Closed-loop throughput is the peak; its latencies hide queueing (a slow answer delays "
        "the next send). Open-loop latencies include every wait since the intended send time, "
        "so past the knee they show the backlog. `Little ok` compares the client's mean "
        "requests on the wire (closed: the number of clients) with throughput × mean latency.",
    ]
    environment = report.get("environment") or {}
    if environment:
        load = environment.get("load_average_before")
        lines += [
            "",
            f"Client machine (the service's too, on a loopback URL): "
            f"{environment.get('cpu_count')} CPUs, {environment.get('platform')}, Python "
            f"{environment.get('python')}; load average (1/5/15 min) before the run "
            f"{load}, after {environment.get('load_average_after')}.",
        ]
    return "\n".join(lines) + "\n"


def _onset(onset: object) -> str:
    """The warm-up cell of an open level: what the service did before it adapted."""
    if not isinstance(onset, Mapping) or not onset.get("requests"):
        return "–"
    return (
        f"{_cell(onset.get('requests'))}, {_cell(onset.get('p99_ms'))}, "
        f"{_cell(onset.get('rejected'))}"
    )


def _percent(value: object) -> float | None:
    return float(value) * 100.0 if isinstance(value, int | float) else None
