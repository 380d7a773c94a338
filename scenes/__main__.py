"""``python -m scenes`` (console script ``crisscross-scenes``): generate the scenes corpus.

python -m scenes --out artifacts/data/scenes --seed 0 [--train N --val N --test N]
    [--image-size PIXELS] [--workers N] [--judgments val,test] [--overwrite] [--no-progress]
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from scenes.generate import (
    DEFAULT_JUDGMENT_SPLITS,
    DEFAULT_SIZES,
    GenerationConfig,
    GenerationError,
    generate_scenes,
)
from scenes.ids import SPLITS

DEFAULT_OUT = Path("artifacts/data/scenes")


def _splits(value: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    unknown = [name for name in names if name not in SPLITS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown split(s) {unknown}; choose from {SPLITS}")
    return names


def run(args: argparse.Namespace) -> int:
    """Generate the corpus the parsed arguments describe; print a summary line per split."""
    config = GenerationConfig(
        out=args.out,
        seed=args.seed,
        sizes={"train": args.train, "val": args.val, "test": args.test},
        image_size=args.image_size,
        workers=args.workers,
        judgment_splits=args.judgments,
        progress=not args.no_progress,
        overwrite=args.overwrite,
    )
    started = time.perf_counter()
    try:
        manifest = generate_scenes(config)
    except GenerationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for split, counts in manifest["splits"].items():
        details = " ".join(f"{name}={count}" for name, count in counts.items())
        print(f"{split}: {details}")
    print(f"wrote {config.out} in {time.perf_counter() - started:.1f} s")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="python -m scenes",
        description=(
            "Generate the scenes corpus in the Karpathy/CxC/BISON file formats, plus ground "
            "truth (scenes_<split>.jsonl) and a manifest. Same seed and sizes give "
            "byte-identical files whatever --workers is."
        ),
    )
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output folder (default {DEFAULT_OUT})"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of every random stream (default 0)"
    )
    for split in SPLITS:
        parser.add_argument(
            f"--{split}",
            type=int,
            default=DEFAULT_SIZES[split],
            metavar="N",
            help=f"images in the {split} split (default {DEFAULT_SIZES[split]}; 0 skips it)",
        )
    parser.add_argument(
        "--image-size",
        type=int,
        default=96,
        metavar="PIXELS",
        help="side of the square images (default 96)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="processes rendering images (and threads of the caption–image search)",
    )
    parser.add_argument(
        "--judgments",
        type=_splits,
        default=DEFAULT_JUDGMENT_SPLITS,
        metavar="SPLITS",
        help="comma-separated splits that get CxC and BISON files (default: val,test)",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="replace a corpus already in --out"
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m scenes`` and ``crisscross-scenes``; returns the exit status."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    return run(build_parser().parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
