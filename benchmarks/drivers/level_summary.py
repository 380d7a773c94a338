"""A driven level's numbers: the load run's per-level entry, and the quality latency entry.

Per level (:func:`summarize`, the load run's ``closed.c<N>`` / ``open.r<rate>``): p50/p95/p99/max
of the 2xx answers; ``qps`` = 2xx answers ÷ window; ``503`` answers (``rejected``, the service's
fast "overloaded" refusals) counted apart from other errors and with their own percentiles,
also from the moment a connection took them (``rejected_sent_p99_ms``: what the service and the
wire took, without the client's dispatch lag, which on a machine shared with the service is a few
ms at p99);
errors by status or transport failure kind; the client's CPU time per request
(``time.process_time``); and the Little's law check. :func:`latency_result` is the quality and
compare runs' smaller closed-loop entry (:class:`evaluation.metrics.latency.LatencyResult`).

Little's law (L = X·W)
    The client integrates the number of requests it has on the wire over the window
    (:class:`~benchmarks.drivers.samples.InFlightMeter`): its mean is L. X = answered-or-failed
    requests ÷ window, W = their mean latency as reported. Closed loop: ``c`` workers with no
    idle time keep ``c`` requests out, so X·W must be within 10 % of ``c``; less means the
    workers idled between requests (the client is the bottleneck). Open loop: X·W must be within
    10 % of the measured L; more means latency accrued off the wire, in the client (late
    dispatch or an exhausted pool); less means requests still on the wire when the level was
    cut (a growing backlog). Either disagreement sets ``littles_law_ok`` false and logs a
    warning.

Client-side bottleneck (``client_bound``, with a warning)
    Closed loop: the Little's law check failed (workers idled). Open loop: the client
    dispatched more than :data:`SEND_RATE_SHORTFALL` slower than the schedule, or its mean
    dispatch lag (intended send time → dispatched) exceeded :data:`LATE_DISPATCH_MS`. Either
    loop: the client used more than :data:`CLIENT_CPU_BUSY` of a core. A dispatch-lag p99 above
    :data:`LATE_DISPATCH_MS` only warns (the client process waited for a CPU now and then; the
    lag is in the latencies either way).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from benchmarks.drivers.samples import LevelRun, Sample
from evaluation.metrics.latency import LatencyResult, littles_law, percentile

logger = logging.getLogger(__name__)

LATE_DISPATCH_MS = 10.0
"""Open loop: a mean dispatch lag (intended send time → dispatched), ms, above which the client is
flagged as unable to sustain the offered rate; a p99 above it only warns."""
SEND_RATE_SHORTFALL = 0.05
"""Open loop: dispatching this share slower than the schedule flags the client."""
CLIENT_CPU_BUSY = 0.9
"""Client CPU use (cores, ``process_time`` ÷ wall) above which the client is flagged as busy;
the event loop runs on one core."""
CLIENT_BOUND_RATIO = 0.85
"""Quality latency: Little's law in-flight share of the concurrency below which the client is
flagged as the bottleneck (a warning)."""


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _outcomes(
    samples: Sequence[Sample],
) -> tuple[list[float], list[float], list[float], dict[str, int]]:
    """The latencies (ms, in sample order) of the 2xx answers, of the 503 answers and of every
    finished request; and the count of everything else by status code or failure kind."""
    ok_ms: list[float] = []
    rejected_ms: list[float] = []
    finished_ms: list[float] = []
    by_status: dict[str, int] = {}
    for sample in samples:
        latency = sample.latency_ms
        if sample.failure is not None:
            by_status[sample.failure] = by_status.get(sample.failure, 0) + 1
        elif 200 <= sample.status < 300:
            assert latency is not None
            ok_ms.append(latency)
        elif sample.status == 503:
            assert latency is not None
            rejected_ms.append(latency)
        else:
            key = str(sample.status)
            by_status[key] = by_status.get(key, 0) + 1
        if latency is not None:
            finished_ms.append(latency)
    return ok_ms, rejected_ms, finished_ms, by_status


def _rejected_from_send(samples: Sequence[Sample]) -> list[float]:
    """The 503 answers' times from the moment a connection took them, ms."""
    return [
        from_send
        for sample in samples
        if sample.failure is None
        and sample.status == 503
        and (from_send := sample.from_send_ms) is not None
    ]


def summarize(run: LevelRun) -> dict[str, object]:
    """The report entry of one level (times in ms, rates in requests/s).

    Keys: ``mode``, ``concurrency``, ``offered_rps`` (open: nominal rate), ``scheduled_rps``
    (open: the drawn schedule's rate), ``requests``, ``ok``, ``p50_ms``, ``p95_ms``,
    ``p99_ms``, ``max_ms``, ``mean_ms`` (2xx only), ``qps`` (2xx per second),
    ``answered_rps`` (every HTTP answer per second), ``errors`` (non-2xx non-503 answers and
    failures), ``errors_by_status`` (status code or failure kind → count), ``rejected`` (503
    answers), ``rejected_p50_ms``, ``rejected_p99_ms``, ``rejected_sent_p99_ms`` (from the
    moment a connection took the request), ``client_cpu_ms_per_request``,
    ``client_cpu_cores``, ``in_flight_mean``, ``in_flight_peak``, ``littles_law_xw``,
    ``littles_law_reference``, ``littles_law_ok``, ``dispatch_lag_p99_ms`` /
    ``pool_wait_p99_ms`` / ``backlogged`` (open loop), ``client_bound``, ``warnings``,
    ``wall_s``, ``connections``, ``resends``.
    """
    window = max(run.end - run.start, 1e-9)
    ok_ms, rejected_ms, finished_ms, by_status = _outcomes(run.samples)
    requests = len(run.samples)
    answered = sum(1 for sample in run.samples if sample.failure is None)
    throughput = len(finished_ms) / window
    mean_latency_s = (sum(finished_ms) / len(finished_ms) / 1000.0) if finished_ms else 0.0
    product, reference, agree = littles_law(
        run.mode, run.concurrency, run.in_flight_mean, throughput, mean_latency_s
    )
    cpu_cores = run.cpu_s / window
    warnings: list[str] = []
    label = f"{run.mode} {'c' + str(run.concurrency) if run.mode == 'closed' else run.rate}"
    if not agree:
        if run.mode == "closed":
            warnings.append(
                f"Little's law: X·W = {product:.2f} but {run.concurrency} workers; the workers "
                "idled between requests (client-side bottleneck)"
            )
        elif product > reference:
            warnings.append(
                f"Little's law: X·W = {product:.2f} but {run.in_flight_mean:.2f} on the wire; "
                "latency accrued in the client (late dispatch or every connection busy)"
            )
        else:
            warnings.append(
                f"Little's law: X·W = {product:.2f} but {run.in_flight_mean:.2f} on the wire; "
                "requests were still out when the level was cut (a backlog that kept growing)"
            )
    entry: dict[str, object] = {
        "mode": run.mode,
        "concurrency": run.concurrency,
    }
    client_bound = run.mode == "closed" and not agree
    if run.mode == "open":
        lag_ms = [(s.dispatched - s.intended) * 1000.0 for s in run.samples]
        pool_wait_ms = [(s.sent - s.dispatched) * 1000.0 for s in run.samples if s.sent]
        lag_p99 = percentile(lag_ms, 99.0)
        lag_mean = sum(lag_ms) / len(lag_ms) if lag_ms else 0.0
        scheduled_rps = (
            requests / run.scheduled_s if run.scheduled_s and run.scheduled_s > 0 else None
        )
        dispatch_span = max(s.dispatched for s in run.samples) - run.start if requests else 0.0
        dispatched_rps = requests / dispatch_span if dispatch_span > 0 else None
        entry |= {
            "offered_rps": run.rate,
            "scheduled_rps": None if scheduled_rps is None else round(scheduled_rps, 3),
            "dispatched_rps": None if dispatched_rps is None else round(dispatched_rps, 3),
            "dispatch_lag_mean_ms": _ms(lag_mean),
            "dispatch_lag_p99_ms": _ms(lag_p99),
            "pool_wait_p99_ms": _ms(percentile(pool_wait_ms, 99.0)),
            "backlogged": run.backlogged,
        }
        behind = (
            scheduled_rps is not None
            and dispatched_rps is not None
            and dispatched_rps < (1.0 - SEND_RATE_SHORTFALL) * scheduled_rps
        )
        if behind or lag_mean > LATE_DISPATCH_MS:
            client_bound = True
            warnings.append(
                f"the client could not send at the offered rate: dispatched "
                f"{dispatched_rps or 0.0:.1f}/s of {scheduled_rps or 0.0:.1f}/s scheduled, mean "
                f"lag {lag_mean:.1f} ms, at {cpu_cores:.2f} CPU cores of its own "
                "(client-side bottleneck; low own CPU means it waited for a CPU)"
            )
        elif lag_p99 is not None and lag_p99 > LATE_DISPATCH_MS:
            warnings.append(
                f"dispatch lag p99 {lag_p99:.1f} ms (mean {lag_mean:.1f} ms): the client was "
                f"sometimes late to send, at {cpu_cores:.2f} CPU cores of its own, so it waited "
                "for a CPU (machine shared with the service?); latency includes the lag"
            )
        if run.backlogged:
            warnings.append(
                f"{run.backlogged} requests found all {run.concurrency} connections busy and "
                "waited in the client (counted from their intended send time)"
            )
    if cpu_cores > CLIENT_CPU_BUSY:
        client_bound = True
        warnings.append(f"client used {cpu_cores:.2f} CPU cores: it may be the bottleneck")
    cpu_per_request = run.cpu_s * 1000.0 / requests if requests else None
    entry |= {
        "requests": requests,
        "ok": len(ok_ms),
        "p50_ms": _ms(percentile(ok_ms, 50.0)),
        "p95_ms": _ms(percentile(ok_ms, 95.0)),
        "p99_ms": _ms(percentile(ok_ms, 99.0)),
        "max_ms": _ms(max(ok_ms) if ok_ms else None),
        "mean_ms": _ms(sum(ok_ms) / len(ok_ms) if ok_ms else None),
        "qps": round(len(ok_ms) / window, 3),
        "answered_rps": round(answered / window, 3),
        "errors": sum(by_status.values()),
        "errors_by_status": dict(sorted(by_status.items())),
        "rejected": len(rejected_ms),
        "rejected_p50_ms": _ms(percentile(rejected_ms, 50.0)),
        "rejected_p99_ms": _ms(percentile(rejected_ms, 99.0)),
        "rejected_sent_p99_ms": _ms(percentile(_rejected_from_send(run.samples), 99.0)),
        "client_cpu_ms_per_request": _ms(cpu_per_request),
        "client_cpu_cores": round(cpu_cores, 4),
        "in_flight_mean": round(run.in_flight_mean, 4),
        "in_flight_peak": run.in_flight_peak,
        "littles_law_xw": round(product, 4),
        "littles_law_reference": round(reference, 4),
        "littles_law_ok": agree,
        "client_bound": client_bound,
        "warnings": warnings,
        "wall_s": round(window, 4),
        "connections": run.connections,
        "resends": run.resends,
    }
    for warning in warnings:
        logger.warning("%s: %s", label, warning)
    return entry


def onset_summary(samples: Sequence[Sample]) -> dict[str, object]:
    """The warm-up of an open level, apart from its steady state: ``requests``, ``ok``,
    ``p50_ms`` / ``p99_ms`` (2xx), ``rejected`` (503) and ``rejected_p99_ms``, ``errors``
    (anything else, failures included)."""
    ok_ms, rejected_ms, _, by_status = _outcomes(samples)
    return {
        "requests": len(samples),
        "ok": len(ok_ms),
        "p50_ms": _ms(percentile(ok_ms, 50.0)),
        "p99_ms": _ms(percentile(ok_ms, 99.0)),
        "rejected": len(rejected_ms),
        "rejected_p99_ms": _ms(percentile(rejected_ms, 99.0)),
        "errors": sum(by_status.values()),
    }


def latencies_ok_ms(run: LevelRun) -> list[float]:
    """The 2xx answers' latencies of a level, ms, in sample order (for plots)."""
    return _outcomes(run.samples)[0]


def latency_result(runs: Sequence[LevelRun], concurrency: int) -> LatencyResult:
    """The quality / compare entry of one closed-loop level measured in one or more chunks.

    Requests are every sample; errors every sample without a 2xx answer; latencies the 2xx
    answers'; wall time the chunks' windows added up; busy time every finished request's latency
    added up (Little's law: busy ÷ wall requests in flight). Logs a warning when that is under
    :data:`CLIENT_BOUND_RATIO` of the concurrency (the client may be the bottleneck).
    """
    parts = []
    for run in runs:
        ok_ms, _, finished_ms, _ = _outcomes(run.samples)
        parts.append(
            LatencyResult(
                concurrency=concurrency,
                requests=len(run.samples),
                errors=len(run.samples) - len(ok_ms),
                latencies_ms=tuple(ok_ms),
                wall_s=run.end - run.start,
                busy_s=sum(finished_ms) / 1000.0,
            )
        )
    result = LatencyResult.merged(concurrency, parts)
    if result.in_flight_mean < CLIENT_BOUND_RATIO * concurrency:
        logger.warning(
            "concurrency %d: only %.2f requests in flight on average (Little's law); "
            "the client may be the bottleneck",
            concurrency,
            result.in_flight_mean,
        )
    return result
