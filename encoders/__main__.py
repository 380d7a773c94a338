"""Command line of the encoders package (console script ``crisscross-encoders``): inspect and try
the variants the service serves. Exporting, quantizing and training are ``python -m training``.

python -m encoders info artifacts/variants/minilm-l6-v2
python -m encoders embed artifacts/variants/minilm-l6-v2 "a dog on a couch" "a cat"
python -m encoders embed-images artifacts/variants/efficientnet-lite0 photo.jpg other.png
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence
from pathlib import Path

from encoders.command_line import EXIT_FAILED, EXIT_OK, log_level_options, run_command
from encoders.providers import PROVIDER_REQUESTS, ProviderError
from encoders.variant import (
    ParityReport,
    VariantError,
    load_variant_manifest,
    parity_status,
    verify_variant_files,
)

logger = logging.getLogger("encoders")

# Domain errors a command reports as one logged line and exit status 1.
_HANDLED = (VariantError, ProviderError)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); returns the process exit code."""
    return run_command(_parser(), argv, logger=logger, handled=_HANDLED)


def _parser() -> argparse.ArgumentParser:
    common = log_level_options()
    parser = argparse.ArgumentParser(
        prog="python -m encoders", description="Inspect and try encoder variants."
    )
    commands = parser.add_subparsers(dest="command", required=True)

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
    return parser


def _parity_line(report: ParityReport) -> str:
    """One report's numbers and its label (recomputed for manifests older than the label)."""
    status = report.status or parity_status(report.min_cosine, report.threshold)
    return (
        f"min cosine {report.min_cosine:.6f}, mean {report.mean_cosine:.6f}, max abs diff "
        f"{report.max_abs_diff:.2e} on {report.inputs} inputs (threshold {report.threshold}): "
        f"{status}"
    )


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
    if manifest.derived_from is not None:
        derived = manifest.derived_from
        print(
            f"derived from {derived.name} ({derived.precision}, {derived.fingerprint[:12]}…) for "
            f"{derived.target}: {derived.method}"
        )
    if manifest.parity is not None:
        print(f"parity       {_parity_line(manifest.parity)}")
    for tower, report in (manifest.parity_by_tower or {}).items():
        print(f"  {tower:11}{_parity_line(report)}")
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
