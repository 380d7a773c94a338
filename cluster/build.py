"""The distributed build: the same bundle as ``python -m index_builder build``, with the
embedding done by Ray Data actors (docs/distributed-build.md).

0. **plan** (driver): the collection and the tower, with the single-machine build's checks
   (:func:`index_builder.preconditions.plan_collections`). One collection: a table of texts, a
   folder or a table of images, or Karpathy captions' ``captions`` (their images are built by
   ``python -m index_builder build``; an images folder is refused here);
1. **read** (driver): the corpus is streamed with the project's own readers
   (:func:`index_builder.corpus_stream.stream_collection`): a first pass types the fields and
   finds the bad records, a second cuts the good items into *parts* of ``part_size``, each
   written to the staging folder as soon as it is full (:mod:`cluster.embedding_parts`); image
   files are checked (size, format, pixels) on the way by the single-machine build's check
   (:func:`index_builder.image_checks.checked_images`);
2. with ``on_error=refuse`` and any bad item: stop before starting a single actor (the
   refusals are the single-machine build's, :mod:`index_builder.bad_item_policy`);
3. **embed** (cluster): ``ray.data.from_items`` of the part indexes →
   ``map_batches(PartEmbedder, ActorPoolStrategy(size=workers))``: each actor loads the encoder
   once and writes each part's vectors and result atomically, keyed by the part's index. Ray
   Data restarts a killed actor and retries its part (``max_restarts`` / ``max_task_retries``
   -1, Ray Data's defaults for actor pools); a retried part rewrites the same files, so nothing
   is lost or duplicated, and the driver checks that every part is there exactly once;
4. **write** (driver): ids and metadata in part order, vectors copied part by part into one
   memory map, then the single-machine build's report and writer
   (:func:`index_builder.ingest.write_build`: atomic publish, ``build_report.json``) with the
   per-worker throughput in ``build_info`` and in the report's notes.

The caller connects to Ray first (:func:`cluster.runtime.ray_cluster`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import ray
import ray.data
import ray.data.exceptions
from tqdm import tqdm

from cluster.embedding_parts import (
    DEFAULT_PART_SIZE,
    EmbedConfig,
    PartEmbedder,
    PartResult,
    PartsError,
    PartSpec,
    WorkerThroughput,
    assemble,
    attempts_per_part,
    check_parts,
    embedding_span,
    failed_items,
    split_into_parts,
    throughput_by_worker,
    throughput_table,
)
from encoders.providers import ProviderRequest
from encoders.variant import VariantManifest, load_variant_manifest
from index_builder.bad_item_policy import (
    OnError,
    refuse_bad_items,
    refuse_decode_failures,
    refuse_if_empty,
)
from index_builder.build_report import BuildReport, CollectionReport
from index_builder.corpus import Corpus, KarpathyCaptions, corpus_inputs, corpus_kind
from index_builder.corpus_stream import stream_collection
from index_builder.field_schema import CorpusError
from index_builder.image_checks import checked_images
from index_builder.ingest import IngestOptions, collection_input, write_build
from index_builder.items import BadItem, ImageItem, TextItem
from index_builder.preconditions import CollectionPlan, plan_collections

logger = logging.getLogger(__name__)

GpuActors = Literal["auto", "on", "off"]


class DistributedBuildError(RuntimeError):
    """The Ray job failed (a part failed on every attempt, the cluster went away) or its parts
    do not add up; nothing was written."""


@dataclass(frozen=True)
class ClusterOptions:
    """How the embedding runs on the cluster.

    ``workers``: actors in the pool. ``part_size``: items per part. ``gpu_actors``: ``on`` gives
    each actor a GPU, ``off`` none, ``auto`` one when the cluster has GPUs (the pool then has at
    most one actor per GPU). ``cpus_per_worker``: logical CPUs each actor reserves (default: 1,
    less when ``workers`` would otherwise take every CPU of the cluster, so Ray Data's own tasks
    can still run); ``intra_op_threads``: onnxruntime threads per actor (default: the CPUs it
    reserves, at least 1). ``staging_root``: where the parts go (default: beside the bundle's
    versions); every node must see it, as it sees the corpus and the variant. ``pause_s``: see
    :class:`cluster.embedding_parts.EmbedConfig`.
    """

    workers: int = 2
    part_size: int = DEFAULT_PART_SIZE
    gpu_actors: GpuActors = "auto"
    cpus_per_worker: float | None = None
    intra_op_threads: int | None = None
    providers: ProviderRequest = "auto"
    staging_root: Path | None = None
    keep_staging: bool = False
    pause_s: float = 0.0

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise CorpusError(f"workers must be at least 1, got {self.workers}")
        if self.part_size < 1:
            raise CorpusError(f"part_size must be at least 1, got {self.part_size}")
        if self.cpus_per_worker is not None and self.cpus_per_worker <= 0:
            raise CorpusError(f"cpus_per_worker must be positive, got {self.cpus_per_worker}")


@dataclass(frozen=True)
class DistributedResult:
    """The new version folder, its report and the job's throughput."""

    version_dir: Path
    report: BuildReport
    workers: list[WorkerThroughput]
    embed_wall_s: float
    embed_span_s: float
    indexed: int
    retried_parts: dict[int, list[str]] = field(default_factory=dict)

    def throughput_table(self) -> str:
        """Per worker, and the total from the first part's start to the last one's end; then
        the whole job, the actors' start-up included."""
        rate = self.indexed / self.embed_wall_s if self.embed_wall_s > 0 else 0.0
        return (
            throughput_table(self.workers, self.indexed, self.embed_span_s)
            + f"\njob: {self.indexed} items in {self.embed_wall_s:.2f} s with the actors' "
            f"start-up, {rate:.1f} items/s"
        )


@dataclass(frozen=True)
class _Actors:
    size: int
    num_cpus: float
    num_gpus: float
    threads: int


def _actors(options: ClusterOptions) -> _Actors:
    resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
    cpus = float(resources.get("CPU", 0.0))
    gpus = int(resources.get("GPU", 0.0))
    use_gpus = options.gpu_actors == "on" or (options.gpu_actors == "auto" and gpus > 0)
    if options.gpu_actors == "on" and gpus < 1:
        raise DistributedBuildError("--gpu-actors on, but the cluster has no GPU")
    size = options.workers
    if use_gpus and size > gpus:
        logger.info("%d GPU(s) in the cluster: %d actor(s), not %d", gpus, gpus, size)
        size = gpus
    if options.cpus_per_worker is not None:
        num_cpus = options.cpus_per_worker
    elif use_gpus:
        num_cpus = 1.0
    else:
        # Leave at least one CPU to Ray Data's own tasks: actors holding every CPU deadlock them.
        num_cpus = min(1.0, max(cpus - 1.0, 0.25) / size)
    if num_cpus * size > cpus:
        raise DistributedBuildError(
            f"{size} workers x {num_cpus} CPU do not fit in the cluster's {cpus:g} CPUs"
        )
    threads = options.intra_op_threads
    if threads is None:
        threads = max(1, int(num_cpus))
    return _Actors(size=size, num_cpus=num_cpus, num_gpus=1.0 if use_gpus else 0.0, threads=threads)


def _data_context() -> Any:
    """Ray Data's context, made without the deprecation warnings its constructor emits about
    settings this build never touches."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"ray\.data\.context")
        context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    return context


def _image_items(items: Iterable[TextItem | ImageItem]) -> Iterator[ImageItem]:
    for item in items:
        if not isinstance(item, ImageItem):
            raise CorpusError("an image corpus yielded a text item")
        yield item


def _plan(corpus: Corpus, manifest: VariantManifest, options: IngestOptions) -> CollectionPlan:
    """The one collection this build writes, planned as the single-machine build plans it;
    of Karpathy captions, the ``captions`` collection (their text tower) only."""
    towers: list[str] = list(manifest.towers)
    if isinstance(corpus, KarpathyCaptions):
        if corpus.images_dir is not None:
            raise CorpusError(
                "the distributed build embeds Karpathy captions into their captions collection "
                "only: leave out the images folder (python -m index_builder build --captions "
                "--images-dir builds the images collection too)"
            )
        towers = [tower for tower in towers if tower == "text"]
    plans = plan_collections(corpus, towers, variant=manifest.name, collection=options.collection)
    if len(plans) != 1:
        raise CorpusError(f"the distributed build writes one collection, not {len(plans)}")
    return plans[0]


def _run_parts(
    specs: Sequence[PartSpec], config: EmbedConfig, actors: _Actors, progress: bool
) -> list[int]:
    """Run the Ray Data job; the part indexes as the actors report them."""
    _data_context()
    dataset: ray.data.Dataset = ray.data.from_items(
        [{"part": spec.index} for spec in specs], override_num_blocks=len(specs)
    )
    dataset = dataset.map_batches(
        PartEmbedder,
        fn_constructor_kwargs={"config": config},
        batch_size=1,
        compute=ray.data.ActorPoolStrategy(size=actors.size),
        num_cpus=actors.num_cpus,
        num_gpus=actors.num_gpus or None,
    )
    total_items = sum(spec.count for spec in specs)
    reported: list[int] = []
    started = time.perf_counter()
    done_items = 0
    with tqdm(total=len(specs), desc="embedding parts", unit="part", disable=not progress) as bar:
        try:
            for row in dataset.iter_rows():
                reported.append(int(row["part"]))
                done_items += int(row["count"])
                elapsed = time.perf_counter() - started
                bar.set_postfix_str(
                    f"{done_items}/{total_items} items, {done_items / max(elapsed, 1e-9):.0f}/s"
                )
                bar.update(1)
        except (ray.exceptions.RayError, ray.data.exceptions.SystemException) as exc:
            raise DistributedBuildError(f"the Ray job failed: {_cause(exc)}") from exc
    return reported


def _cause(error: BaseException) -> str:
    """The first line of a Ray error and, when it differs, its last (the worker's own error)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


def distributed_build(
    corpus: Corpus,
    *,
    variant_dir: Path,
    bundles_root: Path,
    name: str,
    options: IngestOptions,
    cluster: ClusterOptions,
    version: str | None = None,
) -> DistributedResult:
    """Read ``corpus`` on this machine, embed it on the cluster, write one collection of a new
    bundle version (``options.collection``; ``captions`` for Karpathy captions).

    Raises :class:`~index_builder.bad_item_policy.BuildRefusedError`, :class:`CorpusError`,
    ``formats.errors.FormatError``, ``encoders.variant.VariantError``,
    ``storage.manifest.BundleError`` as the single-machine build, and
    :class:`DistributedBuildError`; nothing is written then.
    """
    manifest = load_variant_manifest(variant_dir)
    plan = _plan(corpus, manifest, options)
    actors = _actors(cluster)
    started = time.perf_counter()
    inputs = corpus_inputs(corpus)
    bundle_dir = bundles_root / name
    staging_parent = cluster.staging_root or bundle_dir
    staging_parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".ray-build-", dir=staging_parent))
    try:
        timings: dict[str, float] = {}
        checked: list[BadItem] = []
        stream = stream_collection(
            corpus, plan, declared=options.fields, limit=options.limit, progress=options.progress
        )
        read = stream.read
        items: Iterable[TextItem | ImageItem] = stream.items()
        if plan.tower == "image":
            items = checked_images(
                _image_items(items), options.limits, checked, workers=options.check_workers
            )
        specs = split_into_parts(items, staging, cluster.part_size)
        bad = list(stream.bad) + checked
        timings["read"] = time.perf_counter() - started
        refuse_bad_items(bad, read, options.on_error)
        refuse_if_empty(plan.name, sum(spec.count for spec in specs), bad, read)

        config = EmbedConfig(
            variant_dir=Path(variant_dir).resolve(),
            tower=plan.tower,
            staging=staging.resolve(),
            providers=cluster.providers,
            intra_op_threads=actors.threads,
            text_batch_size=options.text_batch_size,
            image_batch_size=options.image_batch_size,
            decode_workers=options.decode_workers,
            limits=options.limits,
            stop_at_failure=options.on_error is OnError.REFUSE,
            pause_s=cluster.pause_s,
        )
        mark = time.perf_counter()
        reported = _run_parts(specs, config, actors, options.progress)
        timings["embed"] = time.perf_counter() - mark
        try:
            results = check_parts(specs, reported, staging)
        except PartsError as exc:
            raise DistributedBuildError(str(exc)) from exc
        _check_variant(results, manifest.name, manifest.fingerprint)
        failed = failed_items(staging, results)
        bad.extend(failed)
        refuse_decode_failures(bad, len(failed), read, options.on_error, stopped=False)
        assembled = assemble(staging, results, manifest.dim)
        refuse_if_empty(plan.name, len(assembled.ids), bad, read)
        workers = throughput_by_worker(results)
        attempts = attempts_per_part(staging)
        retried = {part: tried for part, tried in attempts.items() if len(tried) > 1}
        indexed = len(assembled.ids)
        span = embedding_span(results)
        ray_info = _ray_info(
            actors, specs, workers, retried, indexed, timings["embed"], span, cluster
        )
        collection = collection_input(
            plan.name,
            assembled.ids,
            assembled.metadata,
            assembled.vectors,
            stream.schema,
            options,
            image_paths=(
                [Path(path) for path in assembled.payloads] if plan.tower == "image" else None
            ),
        )
        report = BuildReport(
            kind=corpus_kind(corpus),
            inputs=inputs,
            on_error=options.on_error.value,
            collections=[
                CollectionReport(
                    name=plan.name,
                    read=read,
                    indexed=indexed,
                    skipped=sorted(bad, key=BadItem.sort_key),
                    fields=dict(collection.fields or {}),
                    timings=timings,
                    notes=dict(stream.notes),
                )
            ],
            total=time.perf_counter() - started,
            notes={"ray": ray_info},
        )
        version_dir = write_build(
            bundles_root,
            name,
            [collection],
            report,
            variant_name=manifest.name,
            variant_fingerprint=manifest.fingerprint,
            providers=sorted({provider for result in results for provider in result.providers}),
            version=version,
            extra_info={"mode": "ray", "ray": ray_info},
        )
    finally:
        if not cluster.keep_staging:
            shutil.rmtree(staging, ignore_errors=True)
    logger.info("wrote %s in %.1f s", version_dir, time.perf_counter() - started)
    return DistributedResult(
        version_dir=version_dir,
        report=report,
        workers=workers,
        embed_wall_s=timings["embed"],
        embed_span_s=span,
        indexed=indexed,
        retried_parts=retried,
    )


def _check_variant(results: Sequence[PartResult], name: str, fingerprint: str) -> None:
    seen = {(result.variant_name, result.variant_fingerprint) for result in results}
    if seen != {(name, fingerprint)}:
        raise DistributedBuildError(
            f"the workers embedded with {sorted(seen)}, not variant {name} ({fingerprint[:12]}): "
            "every node must hold the same variant files"
        )


def _ray_info(
    actors: _Actors,
    specs: Sequence[PartSpec],
    workers: Sequence[WorkerThroughput],
    retried: Mapping[int, list[str]],
    indexed: int,
    embed_s: float,
    span_s: float,
    cluster: ClusterOptions,
) -> dict[str, object]:
    """``throughput.total``: items/s over the span from the first part's start to the last
    part's end (``span_s``), and over the whole job with the actors' start-up (``wall_s``)."""
    return {
        "workers": actors.size,
        "cpus_per_worker": actors.num_cpus,
        "gpus_per_worker": actors.num_gpus,
        "intra_op_threads": actors.threads,
        "part_size": cluster.part_size,
        "parts": len(specs),
        "retried_parts": {str(part): list(tried) for part, tried in sorted(retried.items())},
        "throughput": {
            "workers": [worker.to_json() for worker in workers],
            "total": {
                "items": indexed,
                "span_s": round(span_s, 3),
                "items_per_s": round(indexed / span_s, 1) if span_s > 0 else 0.0,
                "wall_s": round(embed_s, 3),
                "wall_items_per_s": round(indexed / embed_s, 1) if embed_s > 0 else 0.0,
            },
        },
    }
