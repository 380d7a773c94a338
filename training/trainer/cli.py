"""``python -m training train``: train the scenes dual encoder and export it as a variant.

Wired into ``training/__main__.py``'s parser with::

    from training.trainer.cli import add_train_command
    add_train_command(commands, parents=[common])  # commands = parser.add_subparsers(...)

The handler is stored as ``handler`` (like the other commands) and returns the exit status. torch
is imported only when the command runs, so the CLI stays usable without the ``export`` extra.

Examples::

    python -m training train --data artifacts/data/scenes --out models/scenes-dual-encoder --seed 0
    python -m training train --data DIR --out DIR --loss t2t_i2t --t2t-weight 0.5
    python -m training train --data DIR --out DIR --loss i2t --margin 0.1   # composed by hand
"""

from __future__ import annotations

import argparse
import logging
import shlex
from collections.abc import Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Final

from training.parity.compare import DEFAULT_PARITY_THRESHOLD

DEFAULT_NAME: Final = "scenes-dual-encoder"
DEFAULT_LOSS: Final = "i2t"
EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
# Kept in step with training.trainer.losses (asserted by the tests); duplicated so that building the
# parser needs no torch.
_LOSS_PRESETS: Final = ("i2t", "t2t_i2t", "margin")
_DEFAULTS: Final = MappingProxyType(
    {
        "epochs": 8,
        "batch_size": 128,
        "learning_rate": 1e-3,
        "weight_decay": 0.05,
        "image_size": 64,
        "dim": 128,
        "max_tokens": 48,
        "threads": 2,
        "monitor_images": 1000,
    }
)

logger = logging.getLogger(__name__)


def add_train_command(
    subparsers: argparse._SubParsersAction[argparse.ArgumentParser],
    *,
    parents: Sequence[argparse.ArgumentParser] = (),
) -> argparse.ArgumentParser:
    """Add the ``train`` subcommand to ``subparsers``; returns its parser.

    ``parents``: shared option parsers (``training.__main__``'s ``--log-level``); without them
    the command still sets ``log_level`` to INFO so the caller's logging set-up finds it.
    """
    train = subparsers.add_parser(
        "train",
        parents=list(parents),
        help="train the scenes dual encoder and export it as a variant (needs torch)",
        description=(
            "Train a small image tower (CNN) and text tower (word-level transformer) on a scenes "
            "corpus's train split with the CxC paper's bidirectional in-batch softmax (eq. 1), "
            "optionally its text-text term (eq. 2) and Biten et al.'s semantic adaptive margin "
            "(eq. 7), then export both towers to one ONNX variant with a parity report."
        ),
    )
    train.add_argument("--data", type=Path, required=True, help="corpus folder (scenes layout)")
    train.add_argument("--out", type=Path, required=True, help="variant folder to create")
    train.add_argument("--name", default=DEFAULT_NAME, help=f"variant name ({DEFAULT_NAME})")
    train.add_argument("--seed", type=int, default=0, help="seeds weights and data order (0)")
    train.add_argument(
        "--loss",
        choices=_LOSS_PRESETS,
        default=DEFAULT_LOSS,
        help="i2t: eq. 1 only (DE_I2T); t2t_i2t: eq. 1 + eq. 2 (DE_T2T+I2T); margin: eq. 1 + "
        f"semantic adaptive margin ({DEFAULT_LOSS})",
    )
    train.add_argument(
        "--t2t-weight",
        type=float,
        default=None,
        help="weight w of the text-text term (overrides the preset: 0.5 in t2t_i2t, else 0)",
    )
    train.add_argument(
        "--margin",
        type=float,
        default=None,
        help="adaptive margin m in cosine units (overrides the preset: 0.2 in margin, else 0)",
    )
    _number(train, "--epochs", int, "epochs")
    _number(train, "--batch-size", int, "batch_size")
    _number(train, "--learning-rate", float, "learning_rate")
    _number(train, "--weight-decay", float, "weight_decay")
    _number(train, "--image-size", int, "image_size", "input side in pixels, a multiple of 16")
    _number(train, "--dim", int, "dim", "embedding dimension")
    _number(train, "--max-tokens", int, "max_tokens", "truncation length, [CLS] included")
    _number(train, "--threads", int, "threads", "torch threads (fixed for reproducibility)")
    _number(train, "--monitor-images", int, "monitor_images", "val images for per-epoch R@1")
    train.add_argument(
        "--train-images",
        type=int,
        default=None,
        help="use only the first N train images (quick runs; default: all)",
    )
    train.add_argument(
        "--parity-threshold",
        type=float,
        default=DEFAULT_PARITY_THRESHOLD,
        help="minimum cosine between ONNX and PyTorch on every parity text and image",
    )
    train.add_argument("--force", action="store_true", help="replace an existing --out folder")
    train.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    train.set_defaults(handler=run_train_command, log_level="INFO")
    return train


def _number(
    parser: argparse.ArgumentParser, flag: str, type_: type, key: str, text: str = ""
) -> None:
    """An optional numeric flag defaulting to ``_DEFAULTS[key]``."""
    default = _DEFAULTS[key]
    help_text = f"{text} ({default})" if text else f"({default})"
    parser.add_argument(flag, type=type_, default=default, help=help_text)


def reproduce_command(arguments: argparse.Namespace) -> str:
    """The command line that repeats this run, with ``DATA`` / ``OUT`` standing for the paths
    (they do not change the weights) and every setting that does spelled out."""
    parts = ["python", "-m", "training", "train", "--data", "DATA", "--out", "OUT"]
    parts += ["--name", arguments.name, "--seed", str(arguments.seed), "--loss", arguments.loss]
    if arguments.t2t_weight is not None:
        parts += ["--t2t-weight", repr(arguments.t2t_weight)]
    if arguments.margin is not None:
        parts += ["--margin", repr(arguments.margin)]
    for key in _DEFAULTS:
        parts += [f"--{key.replace('_', '-')}", str(getattr(arguments, key))]
    if arguments.train_images is not None:
        parts += ["--train-images", str(arguments.train_images)]
    return shlex.join(parts)


def run_train_command(arguments: argparse.Namespace) -> int:
    """Run ``train`` for parsed ``arguments``; prints a summary, returns the exit status."""
    # Imported here: training needs torch (the "export" extra), the rest of the CLI does not.
    from training.trainer.corpus import CorpusError
    from training.trainer.losses import LossConfig
    from training.trainer.run import format_metrics, train_variant
    from training.trainer.trainer import TrainConfig

    try:
        config = TrainConfig(
            data_dir=arguments.data,
            seed=arguments.seed,
            epochs=arguments.epochs,
            batch_size=arguments.batch_size,
            learning_rate=arguments.learning_rate,
            weight_decay=arguments.weight_decay,
            loss=LossConfig.preset(
                arguments.loss, t2t_weight=arguments.t2t_weight, margin=arguments.margin
            ),
            image_size=arguments.image_size,
            dim=arguments.dim,
            max_tokens=arguments.max_tokens,
            threads=arguments.threads,
            train_images=arguments.train_images,
            monitor_images=arguments.monitor_images,
            progress=not arguments.no_progress,
        )
        outcome = train_variant(
            config,
            arguments.out,
            name=arguments.name,
            command=reproduce_command(arguments),
            overwrite=arguments.force,
            parity_threshold=arguments.parity_threshold,
        )
    except (CorpusError, ValueError) as error:
        logger.error("%s", error)
        return EXIT_FAILED
    manifest = outcome.manifest
    size = sum((arguments.out / name).stat().st_size for name in manifest.files)
    print(f"trained {manifest.name} in {outcome.seconds:.0f} s -> {arguments.out}")
    for record in outcome.trained.history:
        print(
            f"  epoch {record.epoch}: loss {record.loss:.4f}, monitor R@1 i2t "
            f"{record.monitor_i2t_r1:.3f} t2i {record.monitor_t2i_r1:.3f} ({record.seconds:.0f} s)"
        )
    for split, metrics in outcome.evaluation.items():
        print(f"  {split}: {format_metrics(metrics)}")
    if manifest.parity is not None:
        print(
            f"  parity: min cosine {manifest.parity.min_cosine:.6f} on "
            f"{manifest.parity.inputs} inputs"
        )
    print(f"  size {size / 1e6:.2f} MB, fingerprint {manifest.fingerprint}")
    return EXIT_OK
