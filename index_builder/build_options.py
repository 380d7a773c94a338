"""The build's command-line options, shared by ``python -m index_builder build`` and
``python -m cluster build``: one input (``--captions``, ``--texts``, ``--images`` or
``--image-table``) and the options that fit it, the bundle's name and version, the index
(``--factory``, or ``--index`` planned and tuned with ``--target-recall`` ...), and what they
become: the input kind, the :class:`IndexSpec`, the :class:`IngestOptions` and the corpus
(``--captions``: its records read, the first ``--limit`` of them).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from encoders.image_decode import ImageLimits
from formats.field_types import FieldType, parse_field_declaration
from formats.karpathy import read_captions
from index_builder.bad_item_policy import OnError
from index_builder.corpus import Corpus, ImageFolderCorpus, ImageTable, KarpathyCaptions, TextTable
from index_builder.embed import BUILD_IMAGE_LIMITS
from index_builder.field_schema import CorpusError
from index_builder.ingest import IngestOptions
from index_builder.preconditions import CAPTIONS_COLLECTION, default_collection_name
from storage.index_plan import INDEX_KINDS, IndexPlanError, IndexSpec, parse_byte_size

INPUT_KINDS = ("captions", "texts", "images", "image_table")
"""The input options, as ``argparse`` dests; a build takes exactly one."""
# Options that belong to one input kind only (dest → the input options they fit). A parser
# without one of them (the distributed build has no --images-dir) simply never sees it given.
_OPTION_KINDS = {
    "images_dir": ("captions",),
    "metadata": ("images",),
    "text_column": ("texts",),
    "path_column": ("image_table",),
    "id_column": ("texts", "image_table"),
    "collection": ("texts", "images", "image_table"),
    "fields": ("texts", "images", "image_table"),
    "on_error": ("captions", "texts", "images", "image_table"),
    "max_image_bytes": ("captions", "images", "image_table"),
    "max_image_pixels": ("captions", "images", "image_table"),
}
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


def positive_int(text: str) -> int:
    """``argparse`` type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def non_negative_int(text: str) -> int:
    """``argparse`` type: an integer of at least 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} is negative")
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


def add_build_arguments(
    build: argparse.ArgumentParser,
    *,
    captions_help: str,
    images_dir: bool,
    limit_type: Callable[[str], int],
) -> None:
    """Declare the build's options on ``build``. ``captions_help`` describes ``--captions``;
    ``images_dir`` adds ``--images-dir`` (the captions' image files); ``limit_type`` parses
    ``--limit``."""
    build.add_argument("--variant", type=Path, required=True, help="encoder variant folder")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--captions", type=Path, help=captions_help)
    source.add_argument("--texts", type=Path, help="JSONL / CSV / Parquet table of texts")
    source.add_argument("--images", type=Path, help="folder of images (recursive)")
    source.add_argument("--image-table", type=Path, help="JSONL / CSV / Parquet table of images")
    if images_dir:
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
        type=positive_int,
        default=None,
        help=f"largest image file (default {BUILD_IMAGE_LIMITS.max_bytes})",
    )
    build.add_argument(
        "--max-image-pixels",
        type=positive_int,
        default=None,
        help=f"largest width x height (default {BUILD_IMAGE_LIMITS.max_pixels})",
    )
    build.add_argument("--bundles-root", type=Path, default=Path("artifacts/bundles"))
    build.add_argument("--name", required=True, help="bundle name, e.g. coco-captions")
    build.add_argument("--version", default=None, help="version name (default: UTC timestamp)")
    _add_index_arguments(build)
    build.add_argument(
        "--limit", type=limit_type, default=None, help="use only the first N records"
    )
    build.add_argument("--providers", choices=["auto", "cpu", "cuda"], default="auto")
    build.add_argument(
        "--intra-op-threads",
        type=non_negative_int,
        default=0,
        help="onnxruntime threads of each encoder (0 = one per core); 1 leaves the other "
        "cores to builds running beside it",
    )
    build.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def _add_index_arguments(build: argparse.ArgumentParser) -> None:
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
    build.add_argument("--nlist", type=positive_int, default=None, help="--index ivf-*: lists")
    build.add_argument(
        "--pq-m",
        type=positive_int,
        default=None,
        help="--index ivf-pq: sub-quantizers (code bytes)",
    )
    build.add_argument("--hnsw-m", type=positive_int, default=None, help="--index hnsw: links (32)")
    build.add_argument(
        "--tune-queries",
        type=positive_int,
        default=None,
        help="--index: held-out stored rows the tuning queries with (1000)",
    )
    build.add_argument(
        "--on-disk",
        action="store_true",
        help="--index ivf-flat/ivf-pq: inverted lists in a .ivfdata file, merged from parts",
    )


def input_kind(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The input kind given (one of :data:`INPUT_KINDS`); a usage error for options that do
    not fit it."""
    kind = next(name for name in INPUT_KINDS if getattr(args, name) is not None)
    for dest, kinds in _OPTION_KINDS.items():
        if getattr(args, dest, None) is not None and kind not in kinds:
            option = "--" + ("field" if dest == "fields" else dest.replace("_", "-"))
            inputs = " or ".join("--" + name.replace("_", "-") for name in kinds)
            parser.error(f"{option} goes with {inputs}")
    return kind


def index_spec(parser: argparse.ArgumentParser, args: argparse.Namespace) -> IndexSpec | None:
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


def factory_of(args: argparse.Namespace) -> str:
    """The faiss factory string given (``Flat`` without ``--factory``)."""
    return str(args.factory or "Flat")


def ingest_options(args: argparse.Namespace, kind: str, index: IndexSpec | None) -> IngestOptions:
    """The options as :class:`IngestOptions` (``--captions`` names its collections itself:
    ``captions``, and ``images`` with an image tower).

    Raises :class:`CorpusError` for a field declared twice or a bundle name that gives no
    collection name."""
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
    collection = CAPTIONS_COLLECTION if kind == "captions" else None
    return IngestOptions(
        collection=collection or args.collection or default_collection_name(args.name),
        on_error=OnError(args.on_error or OnError.REFUSE.value),
        fields=declared,
        limits=limits,
        factory=factory_of(args),
        index=index,
        limit=args.limit,
        progress=not args.no_progress,
    )


def corpus_from(args: argparse.Namespace, kind: str) -> Corpus:
    """The corpus of ``--captions`` (its records read from the CSV, the first ``--limit`` of
    them, and ``--images-dir`` where the parser has it), ``--texts``, ``--images`` or
    ``--image-table`` (``kind``). Raises ``formats.errors.FormatError`` or ``OSError`` for a
    captions file that cannot be read."""
    if kind == "captions":
        records = read_captions(args.captions)
        if args.limit is not None:
            records = records[: args.limit]
        return KarpathyCaptions(
            records=records, source=args.captions, images_dir=getattr(args, "images_dir", None)
        )
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
