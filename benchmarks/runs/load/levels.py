"""One load level at a time over the raw keep-alive client: the requests, the first-answer
check, a closed level, the wait for the service to drain, an open level.

Queries are the split's captions, shuffled with the seed, as pre-serialised ``POST /v1/search``
requests (``{"query": {"text"}, "collection", "k", "include_metadata"}``: what an app sends).
Each closed-loop worker has its own connection; an open level hands requests to a LIFO pool of
at most ``max_connections``. Request numbers run on across levels, so the payloads cycle.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence

from benchmarks.drivers.closed_loop import closed_loop
from benchmarks.drivers.http_client import JsonObject
from benchmarks.drivers.open_loop import SenderPool, open_loop, poisson_schedule
from benchmarks.drivers.raw_http import Endpoint, RawConnection, RawSender, build_request
from benchmarks.drivers.samples import LevelRun
from benchmarks.drivers.sender import Sender, TransportFailure
from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.setup_error import BenchmarkSetupError

logger = logging.getLogger(__name__)


def search_body(
    text: str, collection: str, k: int, *, include_metadata: bool, variant: str | None
) -> bytes:
    """The JSON body of one text search, as bytes."""
    body: JsonObject = {"query": {"text": text}, "collection": collection, "k": k}
    body["include_metadata"] = include_metadata
    if variant is not None:
        body["variant"] = variant
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def search_payloads(
    endpoint: Endpoint,
    texts: Sequence[str],
    collection: str,
    k: int,
    *,
    include_metadata: bool = True,
    variant: str | None = None,
) -> list[bytes]:
    """One pre-serialised ``POST /v1/search`` request per text."""
    return [
        build_request(
            endpoint,
            "POST",
            "/v1/search",
            search_body(text, collection, k, include_metadata=include_metadata, variant=variant),
        )
        for text in texts
    ]


class LoadSession:
    """One run's connection target, payloads and running request index."""

    def __init__(self, config: LoadRunConfig, endpoint: Endpoint, payloads: list[bytes]) -> None:
        self.config = config
        self.endpoint = endpoint
        self.payloads = payloads
        self.next_index = 0

    def sender(self) -> RawSender:
        """A sender on a new (not yet connected) keep-alive connection."""
        return RawSender(
            RawConnection(self.endpoint, timeout_s=self.config.timeout_s), self.payloads
        )

    def payload(self, index: int) -> bytes:
        """The request bytes of request number ``index`` (payloads cycle)."""
        return self.payloads[index % len(self.payloads)]

    def take(self, count: int) -> int:
        """Reserve ``count`` request indices; returns the first."""
        first = self.next_index
        self.next_index += count
        return first


async def check_answer(session: LoadSession, count: int) -> None:
    """One search over the raw client, parsed in full: 200, ``k`` results, metadata.

    Raises:
        BenchmarkSetupError: the answer is not what the run will be measuring.
    """
    connection = RawConnection(session.endpoint, timeout_s=session.config.timeout_s)
    try:
        response = await connection.request(session.payload(0))
    except TransportFailure as failure:
        raise BenchmarkSetupError(f"the first search failed: {failure}") from failure
    finally:
        await connection.aclose()
    if response.status != 200:
        raise BenchmarkSetupError(
            f"the first search answered {response.status}: {response.body[:300]!r}"
        )
    try:
        answer = json.loads(response.body)
    except ValueError as error:
        raise BenchmarkSetupError(f"the first search's body is not JSON: {error}") from error
    results = answer.get("results") if isinstance(answer, dict) else None
    expected = min(session.config.k, count)
    if not isinstance(results, list) or len(results) != expected:
        raise BenchmarkSetupError(f"the first search returned no list of {expected} results")
    if session.config.include_metadata and not all(
        isinstance(hit, dict) and hit.get("metadata") for hit in results
    ):
        raise BenchmarkSetupError("the first search's results carry no metadata")


async def _connect(sender: Sender) -> None:
    if isinstance(sender, RawSender):
        await sender.connection.connect()


def _connection_counts(senders: Sequence[Sender]) -> tuple[int, int]:
    """(TCP connects, resends) so far over ``senders``' raw connections."""
    raw = [sender.connection for sender in senders if isinstance(sender, RawSender)]
    return sum(c.connects for c in raw), sum(c.resends for c in raw)


async def closed_level(session: LoadSession, concurrency: int) -> LevelRun:
    """One closed-loop level: connect, warm up (unrecorded), then measure."""
    config = session.config
    senders = [session.sender() for _ in range(concurrency)]
    try:
        for sender in senders:
            await _connect(sender)
        if config.warmup_requests:
            warm = max(config.warmup_requests, concurrency)
            await closed_loop(
                senders,
                max_requests=warm,
                duration_s=config.duration_s,
                first_index=session.take(warm),
            )
        connects, resends = _connection_counts(senders)
        run = await closed_loop(
            senders,
            max_requests=config.max_requests,
            duration_s=config.duration_s,
            first_index=session.take(config.max_requests),
        )
        connects_after, resends_after = _connection_counts(senders)
        run.connections, run.resends = connects_after - connects, resends_after - resends
        return run
    finally:
        for sender in senders:
            await sender.aclose()


async def settle(session: LoadSession, unloaded_p50_ms: float | None) -> float:
    """Probe with single requests until one answers within about the unloaded latency (the
    service drained what a previous level queued) or ``settle_s`` passes; returns seconds."""
    config = session.config
    target_ms = max(3.0 * (unloaded_p50_ms or 50.0), (unloaded_p50_ms or 50.0) + 20.0)
    started = time.perf_counter()
    connection = RawConnection(session.endpoint, timeout_s=max(config.timeout_s, config.settle_s))
    try:
        while True:
            began = time.perf_counter()
            try:
                response = await connection.request(session.payload(session.take(1)))
                ok = response.status == 200
            except TransportFailure:
                ok = False
            took_ms = (time.perf_counter() - began) * 1000.0
            waited = time.perf_counter() - started
            if ok and took_ms <= target_ms:
                return waited
            if waited >= config.settle_s:
                logger.warning(
                    "service still slow after %.0f s (last probe %.0f ms); going on",
                    waited,
                    took_ms,
                )
                return waited
    finally:
        await connection.aclose()


async def open_level(
    session: LoadSession, rate: float, schedule: list[float], expected_in_flight: int
) -> LevelRun:
    """One open-loop level on a pool prewarmed with ``expected_in_flight`` connections."""
    config = session.config
    pool = SenderPool(session.sender, config.max_connections)
    try:
        await pool.prewarm(expected_in_flight, _connect)
        connects, resends = _connection_counts(pool.senders)
        run = await open_loop(
            pool,
            schedule,
            rate=rate,
            drain_s=config.drain_s,
            first_index=session.take(len(schedule)),
            warmup_s=config.open_warmup_s,
        )
        connects_after, resends_after = _connection_counts(pool.senders)
        run.connections, run.resends = connects_after - connects, resends_after - resends
        return run
    finally:
        await pool.aclose()


def level_schedule(config: LoadRunConfig, rate: float, seed: list[int]) -> list[float]:
    """An open level's Poisson send times: the warm-up's (``open_warmup_s``), then at most
    ``max_requests`` over ``duration_s``."""
    drawn = poisson_schedule(rate, config.open_warmup_s + config.duration_s, 2**62, seed)
    warmup = [offset for offset in drawn if offset < config.open_warmup_s]
    measured = [offset for offset in drawn if offset >= config.open_warmup_s]
    return warmup + measured[: config.max_requests]
