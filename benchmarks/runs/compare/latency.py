"""The compare run's cost measurement: closed-loop text searches per level, the variants taking
turns chunk by chunk on the same queries.

With ``rounds`` > 1 each level's requests are cut into ``rounds`` chunks and the variants take
turns, the order rotating each round (A B, B A, A B, ...), so a slow minute of a shared machine
falls on all of them; ``rounds`` = 1 runs them back to back. Every variant of a round sees the
same caption texts. A variant's chunks are merged: percentiles over all its latencies,
throughput = successes ÷ the summed wall time of its chunks.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from benchmarks.drivers.client_sender import client_senders
from benchmarks.drivers.closed_loop import warmed_closed_loop
from benchmarks.drivers.http_client import CrisscrossClient
from benchmarks.drivers.level_summary import latency_result
from benchmarks.drivers.query_sides import text_query
from benchmarks.drivers.samples import LevelRun
from benchmarks.runs.compare.config import CompareConfig
from evaluation.metrics.latency import LatencyResult

logger = logging.getLogger(__name__)


async def interleaved_latency(
    client: CrisscrossClient,
    config: CompareConfig,
    variants: Sequence[str],
    texts: Sequence[str],
) -> tuple[dict[str, dict[str, LatencyResult]], list[list[str]]]:
    """Closed-loop text searches per level, the variants taking turns chunk by chunk.

    Returns:
        variant → level name ``c<N>`` → its merged chunks, and the variant order of every round
        (one list per level and round, in the order run).
    """
    chunks: dict[str, dict[str, tuple[int, list[LevelRun]]]] = {name: {} for name in variants}
    orders: list[list[str]] = []
    sizes = config.chunk_sizes()
    for level in config.concurrency_levels:
        name = f"c{level}"
        offset = 0
        for round_index, size in enumerate(sizes):
            shift = round_index % len(variants)
            order = list(variants[shift:]) + list(variants[:shift])
            orders.append(order)
            for variant in order:
                logger.info(
                    "latency %s: round %d, %s, %d requests", name, round_index + 1, variant, size
                )

                async def search(
                    index: int, variant: str = variant, offset: int = offset
                ) -> object:
                    return await client.search(
                        text_query(texts[(offset + index) % len(texts)]),
                        config.collection,
                        config.latency_k,
                        variant=variant,
                        retry=False,
                    )

                measured = await warmed_closed_loop(
                    client_senders(search, level), requests=size, warmup=config.warmup_requests
                )
                chunks[variant].setdefault(name, (level, []))[1].append(measured)
            # Every variant of a round saw the same texts; the next round moves on.
            offset += config.warmup_requests + size
    merged = {
        variant: {name: latency_result(runs, level) for name, (level, runs) in levels.items()}
        for variant, levels in chunks.items()
    }
    return merged, orders


def latency_schedule(config: CompareConfig, orders: list[list[str]]) -> dict[str, Any]:
    """``compare.json``'s ``latency_schedule``: how the variants took turns."""
    interleaved = config.rounds > 1 and len(config.variants) > 1
    return {
        "mode": "interleaved" if interleaved else "back_to_back",
        "rounds": config.rounds,
        "chunk_requests": config.chunk_sizes(),
        "warmup_per_chunk": config.warmup_requests,
        "orders": orders,
        "note": (
            "per level, the variants take turns in chunks, the order rotating each round; "
            "each variant's chunks are merged"
            if interleaved
            else "per level, each variant's requests run in one block, one variant after another"
        ),
    }
