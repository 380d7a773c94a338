"""Command line: ``python -m benchmarks cxc ...`` (console script ``crisscross-bench``).

Examples::

    python -m benchmarks cxc --url http://127.0.0.1:8000 --split val \\
        --data ../shared/data --out reports/demo --limit-queries 500
    python -m benchmarks cxc --dataset scenes --data data/scenes --split test \\
        --image-queries upload --out reports/scenes      # images from data/scenes/images/test

Writes ``report.json``, ``report.md`` and PNG plots into ``--out`` and prints the Markdown
report to stdout. Exit status: 0 on success, 1 when the service or the data refused the run,
2 on bad arguments.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import httpx

from benchmarks.client import ServiceError, ServiceNotReadyError
from benchmarks.corpus import DATASETS
from benchmarks.correlation import DEFAULT_SAMPLES
from benchmarks.cxc import BenchmarkSetupError, CxcRunConfig, run_cxc, write_outputs
from benchmarks.images import IMAGE_QUERY_MODES
from benchmarks.plan import ALL_TASKS

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


def build_parser() -> argparse.ArgumentParser:
    """The ``crisscross-bench`` argument parser (sub-command ``cxc``)."""
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
    cxc.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get(DATA_DIR_ENV, "../shared/data")),
        help="data folder with coco-karpathy-captions/, cxc/, bison/ [, images/<split>/] "
        f"(${DATA_DIR_ENV} or ../shared/data)",
    )
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
    try:
        config = config_from_args(args)
    except ValueError as error:
        parser.error(str(error))
    try:
        run = asyncio.run(run_cxc(config))
    except (
        ServiceError,
        ServiceNotReadyError,
        BenchmarkSetupError,
        ValueError,
        httpx.HTTPError,
        OSError,
    ) as error:
        logger.error("benchmark failed: %s", error)
        logger.debug("traceback", exc_info=True)
        return 1
    written = write_outputs(run, args.out)
    for kind, path in written.items():
        logger.info("wrote %s: %s", kind, path)
    sys.stdout.write(written["markdown"].read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
