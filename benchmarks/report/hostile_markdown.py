"""``hostile.md``: an honest client's latency alone and beside a crowd of hostile connections,
how the service closed the crowd, and what it counted (:mod:`benchmarks.runs.hostile.run`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

HOSTILE_PLOT: Final = "hostile.png"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{float(value):.1f}"


def _s(value: Any) -> str:
    return "–" if value is None else f"{float(value):.1f}"


def render_hostile_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown of ``hostile.json``."""
    settings = report["settings"]
    honest = report["honest"]
    crowd = report["crowd"]
    ratio = honest.get("p99_ratio")
    lines = [
        "# Crisscross under hostile clients",
        "",
        f"- service: `{report['service']}`; created {report['created']}",
        f"- crowd (another process): {settings['stalled_bodies']} stalled bodies (a POST head "
        f"declaring {settings['declared_bytes']:,} bytes, then {settings['sent_bytes']} of them) "
        f"and {settings['slowloris']} slowloris heads (a header line every "
        f"{settings['line_interval_s']:g} s), each reopened when the server closes it; "
        f"{crowd['open_at_start']} of {crowd['planned']} open when the measured phase began, "
        f"peak {crowd['peak_open']}",
        f"- honest client: sequential `POST /v1/search` (k={settings['k']}, "
        f"{settings['collection']}, real captions) over one keep-alive connection, "
        f"{settings['duration_s']:g} s alone, then {settings['attack_s']:g} s beside the crowd",
        "",
        "## The honest client",
        "",
        "| phase | requests | 200 | other answers | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for phase in ("alone", "attacked"):
        summary = honest[phase]
        others = {key: value for key, value in summary["answers"].items() if key != "200"}
        lines.append(
            f"| {phase} | {summary['requests']} | {summary['ok']} | "
            f"{', '.join(f'{key}: {value}' for key, value in others.items()) or '–'} | "
            f"{_ms(summary['p50_ms'])} | {_ms(summary['p95_ms'])} | {_ms(summary['p99_ms'])} | "
            f"{_ms(summary['max_ms'])} |"
        )
    lines += [
        "",
        f"p99 beside the crowd ÷ p99 alone: **{ratio:.2f}**" if ratio else "p99 ratio: –",
        "",
        f"![honest latency and the crowd]({HOSTILE_PLOT})",
        "",
        "## How the service closed the crowd",
        "",
        "| kind | closed | answers | held p50 s | held max s | configured deadline s | "
        "closed within it (+1 s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind in ("stalled_body", "slowloris"):
        closes = crowd[kind]
        answers = ", ".join(f"{key}: {value}" for key, value in closes["statuses"].items())
        lines.append(
            f"| {kind} | {closes['closed']} | {answers or '–'} | {_s(closes['held_p50_s'])} | "
            f"{_s(closes['held_max_s'])} | {closes['configured_deadline_s']:g} | "
            f"{closes['closed_within_deadline']} |"
        )
    lines += [
        "",
        "A stalled body is held from the last byte of its head, a slowloris head from its connect.",
        "",
        "## What the service counted (`/metrics`, during the run)",
        "",
        "| counter | grew by |",
        "|---|---|",
    ]
    for key, value in report["service_counted"].items():
        lines.append(f"| `{key}` | {value:g} |")
    environment = report.get("environment", {})
    lines += [
        "",
        f"Client: {environment.get('cpu_count')} CPUs, {environment.get('platform')}, "
        f"Python {environment.get('python')}; load average {environment.get('load_average')}.",
        "",
    ]
    return "\n".join(lines)
