"""The hostile-clients run (``python -m benchmarks hostile``): does an honest client keep its
latency while another client holds slow heads and stalled bodies open?

1. Setup: the split's captions, shuffled with the seed, become pre-serialised
   ``POST /v1/search`` requests; wait for ``GET /readyz``; ``warmup_requests`` unrecorded.
2. ``alone``: the honest client searches one request after another for ``duration_s`` over
   one keep-alive connection (the light raw client), each latency timed on the client.
3. ``attacked``: a crowd (:mod:`benchmarks.drivers.hostile_clients`, a process of its own)
   opens ``stalled_bodies`` + ``slowloris`` connections and keeps them open, reopening each one
   the server closes; once it is open, the honest client searches for ``attack_s`` again.
4. The crowd stops. ``GET /metrics`` before and after gives what the service counted: its
   client refusals by reason, 503s and 408s.

``hostile.json``: per phase p50/p95/p99/max, requests and non-200 answers; the p99 ratio
attacked ÷ alone; the crowd's closes by kind (how many, with which status, held how long
against the configured deadline); the service's counters.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final

from benchmarks.drivers.hostile_clients import (
    SLOWLORIS,
    STALLED,
    CrowdPlan,
    CrowdProcess,
    CrowdResult,
)
from benchmarks.drivers.http_client import CrisscrossClient, search_body
from benchmarks.drivers.raw_http import Endpoint, RawConnection, build_request
from benchmarks.drivers.sender import TransportFailure
from benchmarks.runs.environment import environment_info, load_average
from benchmarks.runs.hostile.config import HostileRunConfig
from benchmarks.runs.setup_error import BenchmarkSetupError
from evaluation.metrics.latency import percentile
from formats.karpathy import read_captions
from formats.layout import captions_path

logger = logging.getLogger(__name__)

SCHEMA_VERSION: Final = 1
PAYLOADS: Final = 5000
"""Distinct captions the honest client cycles through."""
_COUNTER_LINE = re.compile(r"^(crisscross_[a-z_]+)(?:\{([^}]*)\})? ([0-9.e+-]+)$")
WATCHED_COUNTERS: Final = (
    "crisscross_client_refusals_total",
    "crisscross_requests_total",
    "crisscross_requests_refused_total",
)


@dataclass(frozen=True)
class HostileRun:
    """A finished run: ``report`` is ``hostile.json``; ``samples`` are the honest client's
    ``(seconds since the run started, latency ms, phase)`` and ``crowd_open`` the crowd's open
    connections over time, for the plot."""

    report: dict[str, Any]
    samples: list[tuple[float, float, str]]
    crowd_open: list[tuple[float, int]]


def _counters(text: str) -> dict[str, float]:
    """The watched counters of a Prometheus exposition, keyed ``name{labels}``."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        match = _COUNTER_LINE.match(line)
        if match and match.group(1) in WATCHED_COUNTERS:
            values[f"{match.group(1)}{{{match.group(2) or ''}}}"] = float(match.group(3))
    return values


def _counted(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """What grew between two readings (the non-zero differences)."""
    grown = {key: after[key] - before.get(key, 0.0) for key in after}
    return {key: value for key, value in sorted(grown.items()) if value}


def _summary(latencies: list[float], statuses: Counter[str], wall_s: float) -> dict[str, Any]:
    return {
        "requests": sum(statuses.values()),
        "ok": statuses.get("200", 0),
        "answers": dict(sorted(statuses.items())),
        "p50_ms": percentile(latencies, 50),
        "p95_ms": percentile(latencies, 95),
        "p99_ms": percentile(latencies, 99),
        "max_ms": max(latencies, default=None),
        "wall_s": wall_s,
    }


def _closes(result: CrowdResult, kind: str, deadline_s: float) -> dict[str, Any]:
    """How the server closed the crowd's connections of one kind."""
    closures = [closure for closure in result.closures if closure.kind == kind]
    held = [closure.held_s for closure in closures]
    statuses = Counter(str(closure.status) for closure in closures)
    return {
        "closed": len(closures),
        "statuses": dict(sorted(statuses.items())),
        "held_p50_s": percentile(held, 50),
        "held_max_s": max(held, default=None),
        "configured_deadline_s": deadline_s,
        "closed_within_deadline": sum(1 for value in held if value <= deadline_s + 1.0),
    }


class _Honest:
    """The honest client: sequential searches over one keep-alive connection."""

    def __init__(self, endpoint: Endpoint, payloads: list[bytes], timeout_s: float) -> None:
        self.connection = RawConnection(endpoint, timeout_s=timeout_s)
        self.payloads = payloads
        self.next = 0
        self.samples: list[tuple[float, float, str]] = []

    async def search(self) -> tuple[float, str]:
        payload = self.payloads[self.next % len(self.payloads)]
        self.next += 1
        started = time.perf_counter()
        try:
            status = str((await self.connection.request(payload)).status)
        except TransportFailure as failure:
            status = failure.kind
        return (time.perf_counter() - started) * 1000.0, status

    async def phase(
        self, name: str, seconds: float, origin: float
    ) -> tuple[list[float], Counter[str], float]:
        latencies: list[float] = []
        statuses: Counter[str] = Counter()
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            latency, status = await self.search()
            statuses[status] += 1
            if status == "200":
                latencies.append(latency)
            self.samples.append((time.monotonic() - origin, latency, name))
        return latencies, statuses, time.monotonic() - started


async def run_hostile(config: HostileRunConfig) -> HostileRun:
    """Measure the honest client alone, then beside the crowd (see the module)."""
    captions = read_captions(captions_path(config.data_dir, config.split))
    texts = [caption.text for caption in captions]
    random.Random(config.seed).shuffle(texts)
    endpoint = Endpoint.from_url(config.url)
    payloads = [
        build_request(
            endpoint,
            "POST",
            "/v1/search",
            json.dumps(search_body({"text": text}, config.collection, config.k)).encode(),
        )
        for text in texts[:PAYLOADS]
    ]
    async with CrisscrossClient(config.url) as client:
        await client.wait_ready(config.ready_timeout_s)
        metrics_before = _counters(await client.metrics_text())
        honest = _Honest(endpoint, payloads, config.timeout_s)
        for _ in range(config.warmup_requests):
            _, status = await honest.search()
            if status != "200":
                raise BenchmarkSetupError(f"a warm-up search answered {status}")
        origin = time.monotonic()
        logger.info("honest client alone for %.0f s", config.duration_s)
        alone = await honest.phase("alone", config.duration_s, origin)
        plan = CrowdPlan(
            url=config.url,
            stalled_bodies=config.stalled_bodies,
            slowloris=config.slowloris,
            declared_bytes=config.declared_bytes,
            sent_bytes=config.sent_bytes,
            line_interval_s=config.line_interval_s,
        )
        crowd = CrowdProcess(plan)
        crowd_open: list[tuple[float, int]] = []

        async def watch_crowd() -> None:
            while True:
                crowd_open.append((time.monotonic() - origin, crowd.open_now()))
                await asyncio.sleep(0.25)

        watcher = asyncio.create_task(watch_crowd())
        try:
            waited = time.monotonic()
            while crowd.open_now() < plan.size and time.monotonic() - waited < config.crowd_ready_s:
                await asyncio.sleep(0.1)
            opened = crowd.open_now()
            logger.info(
                "crowd open: %d of %d connections after %.1f s; honest client for %.0f s",
                opened,
                plan.size,
                time.monotonic() - waited,
                config.attack_s,
            )
            attacked = await honest.phase("attacked", config.attack_s, origin)
        finally:
            result = await asyncio.to_thread(crowd.stop)
            watcher.cancel()
        await honest.connection.aclose()
        metrics_after = _counters(await client.metrics_text())
    alone_summary = _summary(*alone)
    attacked_summary = _summary(*attacked)
    ratio = (
        attacked_summary["p99_ms"] / alone_summary["p99_ms"]
        if attacked_summary["p99_ms"] and alone_summary["p99_ms"]
        else None
    )
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "service": config.url,
        "settings": config.settings(),
        "honest": {"alone": alone_summary, "attacked": attacked_summary, "p99_ratio": ratio},
        "crowd": {
            "planned": plan.size,
            "open_at_start": opened,
            "peak_open": result.peak_open,
            "connect_failures": dict(result.connect_failures),
            "duration_s": result.duration_s,
            STALLED: _closes(result, STALLED, config.body_timeout_s),
            SLOWLORIS: _closes(result, SLOWLORIS, config.head_timeout_s),
        },
        "service_counted": _counted(metrics_before, metrics_after),
        "environment": {**environment_info(), "load_average": load_average()},
    }
    return HostileRun(report=report, samples=honest.samples, crowd_open=crowd_open)
