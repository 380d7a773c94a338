"""Bare in-process throughput of a text search: encode + faiss, no HTTP, no service.

The same work a ``POST /v1/search`` text query does at its core — embed the caption with the
variant's ONNX text tower (``encoders.text_encoder.OnnxTextEncoder``), search the bundle's
``captions`` faiss index for the top ``k``, re-sort by (score desc, row asc) and look up the ids
and metadata — for the same shuffled captions the load test sends (``benchmarks load``, same
``--seed``). The ratio of the service's saturation throughput to this number is its
*efficiency*: what HTTP, JSON, validation and scheduling cost.

Modes (each ≤ ``--queries`` queries and ≤ ``--max-seconds``, after ``--warmup`` untimed ones):

- ``single``: one thread, one query after another (per-query latency without contention).
- ``pool``: ``--pool-threads`` threads (default 40: anyio's default thread limiter, which bounds
  the worker threads the service's ``run_in_threadpool`` uses, i.e. at most that many requests
  encode or search at once), each running queries back to back — what the service does under a
  closed-loop load of that many clients.
- ``sweep``: the same for each of ``--sweep-threads`` (default: the CPU count).

Each mode runs once per onnxruntime intra-op thread count of ``--intra-op-threads`` (default
``0,1``: the runtime's one thread per core, and the service's one per encoder worker; which is
faster depends on the mode and the machine). ``inprocess_qps`` is the best queries/s of all,
the strictest baseline. Output: JSON (stdout, and ``--out``)::

    {"inprocess_qps", "best_mode", "modes": {"intra<n>.single": {...}, "intra<n>.pool": {...},
     "intra<n>.t<threads>": {...}, ...}, "variant", "fingerprint", "providers",
     "intra_op_threads" (the list), "faiss_threads", "bundle", "bundle_version",
     "collection", "count", "dim", "factory", "k", "queries_available", "seed",
     "environment"}
    mode entry: {"intra_op_threads", "threads", "queries", "wall_s", "qps", "ms_per_query"
                 (mean wall time of one query in that mode), "p50_ms", "p99_ms",
                 "encode_ms_mean", "search_ms_mean", "cpu_s" (process CPU over the mode),
                 "cpu_cores" (cpu_s ÷ wall_s)}

Example::

    .venv/bin/python scripts/bench_inprocess.py --variant artifacts/variants/minilm-l6-v2 \\
        --bundle artifacts/bundles/coco-captions --data ../shared/data --split val \\
        --queries 500 --out reports/bench/inprocess.json
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import logging
import os
import platform
import random
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import read_captions
from formats.layout import captions_path
from storage.reader import LoadedCollection, load_bundle, resolve_current

ANYIO_DEFAULT_THREADS = 40
"""anyio's default worker-thread limit (``to_thread.current_default_thread_limiter``)."""


def search_once(
    encoder: OnnxTextEncoder, collection: LoadedCollection, text: str, k: int
) -> tuple[float, float, float]:
    """One query: (total, encode, search) seconds. The result (ids, metadata) is built and
    dropped, as the service would build its answer."""
    started = time.perf_counter()
    vector = encoder.encode_texts([text])
    encoded = time.perf_counter()
    scores, rows = collection.index.search(np.ascontiguousarray(vector, dtype=np.float32), k)
    valid = rows[0] >= 0
    kept_scores, kept_rows = scores[0][valid], rows[0][valid].astype(np.int64)
    order = np.lexsort((kept_rows, -kept_scores))
    hits = [
        (collection.ids[row], float(score), collection.metadata[row])
        for row, score in zip(kept_rows[order], kept_scores[order], strict=True)
    ]
    done = time.perf_counter()
    if len(hits) != min(k, collection.count):
        raise RuntimeError(f"expected {min(k, collection.count)} hits, got {len(hits)}")
    return done - started, encoded - started, done - encoded


def run_mode(
    encoder: OnnxTextEncoder,
    collection: LoadedCollection,
    texts: Sequence[str],
    *,
    threads: int,
    queries: int,
    max_seconds: float,
    k: int,
    first: int,
    faiss_threads: int,
) -> dict[str, Any]:
    """``threads`` threads run queries back to back (closed loop) until ``queries`` are done or
    ``max_seconds`` passed, each with faiss capped at ``faiss_threads`` OpenMP threads (0: faiss's
    default); queries/s and per-query times (ms)."""
    counter = itertools.count()  # next() on itertools.count is atomic under the GIL
    timings: list[tuple[float, float, float]] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    started = time.perf_counter()
    deadline = started + max_seconds

    def worker() -> None:
        local: list[tuple[float, float, float]] = []
        if faiss_threads > 0:  # per thread in OpenMP, as on the service's search workers
            faiss.omp_set_num_threads(faiss_threads)
        try:
            while True:
                index = next(counter)
                if index >= queries or time.perf_counter() >= deadline:
                    break
                local.append(
                    search_once(encoder, collection, texts[(first + index) % len(texts)], k)
                )
        except BaseException as error:  # re-raised in the main thread
            errors.append(error)
        with lock:
            timings.extend(local)

    cpu_started = time.process_time()
    pool = [threading.Thread(target=worker, name=f"bench-{n}") for n in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    wall = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    if errors:
        raise errors[0]
    totals = np.asarray([t[0] for t in timings]) * 1000.0
    return {
        "threads": threads,
        "queries": len(timings),
        "wall_s": round(wall, 4),
        "qps": round(len(timings) / wall, 3) if wall > 0 else None,
        "ms_per_query": round(float(totals.mean()), 3) if timings else None,
        "p50_ms": round(float(np.percentile(totals, 50)), 3) if timings else None,
        "p99_ms": round(float(np.percentile(totals, 99)), 3) if timings else None,
        "encode_ms_mean": round(float(np.mean([t[1] for t in timings])) * 1000.0, 3)
        if timings
        else None,
        "search_ms_mean": round(float(np.mean([t[2] for t in timings])) * 1000.0, 3)
        if timings
        else None,
        "cpu_s": round(cpu, 4),
        "cpu_cores": round(cpu / wall, 3) if wall > 0 else None,
    }


def _int_list(text: str, *, minimum: int, required: bool) -> list[int]:
    """Comma-separated integers ≥ ``minimum``, duplicates dropped; at least one if
    ``required``."""
    values = [int(part) for part in text.split(",") if part.strip()]
    if (required and not values) or any(value < minimum for value in values):
        raise argparse.ArgumentTypeError(f"expected integers ≥ {minimum}: {text!r}")
    return list(dict.fromkeys(values))


def build_parser() -> argparse.ArgumentParser:
    """The script's arguments."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--variant", type=Path, default=Path("artifacts/variants/minilm-l6-v2"), help="variant dir"
    )
    parser.add_argument(
        "--bundle",
        type=Path,
        default=Path("artifacts/bundles/coco-captions"),
        help="bundle dir holding CURRENT (its CURRENT version is loaded)",
    )
    parser.add_argument("--collection", default="captions", help="collection to search")
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("CRISSCROSS_DATA_DIR", "../shared/data")),
        help="data folder with coco-karpathy-captions/ (the queries)",
    )
    parser.add_argument("--split", default="val", help="captions_<split>.csv (val)")
    parser.add_argument("--queries", type=int, default=500, help="timed queries per mode (500)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed queries first (20)")
    parser.add_argument("--max-seconds", type=float, default=60.0, help="per mode, s (60)")
    parser.add_argument(
        "--pool-threads",
        type=int,
        default=ANYIO_DEFAULT_THREADS,
        help=f"threads of the pool mode (the service's thread limit, {ANYIO_DEFAULT_THREADS})",
    )
    parser.add_argument(
        "--sweep-threads",
        type=functools.partial(_int_list, minimum=1, required=False),
        default=[os.cpu_count() or 1],
        help="further thread counts to measure (the CPU count)",
    )
    parser.add_argument("--k", type=int, default=10, help="results per query (10)")
    parser.add_argument(
        "--faiss-threads",
        type=int,
        default=1,
        help="faiss OpenMP threads per querying thread (1, as the service; 0 = faiss's default)",
    )
    parser.add_argument("--providers", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument(
        "--intra-op-threads",
        type=functools.partial(_int_list, minimum=0, required=True),
        default=[0, 1],
        help=(
            "onnxruntime threads per session, each measured (0,1: 0 = one per core, 1 = the "
            "service's one per encoder worker)"
        ),
    )
    parser.add_argument("--seed", type=int, default=0, help="caption order (0, as the load test)")
    parser.add_argument("--no-verify", action="store_true", help="skip bundle hash checks")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run every mode and print (and optionally write) the JSON."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    log = logging.getLogger("bench_inprocess")
    if args.queries < 1 or args.pool_threads < 1 or args.k < 1:
        log.error("--queries, --pool-threads and --k must be ≥ 1")
        return 2
    texts = [caption.text for caption in read_captions(captions_path(args.data, args.split))]
    random.Random(args.seed).shuffle(texts)
    bundle = load_bundle(resolve_current(args.bundle), verify=not args.no_verify)
    if args.collection not in bundle.collections:
        log.error("bundle %s has no %r collection", bundle.path, args.collection)
        return 1
    collection = bundle.collections[args.collection]
    k = min(args.k, collection.count)
    next_query = 0
    modes: dict[str, dict[str, Any]] = {}
    for intra_op_threads in args.intra_op_threads:
        encoder = OnnxTextEncoder(args.variant, args.providers, intra_op_threads)
        if bundle.variant_fingerprint != encoder.fingerprint:
            log.error("bundle %s was built by another variant than %s", bundle.path, args.variant)
            return 1
        for index in range(args.warmup):
            search_once(encoder, collection, texts[index % len(texts)], k)
        next_query += args.warmup
        names = {1: "single", args.pool_threads: "pool"} | {
            threads: f"t{threads}"
            for threads in args.sweep_threads
            if threads not in (1, args.pool_threads)
        }
        for threads, name in names.items():
            log.info(
                "intra-op %d, %d thread(s), ≤ %d queries", intra_op_threads, threads, args.queries
            )
            entry = {"intra_op_threads": intra_op_threads} | run_mode(
                encoder,
                collection,
                texts,
                threads=threads,
                queries=args.queries,
                max_seconds=args.max_seconds,
                k=k,
                first=next_query,
                faiss_threads=args.faiss_threads,
            )
            next_query += args.queries
            log.info(
                "  %.1f queries/s, %.2f ms/query", entry["qps"] or 0.0, entry["ms_per_query"] or 0.0
            )
            modes[f"intra{intra_op_threads}.{name}"] = entry
    best_mode, best = max(modes.items(), key=lambda item: item[1]["qps"] or 0.0)
    result = {
        "inprocess_qps": best["qps"],
        "best_mode": best_mode,
        "modes": modes,
        "variant": encoder.name,
        "fingerprint": encoder.fingerprint,
        "providers": encoder.providers,
        "intra_op_threads": args.intra_op_threads,
        "faiss_threads": args.faiss_threads,
        "bundle": bundle.name,
        "bundle_version": bundle.version,
        "collection": collection.name,
        "count": collection.count,
        "dim": collection.dim,
        "factory": collection.factory,
        "k": k,
        "queries_available": len(texts),
        "seed": args.seed,
        "environment": {
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "load_average": [round(value, 2) for value in os.getloadavg()],
        },
    }
    text = json.dumps(result, indent=2, allow_nan=False) + "\n"
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
