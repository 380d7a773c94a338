"""``mixed.md``: search latency idle and beside writers, the writers' throughput and latency,
and the read-your-writes and delete checks (:mod:`benchmarks.runs.mixed.run`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

MIXED_PLOT: Final = "mixed.png"


def _ms(value: Any) -> str:
    return "–" if value is None else f"{float(value):.1f}"


def _rate(value: Any) -> str:
    return "–" if value is None else f"{float(value):,.0f}"


def _errors(entry: Mapping[str, Any]) -> str:
    """The error count, and by what (``3 (422: 2, timeout: 1)``)."""
    others = {key: value for key, value in entry["answers"].items() if not key.startswith("2")}
    if not others:
        return str(entry["errors"])
    return f"{entry['errors']} ({', '.join(f'{key}: {value}' for key, value in others.items())})"


def _request_row(label: str, entry: Mapping[str, Any], extra: str) -> str:
    return (
        f"| {label} | {entry['requests']} | {extra} | {_errors(entry)} | "
        f"{entry['retried_503']} | {_ms(entry['p50_ms'])} | {_ms(entry['p95_ms'])} | "
        f"{_ms(entry['p99_ms'])} | {_ms(entry['max_ms'])} |"
    )


def render_mixed_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown of ``mixed.json``."""
    settings = report["settings"]
    preload = report["preload"]
    phases = report["phases"]
    writing = phases["writing"]
    totals = report["totals"]
    ratio = report.get("search_p99_ratio")
    vector_field = "`vector_base64`" if settings["vector_format"] == "base64" else "`vector` lists"
    lines = [
        "# Crisscross: searches while writing",
        "",
        f"- service: `{report['service']}`; created {report['created']}",
        f"- live collection `{settings['collection']}`: {settings['dim']}-d seeded random unit "
        f"vectors sent as {vector_field}, field `group` (integer); {preload['items']:,} items "
        f"preloaded in {preload['seconds']:.1f} s ({_rate(preload['items_per_s'])} items/s)",
        f"- {settings['searchers']} closed-loop searchers (random unit query vectors, "
        f"k={settings['k']}, no filter): {settings['phase_s']:g} s idle, then "
        f"{settings['phase_s']:g} s beside {settings['writers']} closed-loop writers (upserts "
        f"of {settings['batch']} new ids; {settings['delete_share']:.0%} of their requests "
        f"delete {settings['batch']} earlier ids); after each acknowledged write the writer "
        "reads it back before its next request",
        "",
        "## Search latency",
        "",
        "| phase | searches | per s | errors | 503 retried | p50 ms | p95 ms | p99 ms | max ms |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for phase in ("idle", "writing"):
        search = phases[phase]["search"]
        lines.append(_request_row(phase, search, _rate(search["per_s"])))
    lines += [
        "",
        f"p99 while writing ÷ p99 idle: **{ratio:.2f}**" if ratio else "p99 ratio: –",
        "",
        f"![search latency and write throughput]({MIXED_PLOT})",
        "",
        "## Writes",
        "",
        "| request | requests | items/s | errors | 503 retried | p50 ms | p95 ms | p99 ms | "
        "max ms |",
        "|---|---|---|---|---|---|---|---|---|",
        _request_row("upsert", writing["upserts"], _rate(writing["items_per_s"])),
        _request_row("delete", writing["deletes"], _rate(writing["ids_deleted_per_s"])),
        "",
        f"{writing['items_upserted']:,} items upserted and {writing['ids_deleted']:,} ids "
        f"deleted in {writing['wall_s']:.1f} s; deletes that found fewer ids than they named: "
        f"{writing['delete_not_found']}.",
        "",
        "## Read-your-writes",
        "",
        "| read after each acknowledged upsert | checked | visible at first read | "
        "not visible at first read | never visible | lag p50 ms | lag p99 ms | lag max ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    labels = {"get": "`items/get` of one id", "search": "k=1 search along its own vector"}
    for kind, label in labels.items():
        entry = writing["visibility"][kind]
        lines.append(
            f"| {label} | {entry['checked']} | {entry['visible_at_first_read']} | "
            f"{entry['not_visible_at_first_read']} | {entry['never_visible']} | "
            f"{_ms(entry['lag_p50_ms'])} | {_ms(entry['lag_p99_ms'])} | "
            f"{_ms(entry['lag_max_ms'])} |"
        )
    deletes = writing["delete_checks"]
    lines += [
        "",
        "The lag runs from the write's answer to the first answer that holds it: the reads' own "
        "round trip, since the service promises every search after the answer sees the write.",
        "",
        "| deletes checked | ids deleted | still in `items/get` | searches along a deleted "
        "vector | still first in search |",
        "|---|---|---|---|---|",
        f"| {deletes['deletes']} | {deletes['ids']} | {deletes['still_in_get']} | "
        f"{deletes['searched']} | {deletes['still_in_search']} |",
        "",
        f"**Totals**: {totals['errors']} errors, {totals['retried_503']} 503s retried, "
        f"{totals['not_visible_at_first_read']} writes not visible at first read "
        f"({totals['never_visible']} never), {totals['resurrected_deletes']} resurrected "
        "deletes.",
    ]
    final = report["collection"].get("final") or {}
    environment = report.get("environment", {})
    lines += [
        "",
        f"The collection at the end: {final.get('count')} items, seq {final.get('seq')}, "
        f"{final.get('rows')} rows since its base, base of {final.get('base_count')} "
        f"({final.get('index')}); {'kept' if report['collection'].get('kept') else 'dropped'}.",
        "",
        f"Client: {environment.get('cpu_count')} CPUs, {environment.get('platform')}, "
        f"Python {environment.get('python')}; load average before "
        f"{environment.get('load_average_before')}, after "
        f"{environment.get('load_average_after')}.",
        "",
    ]
    return "\n".join(lines)
