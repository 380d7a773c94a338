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

from cluster.build import ClusterOptions, DistributedBuildError, GpuActors, distributed_build
from cluster.embedding_parts import DEFAULT_PART_SIZE
from cluster.runtime import ClusterError, add_ray_arguments, ray_cluster, ray_options_from
from encoders.providers import ProviderRequest
from encoders.variant import VariantError
from formats.errors import FormatError
from index_builder.bad_item_policy import BuildRefusedError
from index_builder.build_options import (
    add_build_arguments,
    corpus_from,
    index_spec,
    ingest_options,
    input_kind,
    positive_int,
)
from index_builder.field_schema import CorpusError
from storage.index_plan import IndexPlanError, IndexSpec
from storage.manifest import BundleError


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
    add_build_arguments(
        build,
        captions_help="Karpathy captions CSV (captions only)",
        images_dir=False,
        limit_type=positive_int,
    )
    cluster = build.add_argument_group("cluster")
    add_ray_arguments(cluster)
    cluster.add_argument("--workers", type=positive_int, default=2, help="embedding actors")
    cluster.add_argument(
        "--part-size",
        type=positive_int,
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
        type=positive_int,
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


def _build(args: argparse.Namespace, kind: str, index: IndexSpec | None) -> int:
    options = ingest_options(args, kind, index)
    corpus = corpus_from(args, kind)  # --captions: read here, before a cluster is started
    cluster = ClusterOptions(
        workers=args.workers,
        part_size=args.part_size,
        gpu_actors=cast(GpuActors, args.gpu_actors),
        cpus_per_worker=args.cpus_per_worker,
        intra_op_threads=args.threads_per_worker,
        providers=cast(ProviderRequest, args.providers),
        staging_root=args.staging_dir,
    )
    ray_options = ray_options_from(args)
    with ray_cluster(ray_options):
        result = distributed_build(
            corpus,
            variant_dir=args.variant,
            bundles_root=args.bundles_root,
            name=args.name,
            options=options,
            cluster=cluster,
            version=args.version,
        )
    for line in result.report.summary():
        print(line, file=sys.stderr)
    print(result.throughput_table(), file=sys.stderr)
    if result.retried_parts:
        retried = ", ".join(str(part) for part in sorted(result.retried_parts))
        print(f"retried parts: {retried}", file=sys.stderr)
    print(result.version_dir)
    return 0


def _handle(args: argparse.Namespace) -> int:
    kind = input_kind(args.parser, args)
    index = index_spec(args.parser, args)
    try:
        return _build(args, kind, index)
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
        IndexPlanError,
        OSError,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
