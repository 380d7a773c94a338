"""Command line of the encoders package (console script ``crisscross-encoders``).

python -m encoders export minilm --out artifacts/variants/minilm-l6-v2 [--name N] [--force]
python -m encoders export efficientnet --out artifacts/variants/efficientnet-lite0
python -m encoders export clip --from ~/models/clip-vit-base-patch32 --out artifacts/variants/b32
python -m encoders quantize --from artifacts/variants/minilm-l6-v2 --precision int8 \
    --out artifacts/variants/minilm-l6-v2-int8 --captions captions_val.csv
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
from encoders.variant import (
    ParityReport,
    Tower,
    VariantError,
    VariantManifest,
    load_variant_manifest,
    parity_status,
    verify_variant_files,
)

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
        choices=["minilm", "efficientnet", "clip"],
        help="minilm: all-MiniLM-L6-v2 (text); efficientnet: EfficientNet-Lite0 (image); clip: "
        "a Hugging Face or open_clip CLIP checkpoint folder given by --from (text + image)",
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
        help="variant name (default: minilm-l6-v2 or efficientnet-lite0 after the model; for "
        "clip the --from folder's name)",
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


def _export_clip(arguments: argparse.Namespace) -> int:
    if arguments.source is None:
        logger.error("export clip needs --from CHECKPOINT_DIR")
        return EXIT_FAILED
    # Imported here: only export needs torch and transformers.
    from encoders.export_clip import default_variant_name, export_clip
    from encoders.open_clip_convert import OpenClipConversionError

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
    from encoders.quantize import derive_variant

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
