"""Command line: ``python -m benchmarks cxc ...`` (console script ``crisscross-bench``).

Examples::

    python -m benchmarks cxc --url http://127.0.0.1:8000 --split val \\
        --data ../shared/data --out reports/demo --limit-queries 500
    python -m benchmarks cxc --dataset scenes --data data/scenes --split test \\
        --image-queries upload --out reports/scenes      # images from data/scenes/images/test

    python -m benchmarks load --url http://127.0.0.1:8000 --data ../shared/data --split val \\
        --out reports/bench --closed 1,8,32 --open-rates auto --duration-s 20 \\
        --inprocess-json reports/bench/inprocess.json

    python -m benchmarks compare --url http://127.0.0.1:8000 \\
        --variants minilm-l6-v2,minilm-l6-v2-int8 --data ../shared/data --split val \\
        --out reports/compare --limit-queries 1000     # compare.json/.md, compare_pareto.png

    python -m benchmarks cider --data ../shared/data --split val   # CIDEr-D matrix + parity

``cxc`` writes ``report.json``, ``report.md`` and PNG plots into ``--out``; ``load`` writes
``load.json``, ``load.md``, ``load.png`` and ``load_latency.png``. Both print the Markdown report
to stdout. Exit status: 0 on success, 1 when the service or the data refused the run, 2 on bad
arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import httpx

from benchmarks.cider import build_and_check
from benchmarks.client import ServiceError, ServiceNotReadyError
from benchmarks.compare import (
    DEFAULT_COMPARE_TASKS,
    CompareConfig,
    run_compare,
    write_compare_outputs,
)
from benchmarks.corpus import DATASETS
from benchmarks.correlation import DEFAULT_SAMPLES
from benchmarks.cxc import BenchmarkSetupError, CxcRunConfig, run_cxc, write_outputs
from benchmarks.images import IMAGE_QUERY_MODES
from benchmarks.loadrun import DEFAULT_FRACTIONS, LoadRunConfig, run_load, write_load_outputs
from benchmarks.plan import ALL_TASKS

RunT = TypeVar("RunT")

logger = logging.getLogger("benchmarks")

DATA_DIR_ENV = "CRISSCROSS_DATA_DIR"


def _int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers: {text!r}") from error
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"expected positive integers: {text!r}")
    return values


def _task_list(text: str) -> tuple[str, ...]:
    values = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [value for value in values if value not in ALL_TASKS]
    if not values or unknown:
        raise argparse.ArgumentTypeError(f"tasks must be among {','.join(ALL_TASKS)}: {text!r}")
    return values


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected an integer: {text!r}") from error
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer: {text!r}")
    return value


def _float_list(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers: {text!r}") from error
    if not values or any(not value > 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers: {text!r}")
    return values


def _open_rates(text: str) -> tuple[float, ...] | None:
    """``auto`` → ``None`` (fractions of saturation); ``none`` → ``()``; else the rates."""
    if text.strip().lower() == "auto":
        return None
    if text.strip().lower() == "none":
        return ()
    return _float_list(text)


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a number: {text!r}") from error
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number: {text!r}")
    return value


def _add_data_argument(parser: argparse.ArgumentParser, holds: str | None = None) -> None:
    """``--data``: the data folder (``$CRISSCROSS_DATA_DIR`` or ``../shared/data``); ``holds``
    names what the subcommand reads from it, for the help."""
    what = f" with {holds}" if holds else ""
    parser.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get(DATA_DIR_ENV, "../shared/data")),
        help=f"data folder{what} (${DATA_DIR_ENV} or ../shared/data)",
    )


def _add_load_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    load = commands.add_parser(
        "load",
        help="throughput and latency under load: closed loop, then open loop (Poisson) up to "
        "and past the knee, over a light raw-asyncio HTTP client",
    )
    load.add_argument("--url", default="http://127.0.0.1:8000", help="service root URL")
    _add_data_argument(load, "coco-karpathy-captions/")
    load.add_argument("--split", default="val", help="captions_<split>.csv to take queries from")
    load.add_argument("--out", type=Path, required=True, help="folder for load.json/.md/.png")
    load.add_argument(
        "--closed", type=_int_list, default=(1, 8, 32), help="closed-loop clients (1,8,32)"
    )
    load.add_argument(
        "--open-rates",
        type=_open_rates,
        default=None,
        help="open-loop offered rates in requests/s (r1,r2,...), 'auto' = --open-fractions of "
        "the closed-loop saturation throughput, or 'none' (auto)",
    )
    load.add_argument(
        "--open-fractions",
        type=_float_list,
        default=DEFAULT_FRACTIONS,
        help="multiples of saturation for --open-rates auto "
        f"({','.join(f'{value:g}' for value in DEFAULT_FRACTIONS)})",
    )
    load.add_argument(
        "--duration-s", type=_positive_float, default=20.0, help="seconds per level (20)"
    )
    load.add_argument(
        "--requests", type=_positive_int, default=20_000, help="most requests per level (20000)"
    )
    load.add_argument(
        "--warmup", type=int, default=50, help="unrecorded requests before a closed level (50)"
    )
    load.add_argument(
        "--open-warmup-s",
        type=float,
        default=2.0,
        help="open loop: seconds at each level's rate before the measured ones, reported apart "
        "as the level's warm-up (2)",
    )
    load.add_argument(
        "--max-connections",
        type=_positive_int,
        default=256,
        help="open loop: most connections at once; more requests wait in the client (256)",
    )
    load.add_argument(
        "--drain-s",
        type=float,
        default=10.0,
        help="open loop: seconds answers are awaited after the last intended send (10)",
    )
    load.add_argument(
        "--settle-s",
        type=float,
        default=30.0,
        help="longest wait for the service to drain between open levels, seconds (30)",
    )
    load.add_argument("--timeout", type=_positive_float, default=10.0, help="per request, s (10)")
    load.add_argument("--k", type=_positive_int, default=10, help="results per search (10)")
    load.add_argument("--collection", default="captions", help="searched collection (captions)")
    load.add_argument("--variant", default=None, help="encoder variant (service default)")
    load.add_argument(
        "--no-metadata", action="store_true", help="send include_metadata=false (default: true)"
    )
    load.add_argument("--seed", type=int, default=0, help="query order and schedules (0)")
    load.add_argument(
        "--inprocess-json",
        type=Path,
        default=None,
        help="scripts/bench_inprocess.py output, for the efficiency ratio",
    )
    load.add_argument("--ready-timeout", type=float, default=120.0, help="seconds for /readyz")


def load_config_from_args(args: argparse.Namespace) -> LoadRunConfig:
    """The run configuration of parsed ``load`` arguments."""
    return LoadRunConfig(
        url=args.url,
        data_dir=args.data,
        split=args.split,
        closed_levels=args.closed,
        open_rates=args.open_rates,
        open_fractions=args.open_fractions,
        duration_s=args.duration_s,
        max_requests=args.requests,
        warmup_requests=max(0, args.warmup),
        open_warmup_s=max(0.0, args.open_warmup_s),
        max_connections=args.max_connections,
        drain_s=max(0.0, args.drain_s),
        timeout_s=args.timeout,
        settle_s=max(0.0, args.settle_s),
        k=args.k,
        collection=args.collection,
        variant=args.variant,
        include_metadata=not args.no_metadata,
        seed=args.seed,
        inprocess_json=args.inprocess_json,
        ready_timeout_s=args.ready_timeout,
    )


def build_parser() -> argparse.ArgumentParser:
    """The ``crisscross-bench`` argument parser (sub-commands ``cxc`` and ``load``)."""
    parser = argparse.ArgumentParser(
        prog="crisscross-bench", description="Benchmark a live Crisscross service over HTTP."
    )
    parser.add_argument("--log-level", default="INFO", help="stdlib logging level (INFO)")
    commands = parser.add_subparsers(dest="command", required=True)
    cxc = commands.add_parser(
        "cxc",
        help="CxC retrieval (t2t, i2t, t2i, i2i and MS-COCO's original pairs), STS/SIS/SITS "
        "correlation, BISON and latency",
    )
    cxc.add_argument("--url", default="http://127.0.0.1:8000", help="service root URL")
    cxc.add_argument("--split", default="val", help="split name in the data file names (val)")
    _add_data_argument(cxc, "coco-karpathy-captions/, cxc/, bison/ [, images/<split>/]")
    cxc.add_argument("--out", type=Path, required=True, help="folder for report.json/.md/.png")
    cxc.add_argument(
        "--dataset",
        choices=DATASETS,
        default="coco-karpathy",
        help="which corpus the data folder holds (coco-karpathy)",
    )
    cxc.add_argument("--collection", default="captions", help="caption collection name")
    cxc.add_argument("--images-collection", default="images", help="image collection name")
    cxc.add_argument(
        "--images-dir",
        type=Path,
        default=None,
        help="folder of the split's image files, by file name (default <data>/images/<split> "
        "when it exists); used for --image-queries upload and for images not served",
    )
    cxc.add_argument(
        "--image-queries",
        choices=IMAGE_QUERY_MODES,
        default="item",
        help="send image queries as item references or as uploaded file bytes (item)",
    )
    cxc.add_argument(
        "--bison",
        type=Path,
        default=None,
        help="BISON CSV (default <data>/bison/bison_<split>.csv, else bison_shared.csv)",
    )
    cxc.add_argument(
        "--tasks",
        type=_task_list,
        default=ALL_TASKS,
        help=f"comma-separated subset of {','.join(ALL_TASKS)} (all)",
    )
    cxc.add_argument(
        "--k", type=_positive_int, default=1000, help="results per query (≤ service max_k; 1000)"
    )
    cxc.add_argument(
        "--probe-k",
        type=_positive_int,
        default=100,
        help="results asked for first; a query with no positive among them is asked "
        "again at --k (100)",
    )
    cxc.add_argument(
        "--limit-queries", type=_positive_int, default=None, help="first N queries only"
    )
    cxc.add_argument(
        "--replay-concurrency", type=_positive_int, default=8, help="quality replay in flight (8)"
    )
    cxc.add_argument(
        "--score-batch", type=_positive_int, default=1024, help="pairs per /v1/score (1024)"
    )
    cxc.add_argument(
        "--max-uploads",
        type=_positive_int,
        default=32,
        help="image uploads per /v1/score request (≤ service max_images_per_request; 32)",
    )
    cxc.add_argument(
        "--max-upload-bytes",
        type=_positive_int,
        default=900_000,
        help="base64 image bytes per /v1/score request (< service max_body_bytes; 900000)",
    )
    cxc.add_argument(
        "--bootstrap-samples", type=_positive_int, default=DEFAULT_SAMPLES, help="(1000)"
    )
    cxc.add_argument("--seed", type=int, default=0, help="bootstrap / latency order seed (0)")
    cxc.add_argument(
        "--concurrency", type=_int_list, default=(1, 8), help="latency levels, e.g. 1,8 (1,8)"
    )
    cxc.add_argument(
        "--latency-requests", type=_positive_int, default=300, help="measured per level (300)"
    )
    cxc.add_argument("--warmup", type=int, default=20, help="warm-up requests per level (20)")
    cxc.add_argument("--latency-k", type=_positive_int, default=10, help="k of latency queries")
    cxc.add_argument("--variant", default=None, help="encoder variant (service default)")
    cxc.add_argument("--ready-timeout", type=float, default=120.0, help="seconds for /readyz")
    cxc.add_argument("--timeout", type=float, default=60.0, help="per-request timeout, seconds")
    cxc.add_argument("--no-progress", action="store_true", help="no progress bars")
    cxc.add_argument(
        "--cider",
        choices=("auto", "off"),
        default="auto",
        help="NCS, SR and the false-negative view for i2t/t2i from the split's CIDEr-D matrix "
        "(cached; built when missing), or off (auto)",
    )
    cxc.add_argument(
        "--cider-cache",
        type=Path,
        default=None,
        help="CIDEr-D cache folder (<data>/cider when writable, else artifacts/cache/cider)",
    )
    _add_load_parser(commands)
    _add_compare_parser(commands)
    _add_cider_parser(commands)
    return parser


def config_from_args(args: argparse.Namespace) -> CxcRunConfig:
    """The run configuration of parsed ``cxc`` arguments."""
    return CxcRunConfig(
        url=args.url,
        data_dir=args.data,
        split=args.split,
        dataset=args.dataset,
        collection=args.collection,
        images_collection=args.images_collection,
        tasks=args.tasks,
        k=args.k,
        limit_queries=args.limit_queries,
        replay_concurrency=args.replay_concurrency,
        probe_k=args.probe_k,
        score_batch=args.score_batch,
        max_uploads_per_request=args.max_uploads,
        max_upload_bytes=args.max_upload_bytes,
        bootstrap_samples=args.bootstrap_samples,
        seed=args.seed,
        concurrency_levels=args.concurrency,
        latency_requests=args.latency_requests,
        warmup_requests=max(0, args.warmup),
        latency_k=args.latency_k,
        variant=args.variant,
        images_dir=args.images_dir,
        image_queries=args.image_queries,
        bison_file=args.bison,
        ready_timeout_s=args.ready_timeout,
        request_timeout_s=args.timeout,
        show_progress=not args.no_progress,
        recall_eq1=True,
        cider=args.cider,
        cider_cache_dir=args.cider_cache,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m benchmarks`` / ``crisscross-bench``; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # httpx logs every request at INFO: thousands of lines per run.
    for noisy in ("httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    if args.command == "load":
        return _main_load(parser, args)
    if args.command == "compare":
        return _main_compare(parser, args)
    if args.command == "cider":
        return _main_cider(args)
    try:
        config = config_from_args(args)
    except ValueError as error:
        parser.error(str(error))
    return _run_and_report(run_cxc(config), write_outputs, args.out, "benchmark")


def _run_and_report(
    job: Coroutine[Any, Any, RunT],
    write: Callable[[RunT, Path], dict[str, Path]],
    out: Path,
    what: str,
) -> int:
    """Run ``job``, write its outputs under ``out`` and print its Markdown; 1 when the service
    or the data made it fail (logged, no traceback unless DEBUG)."""
    try:
        run = asyncio.run(job)
    except (
        ServiceError,
        ServiceNotReadyError,
        BenchmarkSetupError,
        ValueError,
        httpx.HTTPError,
        OSError,
    ) as error:
        logger.error("%s failed: %s", what, error)
        logger.debug("traceback", exc_info=True)
        return 1
    written = write(run, out)
    for kind, path in written.items():
        logger.info("wrote %s: %s", kind, path)
    sys.stdout.write(written["markdown"].read_text(encoding="utf-8"))
    return 0


def _main_load(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        config = load_config_from_args(args)
    except ValueError as error:
        parser.error(str(error))
    return _run_and_report(run_load(config), write_load_outputs, args.out, "load test")


def _add_cider_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cider = commands.add_parser(
        "cider",
        help="build (or reuse) the split's CIDEr-D matrix (captions × images) and check it "
        "against the per-pair reference on random pairs",
    )
    _add_data_argument(cider, "coco-karpathy-captions/")
    cider.add_argument("--split", default="val", help="captions_<split>.csv (val)")
    cider.add_argument("--cache", type=Path, default=None, help="cache folder (as cxc)")
    cider.add_argument("--parity-pairs", type=int, default=2000, help="random pairs (2000)")
    cider.add_argument("--seed", type=int, default=0, help="pair sampling seed (0)")
    cider.add_argument("--rebuild", action="store_true", help="ignore a matching cache")
    cider.add_argument("--no-progress", action="store_true", help="no progress bar")


def _main_cider(args: argparse.Namespace) -> int:
    try:
        summary = build_and_check(
            args.data,
            args.split,
            args.cache,
            parity_pairs=args.parity_pairs,
            seed=args.seed,
            rebuild=args.rebuild,
            show_progress=not args.no_progress,
        )
    except (ValueError, OSError) as error:
        logger.error("CIDEr-D failed: %s", error)
        return 1
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0 if summary.get("parity_ok", True) else 1


def _variant_list(text: str) -> tuple[str, ...]:
    values = tuple(part.strip() for part in text.split(",") if part.strip())
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct comma-separated variants: {text!r}")
    return values


def _quality_task_list(text: str) -> tuple[str, ...]:
    values = _task_list(text)
    if "latency" in values:
        raise argparse.ArgumentTypeError("compare always measures latency; list quality tasks")
    return values


def _add_compare_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    compare = commands.add_parser(
        "compare",
        help="several variants of one service in one run: the same quality tasks and the same "
        "latency measurement for each, a table and a quality-vs-cost (Pareto) plot",
    )
    compare.add_argument("--url", default="http://127.0.0.1:8000", help="service root URL")
    compare.add_argument(
        "--variants",
        type=_variant_list,
        required=True,
        help="comma-separated variant names; the first is the baseline",
    )
    _add_data_argument(compare)
    compare.add_argument("--split", default="val", help="split name in the data file names (val)")
    compare.add_argument("--dataset", choices=DATASETS, default="coco-karpathy", help="corpus")
    compare.add_argument("--out", type=Path, required=True, help="folder for compare.json/.md/.png")
    compare.add_argument(
        "--tasks",
        type=_quality_task_list,
        default=DEFAULT_COMPARE_TASKS,
        help=f"quality tasks ({','.join(DEFAULT_COMPARE_TASKS)}: a text tower suffices)",
    )
    compare.add_argument(
        "--limit-queries", type=_positive_int, default=None, help="first N queries per task"
    )
    compare.add_argument("--k", type=_positive_int, default=1000, help="results per query (1000)")
    compare.add_argument(
        "--concurrency", type=_int_list, default=(1, 8), help="latency levels (1,8)"
    )
    compare.add_argument(
        "--latency-requests",
        type=_positive_int,
        default=300,
        help="measured requests per variant and level (300)",
    )
    compare.add_argument(
        "--rounds",
        type=_positive_int,
        default=3,
        help="latency chunks per variant and level, variants taking turns; 1 = back to back (3)",
    )
    compare.add_argument("--warmup", type=int, default=20, help="warm-up requests per chunk (20)")
    compare.add_argument("--latency-k", type=_positive_int, default=10, help="k of latency queries")
    compare.add_argument(
        "--bootstrap-samples", type=_positive_int, default=DEFAULT_SAMPLES, help="(1000)"
    )
    compare.add_argument("--seed", type=int, default=0, help="bootstrap / query order seed (0)")
    compare.add_argument("--ready-timeout", type=float, default=120.0, help="seconds for /readyz")
    compare.add_argument("--timeout", type=float, default=60.0, help="per-request timeout, s")
    compare.add_argument("--no-progress", action="store_true", help="no progress bars")


def _main_compare(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    try:
        config = CompareConfig(
            url=args.url,
            variants=args.variants,
            data_dir=args.data,
            split=args.split,
            dataset=args.dataset,
            tasks=args.tasks,
            k=args.k,
            limit_queries=args.limit_queries,
            bootstrap_samples=args.bootstrap_samples,
            seed=args.seed,
            concurrency_levels=args.concurrency,
            latency_requests=args.latency_requests,
            warmup_requests=max(0, args.warmup),
            latency_k=args.latency_k,
            rounds=args.rounds,
            ready_timeout_s=args.ready_timeout,
            request_timeout_s=args.timeout,
            show_progress=not args.no_progress,
        )
    except ValueError as error:
        parser.error(str(error))
    return _run_and_report(run_compare(config), write_compare_outputs, args.out, "comparison")


if __name__ == "__main__":
    sys.exit(main())
