"""``python -m index_builder``: build and verify index bundles."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import VariantError, load_variant_manifest
from formats.errors import FormatError
from formats.karpathy import read_captions
from index_builder.build import BuildInputs, build_bundle
from index_builder.bundle import CURRENT_FILE, BundleError, resolve_current, verify_bundle


def _build(args: argparse.Namespace) -> int:
    manifest = load_variant_manifest(args.variant)
    records = read_captions(args.captions)
    if args.limit is not None:
        records = records[: args.limit]
    text_encoder = (
        OnnxTextEncoder(args.variant, providers=args.providers)
        if "text" in manifest.towers
        else None
    )
    image_encoder = (
        OnnxImageEncoder(args.variant, providers=args.providers)
        if "image" in manifest.towers
        else None
    )
    version_dir = build_bundle(
        BuildInputs(records=records, images_dir=args.images_dir, source=args.captions),
        text_encoder=text_encoder,
        image_encoder=image_encoder,
        bundles_root=args.bundles_root,
        name=args.name,
        version=args.version,
        factory=args.factory,
        progress=not args.no_progress,
    )
    print(version_dir)
    return 0


def _verify(args: argparse.Namespace) -> int:
    path: Path = args.path
    version_dir = resolve_current(path) if (path / CURRENT_FILE).exists() else path
    manifest = verify_bundle(version_dir)
    counts = ", ".join(f"{name}={entry.count}" for name, entry in manifest.collections.items())
    print(f"ok {version_dir} variant={manifest.variant_name} dim={manifest.dim} {counts}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="python -m index_builder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser(
        "build",
        help="embed a Karpathy-format corpus (captions, and images for an image tower)",
    )
    build.add_argument("--variant", type=Path, required=True, help="encoder variant folder")
    build.add_argument("--captions", type=Path, required=True, help="Karpathy captions CSV")
    build.add_argument(
        "--images-dir", type=Path, default=None, help="image files (needed by an image tower)"
    )
    build.add_argument("--bundles-root", type=Path, default=Path("artifacts/bundles"))
    build.add_argument("--name", required=True, help="bundle name, e.g. coco-captions")
    build.add_argument("--version", default=None, help="version name (default: UTC timestamp)")
    build.add_argument("--factory", default="Flat", help="faiss index_factory string")
    build.add_argument("--limit", type=int, default=None, help="use only the first N captions")
    build.add_argument("--providers", choices=["auto", "cpu", "cuda"], default="auto")
    build.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    build.set_defaults(handler=_build)

    verify = commands.add_parser("verify", help="check a bundle's manifest and file hashes")
    verify.add_argument("path", type=Path, help="a version folder or a bundle folder with CURRENT")
    verify.set_defaults(handler=_verify)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m index_builder`` and ``crisscross-index``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (BundleError, VariantError, FormatError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
