"""``python -m cluster build``: ``python -m index_builder build`` with the embedding on Ray.

The options are those of the single-machine build where they apply (one input: ``--texts``,
``--images``, ``--image-table`` or ``--captions``), plus where and how to run: ``--ray-address``
(default: start a local cluster of ``--num-cpus`` CPUs and an object store of
``--object-store-mb``), ``--workers``, ``--part-size``, ``--gpu-actors``. It prints the new
version folder on stdout and the summary and throughput table on stderr; exit status 0, 1 when
the build is refused or fails (nothing written), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import cast

from cluster.build import (
    CaptionsCorpus,
    ClusterOptions,
    DistributedBuildError,
    GpuActors,
    distributed_build,
)
from cluster.embedding_parts import DEFAULT_PART_SIZE
from cluster.runtime import ClusterError, RayOptions, ray_cluster
from encoders.image_decode import ImageLimits
from encoders.providers import ProviderRequest
from encoders.variant import VariantError
from formats.errors import FormatError
from formats.field_types import FieldType, parse_field_declaration
from index_builder.bundle import BundleError
from index_builder.embed import BUILD_IMAGE_LIMITS
from index_builder.field_schema import CorpusError
from index_builder.ingest import BuildRefusedError, IngestOptions, OnError, default_collection_name
from index_builder.sources import Corpus, ImageFolderCorpus, ImageTable, TextTable

_INPUT_KINDS = ("captions", "texts", "images", "image_table")
# Options that belong to one input kind only (dest → the input options they fit).
_OPTION_KINDS = {
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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``build`` subcommand."""
    build = commands.add_parser(
        "build",
        help="embed a corpus on Ray Data actors into a new bundle version",
        description=(
            "Embed one corpus with one variant on a Ray cluster into a new bundle version: "
            "the same bundle as `python -m index_builder build` (docs/distributed-build.md)."
        ),
    )
    build.add_argument("--variant", type=Path, required=True, help="encoder variant folder")
    source = build.add_mutually_exclusive_group(required=True)
    source.add_argument("--captions", type=Path, help="Karpathy captions CSV (captions only)")
    source.add_argument("--texts", type=Path, help="JSONL / CSV / Parquet table of texts")
    source.add_argument("--images", type=Path, help="folder of images (recursive)")
    source.add_argument("--image-table", type=Path, help="JSONL / CSV / Parquet table of images")
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
    build.add_argument("--max-image-bytes", type=_positive, default=None)
    build.add_argument("--max-image-pixels", type=_positive, default=None)
    build.add_argument("--bundles-root", type=Path, default=Path("artifacts/bundles"))
    build.add_argument("--name", required=True, help="bundle name, e.g. coco-captions")
    build.add_argument("--version", default=None, help="version name (default: UTC timestamp)")
    build.add_argument("--factory", default="Flat", help="faiss index_factory string")
    build.add_argument("--limit", type=_positive, default=None, help="first N records only")
    build.add_argument("--providers", choices=["auto", "cpu", "cuda"], default="auto")
    build.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    cluster = build.add_argument_group("cluster")
    cluster.add_argument(
        "--ray-address",
        default=None,
        help="an existing cluster ('auto', 'ray://head:10001'); default: start a local one",
    )
    cluster.add_argument(
        "--num-cpus", type=_positive, default=4, help="local cluster: logical CPUs (default 4)"
    )
    cluster.add_argument(
        "--object-store-mb",
        type=_positive,
        default=256,
        help="local cluster: object store size in MiB (default 256, at least 75)",
    )
    cluster.add_argument("--workers", type=_positive, default=2, help="embedding actors")
    cluster.add_argument(
        "--part-size",
        type=_positive,
        default=DEFAULT_PART_SIZE,
        help=f"items per part, the unit of work and of retry (default {DEFAULT_PART_SIZE})",
    )
    cluster.add_argument(
        "--gpu-actors",
        choices=["auto", "on", "off"],
        default="auto",
        help="one GPU per actor: auto (when the cluster has GPUs), on, off",
    )
    cluster.add_argument(
        "--cpus-per-worker",
        type=_positive_float,
        default=None,
        help="logical CPUs each actor reserves (default: 1, less on a small cluster)",
    )
    cluster.add_argument(
        "--threads-per-worker",
        type=_positive,
        default=None,
        help="onnxruntime threads per actor (default: its CPUs, at least 1)",
    )
    cluster.add_argument(
        "--staging-dir",
        type=Path,
        default=None,
        help="where the parts go, on storage every node sees (default: beside the versions)",
    )
    build.set_defaults(handler=_handle, parser=build)


def _check_options(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    kind = next(name for name in _INPUT_KINDS if getattr(args, name) is not None)
    for dest, kinds in _OPTION_KINDS.items():
        if getattr(args, dest) is not None and kind not in kinds:
            option = "--" + ("field" if dest == "fields" else dest.replace("_", "-"))
            inputs = " or ".join("--" + name.replace("_", "-") for name in kinds)
            parser.error(f"{option} goes with {inputs}")
    return kind


def _corpus(kind: str, args: argparse.Namespace) -> Corpus | CaptionsCorpus:
    if kind == "captions":
        return CaptionsCorpus(path=args.captions)
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


def _build(args: argparse.Namespace, kind: str) -> int:
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
    collection = "captions" if kind == "captions" else None
    options = IngestOptions(
        collection=collection or args.collection or default_collection_name(args.name),
        on_error=OnError(args.on_error or OnError.REFUSE.value),
        fields=declared,
        limits=limits,
        factory=args.factory,
        limit=args.limit,
        progress=not args.no_progress,
    )
    cluster = ClusterOptions(
        workers=args.workers,
        part_size=args.part_size,
        gpu_actors=cast(GpuActors, args.gpu_actors),
        cpus_per_worker=args.cpus_per_worker,
        intra_op_threads=args.threads_per_worker,
        providers=cast(ProviderRequest, args.providers),
        staging_root=args.staging_dir,
    )
    ray_options = RayOptions(
        address=args.ray_address,
        num_cpus=args.num_cpus,
        object_store_bytes=args.object_store_mb << 20,
    )
    with ray_cluster(ray_options):
        result = distributed_build(
            _corpus(kind, args),
            variant_dir=args.variant,
            bundles_root=args.bundles_root,
            name=args.name,
            options=options,
            cluster=cluster,
            version=args.version,
        )
    if result.report is not None:
        for line in result.report.summary():
            print(line, file=sys.stderr)
    print(result.throughput_table(), file=sys.stderr)
    if result.retried_parts:
        retried = ", ".join(str(part) for part in sorted(result.retried_parts))
        print(f"retried parts: {retried}", file=sys.stderr)
    print(result.version_dir)
    return 0


def _handle(args: argparse.Namespace) -> int:
    kind = _check_options(args.parser, args)
    try:
        return _build(args, kind)
    except BuildRefusedError as refused:
        for line in refused.lines():
            print(f"error: {line}" if line is refused.headline else line, file=sys.stderr)
        return 1
    except (
        BundleError,
        VariantError,
        FormatError,
        CorpusError,
        ClusterError,
        DistributedBuildError,
        OSError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
