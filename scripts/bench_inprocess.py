"""Bare in-process throughput of a text search through the service's own engine: no HTTP.

What a ``POST /v1/search`` text query costs at its core, done by the service's own code in one
process and nothing around it:

- the bundle is loaded with :func:`storage.reader.load_bundle` and its collection served as
  ``service/lifecycle/loading.py`` serves it: a
  :class:`service.engine.collection.catalog.ServedCollection` with the manifest's search parameters
  set on its index, the index placed by the ``faiss_device`` setting
  (:func:`service.lifecycle.index_placement.place_index`) and, on the CPU, the exact scan
  :class:`service.engine.rank.exact_scan.ExactScan` attached (``flat_scan``, on ``blas_threads``
  threads);
- captions are embedded by the variant's ONNX text tower
  (:class:`encoders.text_encoder.OnnxTextEncoder`) in the batches the service's batcher forms:
  at most its ``max_batch_size`` captions per encoder call (16 on the CPU, 64 on a GPU, unless
  ``CRISSCROSS_MAX_BATCH_SIZE`` says otherwise; ``--batch-size`` overrides), one caption per
  request, every row checked finite;
- each batch is then searched the way the service's batch follow-ups search it
  (``service.engine.search.page_executor`` ``PageRun``): a batch of one with
  :func:`service.engine.collection.knn.nearest`, a larger one with one
  :func:`service.engine.collection.knn.nearest_many` call for all its captions; the tie rule, the
  rescoring and the hits with their ids and metadata are the service's.

The process is set up as a server process is (BLAS threads, the tokenizers' pool, the
interpreter's switch interval: :func:`service.runtime.process_threads.tune_process_threads`),
from the service's settings: ``CRISSCROSS_*`` variables apply here as they apply to the service
that ``make bench`` starts next. The queries are the captions the load test sends, in its order
(``benchmarks load``, same ``--seed``). The ratio of the service's saturation throughput to this
number is its *efficiency*: what HTTP, JSON, validation, admission and the batcher's queue cost,
with the same search engine on both sides.

Modes (each ≤ ``--queries`` queries and ≤ ``--max-seconds``, after ``--warmup`` untimed ones):

- ``single``: one thread, batches of one caption: a lone client, one query after another
  (per-query latency without contention or batching).
- ``pool``: ``--pool-threads`` threads (default: the service's ``encoder_workers``, 2), each
  running full batches back to back: the service's encoder threads while requests queue for
  them (a closed loop of many clients), the best batches the service can form.
- ``sweep``: the same for each of ``--sweep-threads`` (default: the CPU count).

A query's time is its batch's (it waits for the whole batch): the encoder call, then the search.
Each mode runs once per onnxruntime intra-op thread count of ``--intra-op-threads`` (default
``0,1``: the runtime's one thread per core, and the service's one per encoder worker; which is
faster depends on the mode and the machine). ``inprocess_qps`` is the best queries/s of all,
the strictest baseline. Output: JSON (stdout, and ``--out``)::

    {"inprocess_qps", "best_mode", "modes": {"intra<n>.single": {...}, "intra<n>.pool": {...},
     "intra<n>.t<threads>": {...}, ...}, "variant", "fingerprint", "providers",
     "intra_op_threads" (the list), "faiss_threads", "bundle", "bundle_version",
     "collection", "count", "dim", "factory", "k", "queries_available", "seed",
     "engine" {"batch_size", "encoder_workers", "index_device", "exact_scan", "scan_threads",
     "search_params"}, "environment"}
    mode entry: {"intra_op_threads", "threads", "batch_size", "batches", "queries", "wall_s",
                 "qps", "ms_per_query" (mean time of one query's batch in that mode), "p50_ms",
                 "p99_ms", "encode_ms_mean", "search_ms_mean", "cpu_s" (process CPU over the
                 mode), "cpu_cores" (cpu_s ÷ wall_s)}

Example::

    .venv/bin/python scripts/bench_inprocess.py --variant artifacts/variants/minilm-l6-v2 \\
        --bundle artifacts/bundles/coco-captions --data ../shared/data --split val \\
        --queries 500 --out reports/bench/inprocess.json
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
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
from service.engine.collection.catalog import ServedCollection
from service.engine.collection.knn import SearchHit, nearest, nearest_many
from service.engine.rank.exact_scan import ExactScan
from service.engine.rank.search_params import EffectiveParams, on_disk, resolve
from service.lifecycle.batch_defaults import batch_limits
from service.lifecycle.index_placement import place_index
from service.runtime.process_threads import tune_process_threads
from service.settings import Settings
from storage.reader import LoadedBundle, LoadedCollection, load_bundle, resolve_current

Timing = tuple[int, float, float, float]
"""One batch: (captions, total, encode, search seconds)."""


def served_collection(
    bundle: LoadedBundle, collection: LoadedCollection, settings: Settings
) -> ServedCollection:
    """``collection`` as the service serves it (``service/lifecycle/loading.py``): the
    manifest's search parameters set on its index, the index placed by ``faiss_device``, and on
    the CPU the exact scan the ``flat_scan`` setting asks for (None: numpy's product)."""
    for key, value in sorted(collection.search_params.items()):
        if isinstance(value, str):
            raise RuntimeError(f"search parameter {key}={value!r}: only numbers can be set")
        faiss.ParameterSpace().set_index_parameter(collection.index, key, float(value))
    placement = place_index(
        collection.index,
        settings.faiss_device,
        search_params=collection.search_params,
        on_disk=on_disk(collection),
    )
    scan = None
    if settings.flat_scan != "numpy" and placement.device == "cpu":
        scan = ExactScan(threads=settings.blas_threads)
    return ServedCollection(
        variant=bundle.variant_name,
        bundle=bundle.name,
        bundle_version=bundle.version,
        collection=dataclasses.replace(collection, index=placement.index),
        index_device=placement.device,
        scan=scan,
    )


@dataclasses.dataclass(frozen=True)
class EngineSearch:
    """The search of a batch of text queries, as the service's batch follow-ups run it: one
    page of ``k`` hits per query, no filter, no exclusions, the collection's default search
    parameters."""

    served: ServedCollection
    k: int
    faiss_threads: int
    params: EffectiveParams

    def __call__(self, rows: np.ndarray) -> list[list[SearchHit]]:
        """The hits of every query row (float32 ``[n, dim]``): one :func:`nearest` for a lone
        query, one :func:`nearest_many` for several (a group of the batch's follow-ups)."""
        if len(rows) == 1:
            hits = nearest(
                self.served, rows[0], k=self.k, faiss_threads=self.faiss_threads, params=self.params
            )
            return [hits]
        pages = [(self.k, 0, ())] * len(rows)
        return nearest_many(self.served, rows, pages, self.faiss_threads, self.params)


def run_batch(encoder: OnnxTextEncoder, search: EngineSearch, texts: Sequence[str]) -> Timing:
    """One batch: encode ``texts`` in one encoder call, check the rows as the batcher does,
    search them; (captions, total, encode, search) seconds. The hits are built and dropped, as
    the service would build its answers."""
    started = time.perf_counter()
    rows = np.ascontiguousarray(encoder.encode_texts(texts), dtype=np.float32)
    if rows.shape != (len(texts), search.served.collection.dim) or not np.isfinite(rows).all():
        raise RuntimeError(f"the encoder gave no finite [{len(texts)}, dim] rows")
    encoded = time.perf_counter()
    found = search(rows)
    done = time.perf_counter()
    expected = min(search.k, search.served.collection.count)
    if len(found) != len(texts) or any(len(hits) != expected for hits in found):
        raise RuntimeError(f"expected {expected} hits for each of {len(texts)} queries")
    return len(texts), done - started, encoded - started, done - encoded


class QueryFeed:
    """The queries of one mode, handed out a batch at a time to its threads: ``limit`` captions
    from ``first`` on (wrapping around ``texts``), until ``deadline`` (``perf_counter``)."""

    def __init__(self, texts: Sequence[str], first: int, limit: int, deadline: float) -> None:
        self._texts, self._first, self._limit, self._deadline = texts, first, limit, deadline
        self._taken = 0
        self._lock = threading.Lock()

    def take(self, size: int) -> list[str]:
        """Up to ``size`` next captions; none once the limit or the deadline is reached."""
        with self._lock:
            if self._taken >= self._limit or time.perf_counter() >= self._deadline:
                return []
            count = min(size, self._limit - self._taken)
            start = self._first + self._taken
            self._taken += count
        return [self._texts[(start + n) % len(self._texts)] for n in range(count)]


def _mean_ms(values: np.ndarray) -> float | None:
    return round(float(values.mean()) * 1000.0, 3) if len(values) else None


def run_mode(
    encoder: OnnxTextEncoder,
    search: EngineSearch,
    texts: Sequence[str],
    *,
    threads: int,
    batch_size: int,
    queries: int,
    max_seconds: float,
    first: int,
) -> dict[str, Any]:
    """``threads`` threads run batches of ``batch_size`` captions back to back (closed loop)
    until ``queries`` captions are done or ``max_seconds`` passed; queries/s and per-query
    times (ms; a query's time is its batch's)."""
    timings: list[Timing] = []
    lock = threading.Lock()
    errors: list[BaseException] = []
    started = time.perf_counter()
    feed = QueryFeed(texts, first, queries, started + max_seconds)

    def worker() -> None:
        local: list[Timing] = []
        try:
            while batch := feed.take(batch_size):
                local.append(run_batch(encoder, search, batch))
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
    sizes = np.asarray([t[0] for t in timings], dtype=np.int64)
    # One entry per query: the times of the batch it was in.
    total, encode, searched = (
        np.repeat(np.asarray([t[column] for t in timings], dtype=np.float64), sizes)
        for column in (1, 2, 3)
    )
    done = int(sizes.sum())
    return {
        "threads": threads,
        "batch_size": batch_size,
        "batches": len(timings),
        "queries": done,
        "wall_s": round(wall, 4),
        "qps": round(done / wall, 3) if wall > 0 else None,
        "ms_per_query": _mean_ms(total),
        "p50_ms": round(float(np.percentile(total, 50)) * 1000.0, 3) if done else None,
        "p99_ms": round(float(np.percentile(total, 99)) * 1000.0, 3) if done else None,
        "encode_ms_mean": _mean_ms(encode),
        "search_ms_mean": _mean_ms(searched),
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
        default=None,
        help="threads of the pool mode (the service's encoder_workers setting, 2)",
    )
    parser.add_argument(
        "--sweep-threads",
        type=functools.partial(_int_list, minimum=1, required=False),
        default=[os.cpu_count() or 1],
        help="further thread counts to measure (the CPU count)",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=None,
        help=(
            "captions per encoder call in the pool and sweep modes (the service's "
            "max_batch_size for where the encoder runs: 16 on the CPU, 64 on a GPU)"
        ),
    )
    parser.add_argument("--k", type=int, default=10, help="results per query (10)")
    parser.add_argument(
        "--faiss-threads",
        type=int,
        default=None,
        help="faiss OpenMP threads per search (the service's faiss_threads, 1; 0: faiss's own)",
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
    settings = Settings()
    pool_threads = settings.encoder_workers if args.pool_threads is None else args.pool_threads
    faiss_threads = settings.faiss_threads if args.faiss_threads is None else args.faiss_threads
    if args.queries < 1 or pool_threads < 1 or args.k < 1 or faiss_threads < 0:
        log.error("--queries, --pool-threads and --k must be ≥ 1, --faiss-threads ≥ 0")
        return 2
    if args.batch_size is not None and args.batch_size < 1:
        log.error("--batch-size must be ≥ 1")
        return 2
    # Before the first text is tokenized, as a server process does when it starts.
    tune_process_threads(
        settings.blas_threads, settings.gil_switch_interval_ms, settings.tokenizer_parallelism
    )
    texts = [caption.text for caption in read_captions(captions_path(args.data, args.split))]
    random.Random(args.seed).shuffle(texts)
    bundle = load_bundle(resolve_current(args.bundle), verify=not args.no_verify)
    if args.collection not in bundle.collections:
        log.error("bundle %s has no %r collection", bundle.path, args.collection)
        return 1
    served = served_collection(bundle, bundle.collections[args.collection], settings)
    collection = served.collection
    k = min(args.k, collection.count)
    search = EngineSearch(served, k, faiss_threads, resolve(collection, None, "search_params"))
    next_query = 0
    batch_size = 1
    modes: dict[str, dict[str, Any]] = {}
    for intra_op_threads in args.intra_op_threads:
        encoder = OnnxTextEncoder(args.variant, args.providers, intra_op_threads)
        if bundle.variant_fingerprint != encoder.fingerprint:
            log.error("bundle %s was built by another variant than %s", bundle.path, args.variant)
            return 1
        batch_size = args.batch_size or batch_limits(settings, encoder.providers).max_batch_size
        for index in range(args.warmup):  # lone queries, then as many in full batches
            run_batch(encoder, search, [texts[index % len(texts)]])
        for start in range(0, args.warmup, batch_size):
            batch = range(start, start + batch_size)
            run_batch(encoder, search, [texts[n % len(texts)] for n in batch])
        next_query += args.warmup
        names = {1: "single", pool_threads: "pool"} | {
            threads: f"t{threads}"
            for threads in args.sweep_threads
            if threads not in (1, pool_threads)
        }
        for threads, name in names.items():
            size = 1 if name == "single" else batch_size
            log.info(
                "intra-op %d, %d thread(s), batches of %d, ≤ %d queries",
                intra_op_threads,
                threads,
                size,
                args.queries,
            )
            entry = {"intra_op_threads": intra_op_threads} | run_mode(
                encoder,
                search,
                texts,
                threads=threads,
                batch_size=size,
                queries=args.queries,
                max_seconds=args.max_seconds,
                first=next_query,
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
        "faiss_threads": faiss_threads,
        "bundle": bundle.name,
        "bundle_version": bundle.version,
        "collection": collection.name,
        "count": collection.count,
        "dim": collection.dim,
        "factory": collection.factory,
        "k": k,
        "queries_available": len(texts),
        "seed": args.seed,
        "engine": {
            "batch_size": batch_size,
            "encoder_workers": settings.encoder_workers,
            "index_device": served.index_device,
            "exact_scan": "onnxruntime" if served.scan is not None else "numpy",
            "scan_threads": settings.blas_threads,
            "search_params": search.params.as_dict(),
        },
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
