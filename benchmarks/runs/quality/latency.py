"""The latency phase: closed-loop text searches (the captions, shuffled with the seed) at each
concurrency level, warm-up excluded, ``k = latency_k``, 503 not retried (an error)."""

from __future__ import annotations

import logging
import random
import time

from benchmarks.drivers.client_sender import client_senders
from benchmarks.drivers.closed_loop import warmed_closed_loop
from benchmarks.drivers.level_summary import latency_result
from benchmarks.drivers.query_sides import text_query
from benchmarks.runs.quality.context import QualityContext

logger = logging.getLogger(__name__)


async def latency_phase(context: QualityContext) -> None:
    """Closed-loop text searches (captions as queries, shuffled with the seed) per level."""
    if "latency" not in context.plan.run:
        return
    client, config, results = context.client, context.config, context.results
    texts = [caption.text for caption in context.data.captions]
    random.Random(config.seed).shuffle(texts)
    k = min(config.latency_k, context.served[config.collection])

    async def search(index: int) -> object:
        return await client.search(
            text_query(texts[index % len(texts)]),
            config.collection,
            k,
            variant=config.variant,
            retry=False,
            fields=config.search_fields,
        )

    for level in config.concurrency_levels:
        started = time.perf_counter()
        logger.info("latency: concurrency %d, %d requests", level, config.latency_requests)
        run = await warmed_closed_loop(
            client_senders(search, level),
            requests=config.latency_requests,
            warmup=config.warmup_requests,
        )
        measured = latency_result([run], level)
        results.latency[f"c{level}"] = measured.as_report()
        results.latencies_ms[f"c{level}"] = measured.latencies_ms
        results.durations_s[f"latency_c{level}"] = time.perf_counter() - started
