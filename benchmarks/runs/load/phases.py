"""The load run's phases: closed loop to saturation, then the open-loop levels, each level's
``load.json`` entry under its key (``closed.c<N>``, ``open.r<rate>``)."""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Any, Final

from benchmarks.drivers.level_summary import latencies_ok_ms, onset_summary, summarize
from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.load.levels import (
    LoadSession,
    closed_level,
    level_schedule,
    open_level,
    settle,
)
from benchmarks.runs.load.summary import rate_levels
from benchmarks.runs.phases import Phase
from benchmarks.runs.setup_error import BenchmarkSetupError

logger = logging.getLogger(__name__)


def closed_key(concurrency: int) -> str:
    """``closed`` key of a concurrency: ``c8``."""
    return f"c{concurrency}"


def open_key(rate: float) -> str:
    """``open`` key of an offered rate (requests/s): ``r48``, ``r2_5``."""
    text = f"{rate:.3f}".rstrip("0").rstrip(".")
    return "r" + text.replace(".", "_")


@dataclass
class LoadContext:
    """What the load run's phases share and accumulate.

    Attributes:
        config: the run's settings.
        session: the connection target, payloads and running request index.
        closed: closed level key → its ``load.json`` entry.
        open: open level key → its entry.
        latencies_ms: level key → its 2xx latencies, ms (for the plots).
        durations_s: level key → its wall time, s.
        skipped: why open levels were skipped (they join the report's warnings).
        saturation_qps: the best closed-level 2xx throughput (set by the closed phase).
    """

    config: LoadRunConfig
    session: LoadSession
    closed: dict[str, dict[str, Any]] = field(default_factory=dict)
    open: dict[str, dict[str, Any]] = field(default_factory=dict)
    latencies_ms: dict[str, list[float]] = field(default_factory=dict)
    durations_s: dict[str, float] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    saturation_qps: float = 0.0

    @property
    def unloaded(self) -> dict[str, Any]:
        """The entry of the lowest closed level (the service nearly unloaded)."""
        return self.closed[closed_key(min(self.config.closed_levels))]


async def closed_phase(context: LoadContext) -> None:
    """Each closed level in turn; the saturation throughput is the best one's 2xx qps.

    Raises:
        BenchmarkSetupError: no closed level got a 2xx answer.
    """
    config, closed = context.config, context.closed
    for concurrency in config.closed_levels:
        key = closed_key(concurrency)
        logger.info("closed loop: concurrency %d (≤ %.0f s)", concurrency, config.duration_s)
        began = time.perf_counter()
        run = await closed_level(context.session, concurrency)
        closed[key] = summarize(run)
        context.latencies_ms[key] = latencies_ok_ms(run)
        context.durations_s[key] = round(time.perf_counter() - began, 3)
        logger.info(
            "  %s: %.1f qps, p50 %s ms, p99 %s ms",
            key,
            closed[key]["qps"],
            closed[key]["p50_ms"],
            closed[key]["p99_ms"],
        )
    saturation = max(float(entry["qps"]) for entry in closed.values())
    if saturation <= 0:
        raise BenchmarkSetupError("no closed-loop level got a 2xx answer")
    context.saturation_qps = saturation


async def open_phase(context: LoadContext) -> None:
    """Each open level (given rates, or fractions of saturation), after the service settled."""
    config, saturation = context.config, context.saturation_qps
    unloaded_p50 = context.unloaded.get("p50_ms")
    unloaded_mean_s = float(context.unloaded.get("mean_ms") or 50.0) / 1000.0
    if config.open_rates is None:
        levels = rate_levels(saturation, config.open_fractions)
    else:
        levels = [(rate, None) for rate in config.open_rates]
    for number, (rate, fraction) in enumerate(levels):
        key = open_key(rate)
        settled = await settle(
            context.session, unloaded_p50 if isinstance(unloaded_p50, float) else None
        )
        expected = min(config.max_connections, math.ceil(rate * unloaded_mean_s * 2.0) + 2)
        logger.info(
            "open loop: %.1f req/s (%s× saturation; ≤ %.0f s)",
            rate,
            "–" if fraction is None else f"{fraction:g}",
            config.duration_s,
        )
        schedule = level_schedule(config, rate, [config.seed, number])
        if not any(offset >= config.open_warmup_s for offset in schedule):
            context.skipped.append(
                f"{key}: no Poisson arrival in the {config.duration_s:g} s after the warm-up; "
                "skipped"
            )
            logger.warning("%s", context.skipped[-1])
            continue
        began = time.perf_counter()
        run = await open_level(context.session, rate, schedule, expected)
        entry = summarize(run)
        entry["saturation_multiple"] = round(rate / saturation, 3)
        entry["settle_s"] = round(settled, 3)
        entry["onset"] = onset_summary(run.warmup)
        context.open[key] = entry
        context.latencies_ms[key] = latencies_ok_ms(run)
        context.durations_s[key] = round(time.perf_counter() - began, 3)
        logger.info(
            "  %s: %.1f qps, p50 %s ms, p99 %s ms, 503 %d, errors %d",
            key,
            entry["qps"],
            entry["p50_ms"],
            entry["p99_ms"],
            entry["rejected"],
            entry["errors"],
        )


PHASES: Final[tuple[Phase[LoadContext], ...]] = (
    Phase("closed", closed_phase),
    Phase("open", open_phase),
)
"""The load run's phases, in order (the open loop's rates follow from the closed loop's)."""
