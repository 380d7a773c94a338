"""The command line of ``python -m studies.scale_simulation`` (``make scale-report``): its
options, the run's settings from them, and the phases it runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from studies import scale_simulation
from studies.scale_simulation.build_phase import phase_build
from studies.scale_simulation.config import Config
from studies.scale_simulation.index_kinds import kinds_for
from studies.scale_simulation.locations import BUNDLE, CACHE, REPORT
from studies.scale_simulation.measure import measure_one
from studies.scale_simulation.measure_phase import phase_measure
from studies.scale_simulation.report import write_report

SEED = 20261125

# The options a ``--phase measure-one`` process gets from the run that starts it.
COMMON_OPTIONS = (
    "cache",
    "report",
    "seed",
    "clusters",
    "rank",
    "spread",
    "queries",
    "train_sample",
    "shards",
    "max_ram_index_gib",
    "hnsw_max",
    "flat_max",
    "stream_queries",
    "ondisk_queries",
    "max_nprobe_ondisk_flat",
    "real",
    "bundle",
    "build_threads",
    "fit_rows",
    "pq",
)


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=scale_simulation.__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    ap.add_argument("--scales", default="1000000", help="comma-separated database sizes")
    ap.add_argument(
        "--phase", default="all", choices=("all", "build", "measure", "report", "measure-one")
    )
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--report", type=Path, default=REPORT)
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--clusters", type=int, default=512, help="k-means clusters of the generator")
    ap.add_argument("--rank", type=int, default=16, help="principal components per cluster")
    ap.add_argument(
        "--spread",
        type=float,
        default=1.5,
        help="residual scale: > 1 widens clusters so IVF is not easier than on real data",
    )
    ap.add_argument("--queries", type=int, default=1000, help="held-out queries per scale")
    ap.add_argument("--train-sample", type=int, default=300_000)
    ap.add_argument("--shards", type=int, default=4, help="shards of the add merged on disk")
    ap.add_argument(
        "--max-ram-index-gib",
        type=float,
        default=6.0,
        help="IVF-Flat larger than this is built with on-disk lists",
    )
    ap.add_argument("--hnsw-max", type=int, default=2_000_000)
    ap.add_argument(
        "--flat-max",
        type=int,
        default=2_000_000,
        help="above this, Flat is measured by streaming the vectors memmap",
    )
    ap.add_argument("--stream-queries", type=int, default=20)
    ap.add_argument("--ondisk-queries", type=int, default=300)
    ap.add_argument("--max-nprobe-ondisk-flat", type=int, default=128)
    ap.add_argument("--real", type=Path, default=None, help="real vectors .npy (default: bundle)")
    ap.add_argument(
        "--bundle",
        type=Path,
        default=BUNDLE,
        help="bundle of the real vectors (missing: a seeded stand-in)",
    )
    ap.add_argument("--pq", default="32,48", help="PQ sub-quantizers (8-bit); last one on disk")
    ap.add_argument("--fit-rows", type=int, default=0, help="use this many real rows (0: all)")
    ap.add_argument("--build-threads", type=int, default=1, help="faiss OpenMP threads to build")
    ap.add_argument("--machine-gib", type=float, default=256.0)
    ap.add_argument("--cores", type=int, default=64)
    ap.add_argument("--target-qps", default="1000,10000")
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--remeasure", action="store_true", help="measure kinds already measured")
    ap.add_argument("--kind", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def config_from(args: argparse.Namespace) -> Config:
    return Config(
        cache=args.cache.resolve(),
        report=args.report.resolve(),
        seed=args.seed,
        clusters=args.clusters,
        rank=args.rank,
        spread=args.spread,
        queries=args.queries,
        train_sample=args.train_sample,
        shards=args.shards,
        max_ram_index_gib=args.max_ram_index_gib,
        hnsw_max=args.hnsw_max,
        flat_max=args.flat_max,
        stream_queries=args.stream_queries,
        ondisk_queries=args.ondisk_queries,
        max_nprobe_ondisk_flat=args.max_nprobe_ondisk_flat,
        real_path=args.real,
        bundle=args.bundle,
        build_threads=args.build_threads,
        fit_rows=args.fit_rows,
        pq=tuple(int(v) for v in args.pq.split(",")),
        machine_gib=args.machine_gib,
        cores=args.cores,
        target_qps=tuple(int(v) for v in args.target_qps.split(",")),
    )


def cli_common(args: argparse.Namespace) -> list[str]:
    out: list[str] = []
    for name in COMMON_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            out += [f"--{name.replace('_', '-')}", str(value)]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    cfg = config_from(args)
    scales = [int(s) for s in args.scales.split(",")]
    if args.phase == "measure-one":
        kind = next(k for k in kinds_for(scales[0], cfg) if k.name == args.kind)
        measure_one(cfg, scales[0], kind, args.warmup)
        return 0
    if args.phase in ("all", "build"):
        phase_build(cfg, scales)
    if args.phase in ("all", "measure"):
        phase_measure(cfg, scales, cli_common(args), args.remeasure)
    if args.phase in ("all", "report"):
        write_report(cfg, scales, argv)
    return 0
