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
    python -m benchmarks compare --url http://127.0.0.1:8000 --data ../shared/data \
        --setting dense=mode:dense --setting hybrid=mode:hybrid,fusion:rrf,rrf_k:60 \
        --setting rerank=rerank:exact,window:100 --out reports/levers   # lever settings as rows

    python -m benchmarks cider --data ../shared/data --split val   # CIDEr-D matrix + parity

    python -m benchmarks sweep --url http://127.0.0.1:8000 --collection captions \\
        --queries 200 --out reports/sweep          # sweep.json/.md, sweep.png

    python -m benchmarks hostile --url http://127.0.0.1:8000 --data ../shared/data \\
        --stalled-bodies 200 --slowloris 1000 --out reports/hostile   # hostile.json/.md/.png

    python -m benchmarks mixed --url http://127.0.0.1:8000 --data ../shared/data \\
        --out reports/mixed          # a fresh live collection: mixed.json/.md/.png

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
import sys
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

import httpx

import crisscross_client
from benchmarks.drivers.http_client import ServiceNotReadyError
from benchmarks.report.writers import (
    write_compare_outputs,
    write_hostile_outputs,
    write_load_outputs,
    write_mixed_outputs,
    write_quality_outputs,
    write_sweep_outputs,
)
from benchmarks.runs.cider import CiderRunConfig, run_cider
from benchmarks.runs.compare.config import CompareConfig
from benchmarks.runs.compare.run import run_compare
from benchmarks.runs.hostile.config import HostileRunConfig
from benchmarks.runs.hostile.run import run_hostile
from benchmarks.runs.load.config import LoadRunConfig
from benchmarks.runs.load.run import run_load
from benchmarks.runs.mixed.config import MixedRunConfig
from benchmarks.runs.mixed.run import run_mixed
from benchmarks.runs.options import add_options, config_from_args
from benchmarks.runs.quality.config import QualityRunConfig
from benchmarks.runs.quality.run import run_quality
from benchmarks.runs.setup_error import BenchmarkSetupError
from benchmarks.runs.sweep.config import SweepConfig
from benchmarks.runs.sweep.run import run_sweep

ConfigT = TypeVar("ConfigT")
RunT = TypeVar("RunT")

logger = logging.getLogger("benchmarks")


@dataclass(frozen=True)
class Command(Generic[ConfigT, RunT]):
    """A subcommand that runs against the service and writes a report into ``--out``.

    Attributes:
        name: the subcommand.
        help: its one-line help.
        config: its config dataclass (whose fields declare the options).
        run: the run.
        write: writes the run's files into a folder; output kind → file.
        what: what failed, in the error log (``benchmark``, ``load test``, ``comparison``).
    """

    name: str
    help: str
    config: type[ConfigT]
    run: Callable[[ConfigT], Coroutine[Any, Any, RunT]]
    write: Callable[[RunT, Path], dict[str, Path]]
    what: str


COMMANDS: tuple[Command[Any, Any], ...] = (
    Command(
        "cxc",
        "CxC retrieval (t2t, i2t, t2i, i2i and MS-COCO's original pairs), STS/SIS/SITS "
        "correlation, BISON and latency",
        QualityRunConfig,
        run_quality,
        write_quality_outputs,
        "benchmark",
    ),
    Command(
        "load",
        "throughput and latency under load: closed loop, then open loop (Poisson) up to "
        "and past the knee, over a light raw-asyncio HTTP client",
        LoadRunConfig,
        run_load,
        write_load_outputs,
        "load test",
    ),
    Command(
        "compare",
        "several variants or lever settings of one service in one run: the same quality "
        "tasks and the same latency measurement for each, a table and a quality-vs-cost "
        "(Pareto) plot",
        CompareConfig,
        run_compare,
        write_compare_outputs,
        "comparison",
    ),
    Command(
        "sweep",
        "one approximate index across the values of its search parameter (nprobe, "
        "ef_search): recall@10 against exact search and latency, a table and a plot",
        SweepConfig,
        run_sweep,
        write_sweep_outputs,
        "sweep",
    ),
    Command(
        "hostile",
        "an honest client's search latency alone, then beside a crowd of slowloris heads and "
        "stalled bodies held open by another process: latency, the crowd's closes, counters",
        HostileRunConfig,
        run_hostile,
        write_hostile_outputs,
        "hostile-clients run",
    ),
    Command(
        "mixed",
        "writes while searching: a fresh live collection searched by closed-loop clients "
        "idle, then beside closed-loop writers (upserts, deletes): latency, items/s, "
        "read-your-writes checks",
        MixedRunConfig,
        run_mixed,
        write_mixed_outputs,
        "mixed run",
    ),
)
"""The report-writing subcommands, in ``--help`` order (``cider`` follows them)."""

CIDER_HELP = (
    "build (or reuse) the split's CIDEr-D matrix (captions × images) and check it "
    "against the per-pair reference on random pairs"
)


def build_parser() -> argparse.ArgumentParser:
    """The ``crisscross-bench`` argument parser: one subcommand per run, its options generated
    from the run's config."""
    parser = argparse.ArgumentParser(
        prog="crisscross-bench", description="Benchmark a live Crisscross service over HTTP."
    )
    parser.add_argument("--log-level", default="INFO", help="stdlib logging level (INFO)")
    commands = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        add_options(commands.add_parser(command.name, help=command.help), command.config)
    add_options(commands.add_parser("cider", help=CIDER_HELP), CiderRunConfig)
    return parser


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
    if args.command == "cider":
        return _main_cider(args)
    command = next(command for command in COMMANDS if command.name == args.command)
    try:
        config = config_from_args(command.config, args)
    except ValueError as error:
        parser.error(str(error))
    return _run_and_report(command.run(config), command.write, args.out, command.what)


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
        crisscross_client.CrisscrossError,
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


def _main_cider(args: argparse.Namespace) -> int:
    config = config_from_args(CiderRunConfig, args)
    try:
        summary = asyncio.run(run_cider(config))
    except (ValueError, OSError) as error:
        logger.error("CIDEr-D failed: %s", error)
        return 1
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0 if summary.get("parity_ok", True) else 1


if __name__ == "__main__":
    sys.exit(main())
