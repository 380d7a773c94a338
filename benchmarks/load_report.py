"""The load report: ``load.json`` (stable keys) and ``load.md``.

``load.json`` (schema version 1)::

    schema_version, service_url, created_at, collection {name, count}, variant, bundle,
    bundle_version
    closed.c<N>        one closed-loop level (N workers, one connection each)
    open.r<rate>       one open-loop level; <rate> is the offered rate in requests/s as written
                       by ``open_key`` (``r48``, ``r2_5`` for 2.5)
        both:  p50_ms, p95_ms, p99_ms, max_ms, mean_ms   2xx answers only, ms
               qps                 2xx answers per second of the level's window
               answered_rps        every HTTP answer (2xx, 503, other) per second
               requests, ok        measured requests; 2xx answers
               errors              non-2xx answers other than 503, plus requests with no answer
               errors_by_status    "<status>" | "timeout" | "connection" | "connect" |
                                   "protocol" | "unsent" → count
               rejected            503 answers (overloaded / not ready) — not in errors
               rejected_p50_ms, rejected_p99_ms   their latency (a fast refusal is cheap)
               client_cpu_ms_per_request   client CPU (process_time) ÷ requests, ms
               client_cpu_cores    client CPU ÷ wall time (1.0 = one core busy)
               in_flight_mean, in_flight_peak   client's own count of requests on the wire
               littles_law_xw      throughput of finished requests × their mean latency
               littles_law_reference   closed: N; open: in_flight_mean
               littles_law_ok      the two agree within 10 %
               client_bound        the client, not the service, may have limited the level
               warnings            human-readable flags; wall_s; connections (opened in level)
               mode, concurrency   "closed" | "open"; workers | max connections
        open only: offered_rps (nominal), scheduled_rps (the drawn Poisson schedule),
               saturation_multiple, dispatch_lag_p99_ms, pool_wait_p99_ms, backlogged,
               settle_s (wait for the service to drain before the level), onset
               (the warm-up's requests, ok, p50_ms, p99_ms, rejected, rejected_p99_ms, errors:
               sent at the level's rate before its measured window, not in its other numbers)
    saturation_qps     the largest closed-level qps
    inprocess_qps      bare in-process queries/s (scripts/bench_inprocess.py) or null
    efficiency_ratio   saturation_qps ÷ inprocess_qps, or null
    overload_2x        {level, offered_rps, saturation_multiple, admitted_p99_ms,
                        unloaded_p99_ms, ratio, rejected_share, rejected_p99_ms, errors, qps}
                       for the open level nearest 2× saturation (1.5–3×), or null
    inprocess          the in-process JSON as given, or null
    warnings           every level's warnings, prefixed by the level key
    settings, service {collection, variants}, durations_s,
    environment        {cpu_count, platform, python, machine, load_average_before,
                        load_average_after} of the client machine

Latency of an open-loop request runs from its intended (scheduled) send time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.markdown import markdown_table

SCHEMA_VERSION = 1
LOAD_PLOT = "load.png"
LOAD_LATENCY_PLOT = "load_latency.png"


def closed_key(concurrency: int) -> str:
    """``closed`` key of a concurrency: ``c8``."""
    return f"c{concurrency}"


def open_key(rate: float) -> str:
    """``open`` key of an offered rate (requests/s): ``r48``, ``r2_5``."""
    text = f"{rate:.3f}".rstrip("0").rstrip(".")
    return "r" + text.replace(".", "_")


def _cell(value: object, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "**no**"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


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
            f"{_cell(overload.get('rejected_p99_ms'))} ms; other errors "
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
        "![p50/p99 and throughput vs offered load](load.png)",
        "",
        "![closed-loop latency distribution](load_latency.png)",
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
