"""Command line of the encoders package (console script ``crisscross-encoders``).

python -m encoders export minilm --out artifacts/variants/minilm-l6-v2 [--name N] [--force]
python -m encoders export efficientnet --out artifacts/variants/efficientnet-lite0
python -m encoders info artifacts/variants/minilm-l6-v2
python -m encoders embed artifacts/variants/minilm-l6-v2 "a dog on a couch" "a cat"
python -m encoders embed-images artifacts/variants/efficientnet-lite0 photo.jpg other.png
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from encoders.parity import DEFAULT_PARITY_THRESHOLD, ParityError
from encoders.providers import PROVIDER_REQUESTS, ProviderError
from encoders.training.cli import add_train_command
from encoders.variant import VariantError, load_variant_manifest, verify_variant_files

logger = logging.getLogger("encoders")

EXIT_OK = 0
EXIT_FAILED = 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the process exit code."""
    arguments = _parser().parse_args(argv)
    logging.basicConfig(
        level=arguments.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(arguments.handler(arguments))
    except (VariantError, ParityError, ProviderError, FileExistsError) as error:
        logger.error("%s", error)
        return EXIT_FAILED


def _parser() -> argparse.ArgumentParser:
    # Shared options live on every subcommand so they can follow it: `export ... --log-level X`.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"]
    )
    parser = argparse.ArgumentParser(
        prog="python -m encoders", description="Export, inspect and try encoder variants."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    export = commands.add_parser(
        "export", parents=[common], help="export a PyTorch model to a variant folder"
    )
    export.add_argument(
        "model",
        choices=["minilm", "efficientnet"],
        help="minilm: all-MiniLM-L6-v2 (text); efficientnet: EfficientNet-Lite0 (image)",
    )
    export.add_argument("--out", type=Path, required=True, help="variant folder to create")
    export.add_argument(
        "--name",
        default=None,
        help="variant name (default: minilm-l6-v2 or efficientnet-lite0, after the model)",
    )
    export.add_argument("--force", action="store_true", help="replace an existing --out folder")
    export.add_argument(
        "--parity-threshold",
        type=float,
        default=DEFAULT_PARITY_THRESHOLD,
        help="minimum cosine against the PyTorch model on every parity text or image",
    )
    export.set_defaults(handler=_export)

    info = commands.add_parser(
        "info", parents=[common], help="print a variant's manifest and verify its files"
    )
    info.add_argument("variant_dir", type=Path)
    info.set_defaults(handler=_info)

    embed = commands.add_parser(
        "embed", parents=[common], help="embed texts with a variant (for debugging)"
    )
    embed.add_argument("variant_dir", type=Path)
    embed.add_argument("texts", nargs="+")
    embed.add_argument("--providers", default="auto", choices=PROVIDER_REQUESTS)
    embed.add_argument("--values", type=int, default=8, help="leading values to print per row")
    embed.set_defaults(handler=_embed)

    embed_images = commands.add_parser(
        "embed-images",
        parents=[common],
        help="embed image files with a variant's image tower (for debugging)",
    )
    embed_images.add_argument("variant_dir", type=Path)
    embed_images.add_argument("files", nargs="+", type=Path)
    embed_images.add_argument("--providers", default="auto", choices=PROVIDER_REQUESTS)
    embed_images.add_argument("--values", type=int, default=8, help="leading values per row")
    embed_images.add_argument(
        "--max-bytes", type=int, default=10 << 20, help="largest image file accepted, in bytes"
    )
    embed_images.add_argument(
        "--max-pixels", type=int, default=40_000_000, help="largest width x height accepted"
    )
    embed_images.set_defaults(handler=_embed_images)

    add_train_command(commands, parents=[common])
    return parser


def _export(arguments: argparse.Namespace) -> int:
    if arguments.model == "efficientnet":
        return _export_efficientnet(arguments)
    # Belt and braces: loading is from local paths with local_files_only, and this makes any
    # stray hub lookup in transformers fail fast instead of waiting on the network. Set before
    # transformers is first imported, which reads it at import time.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # Imported here: only export needs torch (the optional "export" extra).
    from encoders.export_minilm import DEFAULT_VARIANT_NAME, export_minilm

    manifest = export_minilm(
        arguments.out,
        name=arguments.name or DEFAULT_VARIANT_NAME,
        overwrite=arguments.force,
        parity_threshold=arguments.parity_threshold,
    )
    print(f"exported {manifest.name} to {arguments.out} (fingerprint {manifest.fingerprint})")
    return EXIT_OK


def _export_efficientnet(arguments: argparse.Namespace) -> int:
    # Imported here: only export needs torch and the EfficientNet packages.
    from encoders.export_efficientnet import (
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


def _info(arguments: argparse.Namespace) -> int:
    manifest = load_variant_manifest(arguments.variant_dir)
    print(f"variant      {manifest.name} (schema {manifest.schema_version})")
    print(f"towers       {', '.join(manifest.towers)}")
    print(f"dim          {manifest.dim}  normalised={manifest.normalised}  {manifest.precision}")
    if manifest.text is not None:
        text = manifest.text
        print(
            f"text         {text.onnx_file} + {text.tokenizer_file}, max_tokens {text.max_tokens}, "
            f"truncation {text.truncation!r}, padding {text.padding}"
        )
    if manifest.image is not None:
        image = manifest.image
        mean = ", ".join(f"{value:.4f}" for value in image.mean)
        std = ", ".join(f"{value:.4f}" for value in image.std)
        print(
            f"image        {image.onnx_file}, input {image.height}x{image.width}, resize "
            f"{image.resize} to {image.resize_to} ({image.interpolation}), crop {image.crop}, "
            f"mean ({mean}), std ({std})"
        )
    source = manifest.source_model
    print(f"source       {source.base_model} via {source.package} {source.package_version}")
    if source.exporter:
        print(f"exporter     {source.exporter}")
    if manifest.parity is not None:
        parity = manifest.parity
        print(
            f"parity       min cosine {parity.min_cosine:.6f}, mean {parity.mean_cosine:.6f}, "
            f"max abs diff {parity.max_abs_diff:.2e} on {parity.inputs} inputs "
            f"(threshold {parity.threshold})"
        )
    print(f"created_at   {manifest.created_at.isoformat()}")
    for name, digest in sorted(manifest.files.items()):
        print(f"file         {name}  sha256 {digest}")
    print(f"fingerprint  {manifest.fingerprint}")
    verify_variant_files(arguments.variant_dir, manifest)
    print("files        verified: every sha256 matches")
    return EXIT_OK


def _embed(arguments: argparse.Namespace) -> int:
    from encoders.text_encoder import OnnxTextEncoder

    encoder = OnnxTextEncoder(arguments.variant_dir, providers=arguments.providers)
    embeddings = encoder.encode_texts(arguments.texts)
    print(f"variant {encoder.name}, providers {encoder.providers}")
    print(f"shape {embeddings.shape} {embeddings.dtype}")
    for text, row in zip(arguments.texts, embeddings, strict=True):
        leading = " ".join(f"{value:+.4f}" for value in row[: arguments.values])
        print(f"{text[:40]!r:44} norm {float((row**2).sum()) ** 0.5:.4f}  [{leading} ...]")
    return EXIT_OK


def _embed_images(arguments: argparse.Namespace) -> int:
    from encoders.image_decode import ImageDecodeError, ImageLimits, decode_image
    from encoders.image_encoder import OnnxImageEncoder

    limits = ImageLimits(max_bytes=arguments.max_bytes, max_pixels=arguments.max_pixels)
    images = []
    for path in arguments.files:
        try:
            images.append(decode_image(path.read_bytes(), limits))
        except (ImageDecodeError, OSError) as error:
            logger.error("%s: %s", path, error)
            return EXIT_FAILED
    encoder = OnnxImageEncoder(arguments.variant_dir, providers=arguments.providers)
    embeddings = encoder.encode_images(images)
    print(f"variant {encoder.name}, providers {encoder.providers}")
    print(f"shape {embeddings.shape} {embeddings.dtype}")
    for path, image, row in zip(arguments.files, images, embeddings, strict=True):
        leading = " ".join(f"{value:+.4f}" for value in row[: arguments.values])
        size = f"{image.width}x{image.height}"
        norm = float((row**2).sum()) ** 0.5
        print(f"{path.name[:30]!r:34} {size:>11}  norm {norm:.4f}  [{leading} ...]")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
