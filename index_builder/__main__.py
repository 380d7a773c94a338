"""``python -m index_builder``: build and verify index bundles.

``build`` takes exactly one input: ``--captions`` (a Karpathy-format captions CSV: the
``captions`` collection, and with an image tower and ``--images-dir`` the ``images`` one),
``--texts`` (a JSONL / CSV / Parquet table of texts), ``--images`` (a folder of images, optional
``--metadata`` sidecar) or ``--image-table`` (a table of image paths), all through one pipeline
(:func:`index_builder.ingest.ingest`). See docs/ingest.md.
"""

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
from index_builder.bad_item_policy import BuildRefusedError
from index_builder.build_options import (
    add_build_arguments,
    corpus_from,
    index_spec,
    ingest_options,
    input_kind,
)
from index_builder.field_schema import CorpusError
from index_builder.ingest import ingest
from index_builder.preconditions import plan_collections
from storage.index_plan import IndexPlanError
from storage.layout import CURRENT_FILE
from storage.manifest import BundleError, verify_bundle
from storage.reader import resolve_current


def _build(args: argparse.Namespace) -> int:
    kind = input_kind(args.parser, args)
    options = ingest_options(args, kind, index_spec(args.parser, args))
    manifest = load_variant_manifest(args.variant)
    corpus = corpus_from(args, kind)
    plans = plan_collections(
        corpus, manifest.towers, variant=manifest.name, collection=options.collection
    )
    towers = {plan.tower for plan in plans}  # load only the towers the build uses
    threads = args.intra_op_threads
    text_encoder = (
        OnnxTextEncoder(args.variant, providers=args.providers, intra_op_threads=threads)
        if "text" in towers
        else None
    )
    image_encoder = (
        OnnxImageEncoder(args.variant, providers=args.providers, intra_op_threads=threads)
        if "image" in towers
        else None
    )
    result = ingest(
        corpus,
        text_encoder=text_encoder,
        image_encoder=image_encoder,
        bundles_root=args.bundles_root,
        name=args.name,
        version=args.version,
        options=options,
    )
    for line in result.report.summary():
        print(line, file=sys.stderr)
    print(result.version_dir)
    return 0


def _verify(args: argparse.Namespace) -> int:
    path: Path = args.path
    version_dir = resolve_current(path) if (path / CURRENT_FILE).exists() else path
    manifest = verify_bundle(version_dir)
    counts = ", ".join(f"{name}={entry.count}" for name, entry in manifest.collections.items())
    print(f"ok {version_dir} variant={manifest.variant_name} dim={manifest.dim} {counts}")
    for name, entry in manifest.collections.items():
        tuning = entry.tuning
        if tuning is None:
            continue
        shortfall = "met" if tuning.met else "NOT met"
        disk = f", lists on disk in {entry.ivfdata_file}" if entry.ivfdata_file else ""
        print(
            f"  {name}: {tuning.index_kind or entry.factory} {entry.factory}, "
            f"{tuning.parameter}={tuning.value}, recall@10 {tuning.recall_at_10:.4f} on "
            f"{tuning.held_out_queries} held-out queries (target {tuning.target_recall}, "
            f"{shortfall}){disk}"
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(prog="python -m index_builder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    build = commands.add_parser(
        "build",
        help="embed a corpus: Karpathy captions, a table of texts, images, or a table of images",
        description="Embed one corpus with one variant into a new bundle version (docs/ingest.md).",
    )
    add_build_arguments(
        build,
        captions_help="Karpathy captions CSV (collections captions, and images with --images-dir)",
        images_dir=True,
        limit_type=int,
    )
    build.set_defaults(handler=_build, parser=build)

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
    except BuildRefusedError as refused:
        for line in refused.lines():
            print(f"error: {line}" if line is refused.headline else line, file=sys.stderr)
        return 1
    except (BundleError, VariantError, FormatError, CorpusError, IndexPlanError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
