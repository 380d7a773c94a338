"""Bulk against single searches on a live service: the same caption queries, one run.

Sends the first ``--queries`` captions of ``<data>/coco-karpathy-captions/captions_<split>.csv``
to ``--url`` as text searches of ``--collection`` (k ``--k``, metadata off, as the replays ask),
first as single ``POST /v1/search`` requests with ``--single-concurrency`` in flight, then as
``POST /v1/search/bulk`` requests of ``--bulk-size`` searches with ``--bulk-concurrency`` in
flight; ``--repeats`` times, alternating, and prints the median queries/s of each and their ratio
as JSON (stdout, and ``--out``). Both answer every query: a refused one fails the run.

Example (after ``make demo``, with ``make serve`` running)::

    .venv/bin/python studies/bulk_vs_single.py --url http://127.0.0.1:8000 --queries 2000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path

from benchmarks.drivers.http_client import CrisscrossClient, search_body
from benchmarks.drivers.query_sides import text_query
from benchmarks.drivers.replay import map_bounded
from crisscross_client import CrisscrossError
from formats.karpathy import read_captions


async def _single(client: CrisscrossClient, texts: Sequence[str], args: argparse.Namespace) -> None:
    async def one(text: str) -> None:
        await client.search(
            text_query(text), args.collection, args.k, include_metadata=False, retry=False
        )

    await map_bounded(list(texts), one, args.single_concurrency, lambda _: None)


async def _bulk(client: CrisscrossClient, texts: Sequence[str], args: argparse.Namespace) -> None:
    parts = [texts[i : i + args.bulk_size] for i in range(0, len(texts), args.bulk_size)]

    async def one(part: Sequence[str]) -> None:
        bodies = [
            search_body(text_query(text), args.collection, args.k, include_metadata=False)
            for text in part
        ]
        for answer in await client.search_bulk(bodies):
            if isinstance(answer, CrisscrossError):
                raise answer

    await map_bounded(parts, one, args.bulk_concurrency, lambda _: None)


async def _run(args: argparse.Namespace) -> dict[str, object]:
    csv = args.data / "coco-karpathy-captions" / f"captions_{args.split}.csv"
    texts = [record.text for record in read_captions(csv)][: args.queries]
    rates: dict[str, list[float]] = {"single": [], "bulk": []}
    connections = max(args.single_concurrency, args.bulk_concurrency)
    async with CrisscrossClient(args.url, max_connections=connections) as client:
        await _single(client, texts[:50], args)  # warm-up
        for _ in range(args.repeats):
            for mode, send in (("single", _single), ("bulk", _bulk)):
                started = time.perf_counter()
                await send(client, texts, args)
                rates[mode].append(len(texts) / (time.perf_counter() - started))
    single, bulk = statistics.median(rates["single"]), statistics.median(rates["bulk"])
    return {
        "what": "text searches of one collection, k and metadata as the replays ask",
        "queries": len(texts),
        "k": args.k,
        "single_concurrency": args.single_concurrency,
        "bulk_size": args.bulk_size,
        "bulk_concurrency": args.bulk_concurrency,
        "repeats": args.repeats,
        "single_qps": rates["single"],
        "bulk_qps": rates["bulk"],
        "single_qps_median": round(single, 1),
        "bulk_qps_median": round(bulk, 1),
        "bulk_over_single": round(bulk / single, 2),
        "machine": f"{os.cpu_count()} CPUs, {platform.platform()}",
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--split", default="val")
    parser.add_argument("--collection", default="captions")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--single-concurrency", type=int, default=8)
    parser.add_argument("--bulk-size", type=int, default=256)
    parser.add_argument("--bulk-concurrency", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    result = asyncio.run(_run(args))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
