"""The compare run's cost measurement: closed-loop text searches per level, the rows (variants or
lever settings) taking turns chunk by chunk on the same queries.

With ``rounds`` > 1 each level's requests are cut into ``rounds`` chunks and the rows take
turns, the order rotating each round (A B, B A, A B, ...), so a slow minute of a shared machine
falls on all of them; ``rounds`` = 1 runs them back to back. Every row of a round sees the
same caption texts, under the same load (level, chunk sizes, warm-up); each search carries its
row's variant and levers. A row's chunks are merged: percentiles over all its latencies,
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
from benchmarks.runs.compare.levers import LeverSetting
from evaluation.metrics.latency import LatencyResult

logger = logging.getLogger(__name__)


async def interleaved_latency(
    client: CrisscrossClient,
    config: CompareConfig,
    rows: Sequence[LeverSetting],
    texts: Sequence[str],
    modes: dict[str, set[str]] | None = None,
) -> tuple[dict[str, dict[str, LatencyResult]], list[list[str]]]:
    """Closed-loop text searches per level, the rows taking turns chunk by chunk.

    Args:
        client: an open client.
        config: the run's settings (levels, chunks, warm-up, ``latency_k``, the latency
            collection).
        rows: the rows timed, each with its variant named.
        texts: the query texts, in the order sent.
        modes: when given, row name → the ``mode`` values its answers named (filled in).

    Returns:
        row name → level name ``c<N>`` → its merged chunks, and the row order of every round
        (one list per level and round, in the order run).
    """
    names = [row.name for row in rows]
    by_name = {row.name: row for row in rows}
    fields = {row.name: row.search_fields() or None for row in rows}
    chunks: dict[str, dict[str, tuple[int, list[LevelRun]]]] = {name: {} for name in names}
    orders: list[list[str]] = []
    sizes = config.chunk_sizes()
    for level in config.concurrency_levels:
        name = f"c{level}"
        offset = 0
        for round_index, size in enumerate(sizes):
            shift = round_index % len(names)
            order = names[shift:] + names[:shift]
            orders.append(order)
            for row in order:
                logger.info(
                    "latency %s: round %d, %s, %d requests", name, round_index + 1, row, size
                )

                async def search(index: int, row: str = row, offset: int = offset) -> object:
                    answer = await client.search(
                        text_query(texts[(offset + index) % len(texts)]),
                        config.latency_collection,
                        config.latency_k,
                        variant=by_name[row].variant,
                        retry=False,
                        fields=fields[row],
                    )
                    if modes is not None and answer.mode is not None:
                        modes.setdefault(row, set()).add(answer.mode)
                    return answer

                measured = await warmed_closed_loop(
                    client_senders(search, level), requests=size, warmup=config.warmup_requests
                )
                chunks[row].setdefault(name, (level, []))[1].append(measured)
            # Every row of a round saw the same texts; the next round moves on.
            offset += config.warmup_requests + size
    merged = {
        row: {name: latency_result(runs, level) for name, (level, runs) in levels.items()}
        for row, levels in chunks.items()
    }
    return merged, orders


def latency_schedule(config: CompareConfig, orders: list[list[str]]) -> dict[str, Any]:
    """``compare.json``'s ``latency_schedule``: how the rows took turns."""
    interleaved = config.rounds > 1 and len(config.rows()) > 1
    what = "setting" if config.by_settings else "variant"
    return {
        "mode": "interleaved" if interleaved else "back_to_back",
        "rounds": config.rounds,
        "chunk_requests": config.chunk_sizes(),
        "warmup_per_chunk": config.warmup_requests,
        "orders": orders,
        "note": (
            f"per level, the {what}s take turns in chunks, the order rotating each round; "
            f"each {what}'s chunks are merged"
            if interleaved
            else f"per level, each {what}'s requests run in one block, one {what} after another"
        ),
    }
