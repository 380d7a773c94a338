"""The load run's summary numbers: the offered rates of the open loop (fractions of saturation),
the overload check, and the in-process baseline the efficiency ratio divides by."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.runs.setup_error import BenchmarkSetupError

OVERLOAD_FACTOR = 2.0
"""The overload check looks at the open level nearest this multiple of saturation …"""
OVERLOAD_RANGE = (1.5, 3.0)
"""… among those within this range of multiples."""


def rate_levels(
    saturation_qps: float, fractions: Sequence[float]
) -> list[tuple[float, float | None]]:
    """Offered rates from fractions of saturation: (rate, fraction) pairs, rates rounded to
    whole requests/s (to 0.1 below 10/s), duplicates dropped."""
    levels: list[tuple[float, float | None]] = []
    seen: set[float] = set()
    for fraction in fractions:
        raw = saturation_qps * fraction
        rate = float(round(raw)) if raw >= 10 else max(0.1, round(raw, 1))
        if rate not in seen:
            seen.add(rate)
            levels.append((rate, fraction))
    return levels


def overload_check(
    open_entries: dict[str, dict[str, Any]],
    saturation_qps: float,
    unloaded_p99_ms: float | None,
) -> dict[str, Any] | None:
    """The ``overload_2x`` entry: the open level nearest 2× saturation (within 1.5–3×).

    ``ratio`` = admitted (2xx) p99 ÷ unloaded p99; ``rejected_share`` = 503 answers ÷ requests
    of the level. ``None`` when no level is in range.
    """
    if saturation_qps <= 0:
        return None
    candidates = [
        (abs(float(entry["offered_rps"]) / saturation_qps - OVERLOAD_FACTOR), key, entry)
        for key, entry in open_entries.items()
        if OVERLOAD_RANGE[0] <= float(entry["offered_rps"]) / saturation_qps <= OVERLOAD_RANGE[1]
    ]
    if not candidates:
        return None
    _, key, entry = min(candidates, key=lambda item: item[0])
    admitted = entry.get("p99_ms")
    requests = int(entry["requests"])
    ratio = (
        admitted / unloaded_p99_ms
        if isinstance(admitted, float) and unloaded_p99_ms and unloaded_p99_ms > 0
        else None
    )
    return {
        "level": key,
        "offered_rps": entry["offered_rps"],
        "saturation_multiple": round(float(entry["offered_rps"]) / saturation_qps, 3),
        "admitted_p99_ms": admitted,
        "unloaded_p99_ms": unloaded_p99_ms,
        "ratio": None if ratio is None else round(ratio, 3),
        "rejected_share": round(int(entry["rejected"]) / requests, 4) if requests else None,
        "rejected_p99_ms": entry.get("rejected_p99_ms"),
        "rejected_sent_p99_ms": entry.get("rejected_sent_p99_ms"),
        "errors": entry["errors"],
        "qps": entry["qps"],
    }


def read_inprocess_qps(path: Path) -> tuple[float, dict[str, Any]]:
    """``inprocess_qps`` and the whole object of a ``scripts/bench_inprocess.py`` JSON file.

    Raises:
        BenchmarkSetupError: unreadable, or no positive ``inprocess_qps``.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise BenchmarkSetupError(f"cannot read in-process results {path}: {error}") from error
    value = data.get("inprocess_qps") if isinstance(data, dict) else None
    if not isinstance(value, int | float) or value <= 0:
        raise BenchmarkSetupError(f"{path} holds no positive 'inprocess_qps'")
    return float(value), data
