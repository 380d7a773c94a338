"""``python -m index_builder``: build and verify index bundles.

``build`` takes exactly one input: ``--captions`` (a Karpathy-format captions CSV, the legacy
``captions``/``images`` collections), ``--texts`` (a JSONL / CSV / Parquet table of texts),
``--images`` (a folder of images, optional ``--metadata`` sidecar) or ``--image-table`` (a table
of image paths). See docs/ingest.md.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from encoders.image_decode import ImageLimits
from encoders.image_encoder import OnnxImageEncoder
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import VariantError, load_variant_manifest
from formats.errors import FormatError
from formats.field_types import FieldType, parse_field_declaration
from formats.karpathy import read_captions
from index_builder.build import BuildInputs, build_bundle
from index_builder.bundle import BundleError, resolve_current, verify_bundle
from index_builder.bundle_layout import CURRENT_FILE
from index_builder.embed import BUILD_IMAGE_LIMITS
from index_builder.field_schema import CorpusError
from index_builder.index_plan import INDEX_KINDS, IndexPlanError, IndexSpec, parse_byte_size
from index_builder.ingest import (
    BuildRefusedError,
    IngestOptions,
    OnError,
    default_collection_name,
    ingest,
)
from index_builder.sources import Corpus, ImageFolderCorpus, ImageTable, TextTable

# Options that belong to one input kind only (dest → the input options they fit).
_OPTION_KINDS = {
    "images_dir": ("captions",),
    "metadata": ("images",),
    "text_column": ("texts",),
    "path_column": ("image_table",),
    "id_column": ("texts", "image_table"),
    "collection": ("texts", "images", "image_table"),
    "fields": ("texts", "images", "image_table"),
    "on_error": ("texts", "images", "image_table"),
    "max_image_bytes": ("images", "image_table"),
    "max_image_pixels": ("images", "image_table"),
}
_INPUT_KINDS = ("captions", "texts", "images", "image_table")
# Options that tune --index (dest → flag); each needs --index.
_INDEX_OPTIONS = {
    "target_recall": "--target-recall",
    "memory_budget": "--memory-budget",
    "nlist": "--nlist",
    "pq_m": "--pq-m",
    "hnsw_m": "--hnsw-m",
    "tune_queries": "--tune-queries",
    "on_disk": "--on-disk",
}


def _field_declaration(text: str) -> tuple[str, FieldType]:
    try:
        return parse_field_declaration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _byte_size(text: str) -> int:
    try:
        return parse_byte_size(text)
    except IndexPlanError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _recall(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{value} is not in (0, 1]")
    return value


def _index_spec(parser: argparse.ArgumentParser, args: argparse.Namespace) -> IndexSpec | None:
    """The --index options as a spec (None without --index); a usage error where they clash."""
    if args.index is None:
        given = [flag for dest, flag in _INDEX_OPTIONS.items() if getattr(args, dest)]
        if given:
            parser.error(f"{given[0]} goes with --index")
        return None
    if args.pq_m is not None and args.index not in ("ivf-pq", "auto"):
        parser.error(f"--pq-m goes with --index ivf-pq or auto, not {args.index}")
    if args.hnsw_m is not None and args.index not in ("hnsw", "auto"):
        parser.error(f"--hnsw-m goes with --index hnsw or auto, not {args.index}")
    if args.pq_m is not None and args.hnsw_m is not None:
        parser.error("--pq-m and --hnsw-m: give the one of the kind --index picks")
    try:
        return IndexSpec(
            kind=args.index,
            target_recall=args.target_recall if args.target_recall is not None else 0.95,
            memory_budget_bytes=args.memory_budget,
            nlist=args.nlist,
            m=args.pq_m if args.pq_m is not None else args.hnsw_m,
            held_out_queries=args.tune_queries or 1000,
            on_disk=args.on_disk,
        )
    except IndexPlanError as exc:
        parser.error(str(exc))


def _check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The input kind given; a usage error for options that do not fit it."""
    kind = next(name for name in _INPUT_KINDS if getattr(args, name) is not None)
    for dest, kinds in _OPTION_KINDS.items():
        if getattr(args, dest) is not None and kind not in kinds:
            option = "--" + ("field" if dest == "fields" else dest.replace("_", "-"))
            inputs = " or ".join("--" + name.replace("_", "-") for name in kinds)
            parser.error(f"{option} goes with {inputs}")
    return kind


def _corpus(kind: str, args: argparse.Namespace) -> Corpus:
    if kind == "texts":
        return TextTable(
            path=args.texts,
            id_column=args.id_column or "id",
            text_column=args.text_column or "text",
        )
    if kind == "images":
        return ImageFolderCorpus(folder=args.images, metadata=args.metadata)
    return ImageTable(
        path=args.image_table, path_column=args.path_column or "path", id_column=args.id_column
    )


def _ingest(kind: str, args: argparse.Namespace) -> int:
    manifest = load_variant_manifest(args.variant)
    tower = "text" if kind == "texts" else "image"
    if tower not in manifest.towers:
        raise CorpusError(f"variant {manifest.name} has no {tower} tower: it cannot embed --{kind}")
    declared: dict[str, FieldType] = {}
    for name, field_type in args.fields or []:
        if name in declared:
            raise CorpusError(f"--field {name} is declared twice")
        declared[name] = field_type
    limits = ImageLimits(
        max_bytes=args.max_image_bytes or BUILD_IMAGE_LIMITS.max_bytes,
        max_pixels=args.max_image_pixels or BUILD_IMAGE_LIMITS.max_pixels,
        formats=BUILD_IMAGE_LIMITS.formats,
    )
    options = IngestOptions(
        collection=args.collection or default_collection_name(args.name),
        on_error=OnError(args.on_error or OnError.REFUSE.value),
        fields=declared,
        limits=limits,
        factory=args.factory or "Flat",
        index=args.index_spec,
        limit=args.limit,
        progress=not args.no_progress,
    )
    text_encoder = (
        OnnxTextEncoder(args.variant, providers=args.providers) if tower == "text" else None
    )
    image_encoder = (
        OnnxImageEncoder(args.variant, providers=args.providers) if tower == "image" else None
    )
    result = ingest(
        _corpus(kind, args),
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


def _build(args: argparse.Namespace) -> int:
    kind = _check_options(args.parser, args)
    args.index_spec = _index_spec(args.parser, args)
    if kind != "captions":
        return _ingest(kind, args)
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
        factory=args.factory or "Flat",
        index=args.index_spec,
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
    build.add_argument("--variant", type=Path, required=True, help="encoder variant folder")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--captions", type=Path, help="Karpathy captions CSV (legacy collections)")
    source.add_argument("--texts", type=Path, help="JSONL / CSV / Parquet table of texts")
    source.add_argument("--images", type=Path, help="folder of images (recursive)")
    source.add_argument("--image-table", type=Path, help="JSONL / CSV / Parquet table of images")
    build.add_argument(
        "--images-dir", type=Path, default=None, help="--captions: image files (image tower)"
    )
    build.add_argument(
        "--metadata", type=Path, default=None, help="--images: sidecar table keyed by 'path'"
    )
    build.add_argument("--id-column", default=None, help="id column (default: id; images: path)")
    build.add_argument("--text-column", default=None, help="--texts: text column (default: text)")
    build.add_argument(
        "--path-column", default=None, help="--image-table: image path column (default: path)"
    )
    build.add_argument(
        "--field",
        dest="fields",
        action="append",
        type=_field_declaration,
        metavar="NAME:TYPE",
        help="declare a metadata field's type (" + ", ".join(t.value for t in FieldType) + ")",
    )
    build.add_argument("--collection", default=None, help="collection name (default: from --name)")
    build.add_argument(
        "--on-error",
        choices=[policy.value for policy in OnError],
        default=None,
        help="bad items: refuse the build (default) or skip them and list them in the report",
    )
    build.add_argument(
        "--max-image-bytes",
        type=_positive,
        default=None,
        help=f"largest image file (default {BUILD_IMAGE_LIMITS.max_bytes})",
    )
    build.add_argument(
        "--max-image-pixels",
        type=_positive,
        default=None,
        help=f"largest width x height (default {BUILD_IMAGE_LIMITS.max_pixels})",
    )
    build.add_argument("--bundles-root", type=Path, default=Path("artifacts/bundles"))
    build.add_argument("--name", required=True, help="bundle name, e.g. coco-captions")
    build.add_argument("--version", default=None, help="version name (default: UTC timestamp)")
    index = build.add_mutually_exclusive_group()
    index.add_argument(
        "--factory",
        default=None,
        help="faiss index_factory string, built as is, untuned (default Flat)",
    )
    index.add_argument(
        "--index",
        choices=list(INDEX_KINDS),
        default=None,
        help="index kind, planned and tuned to --target-recall (docs/indexes.md)",
    )
    build.add_argument(
        "--target-recall", type=_recall, default=None, help="--index: recall@10 to reach (0.95)"
    )
    build.add_argument(
        "--memory-budget",
        type=_byte_size,
        default=None,
        help="--index: the index's memory, e.g. 512MiB, 2GiB, or bytes",
    )
    build.add_argument("--nlist", type=_positive, default=None, help="--index ivf-*: lists")
    build.add_argument(
        "--pq-m", type=_positive, default=None, help="--index ivf-pq: sub-quantizers (code bytes)"
    )
    build.add_argument("--hnsw-m", type=_positive, default=None, help="--index hnsw: links (32)")
    build.add_argument(
        "--tune-queries",
        type=_positive,
        default=None,
        help="--index: held-out stored rows the tuning queries with (1000)",
    )
    build.add_argument(
        "--on-disk",
        action="store_true",
        help="--index ivf-flat/ivf-pq: inverted lists in a .ivfdata file, merged from parts",
    )
    build.add_argument("--limit", type=int, default=None, help="use only the first N records")
    build.add_argument("--providers", choices=["auto", "cpu", "cuda"], default="auto")
    build.add_argument("--no-progress", action="store_true", help="hide the progress bars")
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
