"""``python -m index_builder scenes``: generate the scenes corpus.

Wire it into ``index_builder/__main__.py``'s parser with::

    from index_builder.scenes.cli import add_scenes_command
    add_scenes_command(commands)  # commands = parser.add_subparsers(...)

The handler is stored as ``handler`` (like the other commands) and returns the exit status.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from index_builder.scenes.generate import (
    DEFAULT_JUDGMENT_SPLITS,
    DEFAULT_SIZES,
    GenerationConfig,
    GenerationError,
    generate_scenes,
)
from index_builder.scenes.ids import SPLITS

DEFAULT_OUT = Path("artifacts/data/scenes")


def _splits(value: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    unknown = [name for name in names if name not in SPLITS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown split(s) {unknown}; choose from {SPLITS}")
    return names


def run_scenes_command(args: argparse.Namespace) -> int:
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


def add_scenes_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """Add the ``scenes`` sub-command to an ``add_subparsers()`` object; returns its parser."""
    parser = subparsers.add_parser(
        "scenes",
        help="generate the scenes corpus (images, captions, CxC judgments, BISON pairs)",
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
    parser.set_defaults(handler=run_scenes_command)
    return parser
