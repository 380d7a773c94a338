"""The distributed build: the same bundle as ``python -m index_builder build``, with the
embedding done by Ray Data actors (docs/distributed-build.md).

1. **read** (driver): the corpus is streamed with the project's own readers
   (:func:`index_builder.sources.stream_corpus`): a first pass types the fields and finds the
   bad records, a second cuts the good items into *parts* of ``part_size``, each written to the
   staging folder as soon as it is full (:mod:`cluster.embedding_parts`); image files are
   checked (size, format, pixels) on the way, as the single-machine build checks them;
2. with ``on_error=refuse`` and any bad item: stop before starting a single actor;
3. **embed** (cluster): ``ray.data.from_items`` of the part indexes →
   ``map_batches(PartEmbedder, ActorPoolStrategy(size=workers))``: each actor loads the encoder
   once and writes each part's vectors and result atomically, keyed by the part's index. Ray
   Data restarts a killed actor and retries its part (``max_restarts`` / ``max_task_retries``
   -1, Ray Data's defaults for actor pools); a retried part rewrites the same files, so nothing
   is lost or duplicated, and the driver checks that every part is there exactly once;
4. **write** (driver): ids and metadata in part order, vectors copied part by part into one
   memory map, then :func:`storage.writer.write_bundle` (atomic publish) with
   ``build_report.json`` and the per-worker throughput in ``build_info``.

The caller connects to Ray first (:func:`cluster.runtime.ray_cluster`).
"""

from __future__ import annotations

import logging
import platform
import shutil
import tempfile
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NoReturn

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
from encoders.variant import load_variant_manifest
from formats.hashing import sha256_file
from formats.karpathy import read_captions
from index_builder.build import caption_metadata
from index_builder.build_report import REPORT_FILE, BuildReport
from index_builder.field_schema import CorpusError
from index_builder.image_checks import check_image_file
from index_builder.index_writer import index_writer
from index_builder.ingest import BuildRefusedError, IngestOptions, OnError
from index_builder.items import BadItem, ImageItem, ItemOrigin, TextItem
from index_builder.sources import (
    Corpus,
    TextTable,
    corpus_inputs,
    corpus_kind,
    stream_corpus,
)
from storage.layout import COLLECTION_PATTERN
from storage.writer import CollectionInput, write_bundle

logger = logging.getLogger(__name__)

GpuActors = Literal["auto", "on", "off"]


class DistributedBuildError(RuntimeError):
    """The Ray job failed (a part failed on every attempt, the cluster went away) or its parts
    do not add up; nothing was written."""


@dataclass(frozen=True)
class CaptionsCorpus:
    """A Karpathy captions CSV, built as its ``captions`` collection (text tower)."""

    path: Path


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
    """The new version folder, its report (None for a captions build, which writes none, as the
    single-machine build) and the job's throughput."""

    version_dir: Path
    report: BuildReport | None
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


def _checked_images(
    items: Iterable[TextItem | ImageItem], options: IngestOptions, bad: list[BadItem]
) -> Iterator[TextItem | ImageItem]:
    """The image items whose files look usable (as the single-machine build checks them, in
    threads, a chunk at a time); the others go to ``bad``."""
    chunk: list[ImageItem] = []
    with ThreadPoolExecutor(max_workers=options.check_workers) as pool:

        def flush() -> Iterator[ImageItem]:
            faults = pool.map(lambda item: check_image_file(item.file, options.limits), chunk)
            for item, fault in zip(chunk, faults, strict=True):
                if fault is None:
                    yield item
                else:
                    bad.append(BadItem(item.origin, fault[0], fault[1], item.item_id))

        for item in items:
            if not isinstance(item, ImageItem):
                raise CorpusError("an image corpus yielded a text item")
            chunk.append(item)
            if len(chunk) == 256:
                yield from flush()
                chunk = []
        yield from flush()


def _nothing_left(read: int) -> str:
    return f"nothing to index: none of the {read} records is usable; nothing written"


def _refuse(bad: Sequence[BadItem], read: int, headline: str) -> NoReturn:
    raise BuildRefusedError(bad, read=read, headline=headline)


def _inputs(corpus: Corpus | CaptionsCorpus) -> dict[str, object]:
    if isinstance(corpus, CaptionsCorpus):
        return {"path": str(corpus.path), "sha256": sha256_file(corpus.path)}
    return corpus_inputs(corpus)


def _caption_items(corpus: CaptionsCorpus, limit: int | None) -> list[TextItem]:
    records = read_captions(corpus.path)
    if limit is not None:
        records = records[:limit]
    return [
        TextItem(
            item_id=record.key,
            text=record.text,
            origin=ItemOrigin(str(corpus.path), row=record.row + 1),
            metadata=caption_metadata(record),  # type: ignore[arg-type]
        )
        for record in records
    ]


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
    corpus: Corpus | CaptionsCorpus,
    *,
    variant_dir: Path,
    bundles_root: Path,
    name: str,
    options: IngestOptions,
    cluster: ClusterOptions,
    version: str | None = None,
) -> DistributedResult:
    """Read ``corpus`` on this machine, embed it on the cluster, write one collection of a new
    bundle version (``options.collection``; ``captions`` for a :class:`CaptionsCorpus`).

    Raises :class:`BuildRefusedError`, :class:`CorpusError`, ``formats.errors.FormatError``,
    ``encoders.variant.VariantError``, ``storage.manifest.BundleError`` as the
    single-machine build, and :class:`DistributedBuildError`; nothing is written then.
    """
    captions = isinstance(corpus, CaptionsCorpus)
    collection = "captions" if captions else options.collection
    if not COLLECTION_PATTERN.match(collection):
        raise CorpusError(f"collection name {collection!r} does not match ^[a-z][a-z0-9_]{{0,63}}$")
    manifest = load_variant_manifest(variant_dir)
    tower: Literal["text", "image"] = (
        "text" if isinstance(corpus, TextTable | CaptionsCorpus) else "image"
    )
    if tower not in manifest.towers:
        raise CorpusError(
            "a table of texts needs a variant with a text tower"
            if tower == "text"
            else "images need a variant with an image tower"
        )
    actors = _actors(cluster)
    started = time.perf_counter()
    inputs = _inputs(corpus)
    bundle_dir = bundles_root / name
    staging_parent = cluster.staging_root or bundle_dir
    staging_parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".ray-build-", dir=staging_parent))
    try:
        timings: dict[str, float] = {}
        bad: list[BadItem] = []
        if isinstance(corpus, CaptionsCorpus):
            caption_items = _caption_items(corpus, options.limit)
            read = len(caption_items)
            fields = None
            notes: dict[str, object] = {}
            specs = split_into_parts(caption_items, staging, cluster.part_size)
            del caption_items
        else:
            stream = stream_corpus(
                corpus, declared=options.fields, limit=options.limit, progress=options.progress
            )
            read = stream.read
            fields = stream.schema.types
            notes = dict(stream.notes)
            items: Iterable[TextItem | ImageItem] = stream.items()
            if tower == "image":
                items = _checked_images(items, options, bad)
            specs = split_into_parts(items, staging, cluster.part_size)
            bad = list(stream.bad) + bad
        timings["read"] = time.perf_counter() - started
        if bad and options.on_error is OnError.REFUSE:
            _refuse(
                bad,
                read,
                f"refused: {len(bad)} of {read} records are bad; nothing was embedded or "
                "written (--on-error skip leaves them out)",
            )
        if not specs:
            _refuse(bad, read, _nothing_left(read))

        config = EmbedConfig(
            variant_dir=Path(variant_dir).resolve(),
            tower=tower,
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
        if failed and options.on_error is OnError.REFUSE:
            _refuse(
                bad,
                read,
                f"refused: {len(failed)} image(s) could not be decoded while embedding; "
                "nothing was written (--on-error skip leaves them out)",
            )
        assembled = assemble(staging, results, manifest.dim)
        if not assembled.ids:
            _refuse(bad, read, _nothing_left(read))
        workers = throughput_by_worker(results)
        attempts = attempts_per_part(staging)
        retried = {part: tried for part, tried in attempts.items() if len(tried) > 1}
        indexed = len(assembled.ids)
        span = embedding_span(results)
        ray_info = _ray_info(
            actors, specs, workers, retried, indexed, timings["embed"], span, cluster
        )
        report: BuildReport | None = None
        extra_files: dict[str, bytes] = {}
        if not isinstance(corpus, CaptionsCorpus):
            timings["total"] = time.perf_counter() - started
            report = BuildReport(
                collection=collection,
                kind=corpus_kind(corpus),
                inputs=inputs,
                on_error=options.on_error.value,
                read=read,
                indexed=indexed,
                skipped=sorted(bad, key=BadItem.sort_key),
                fields=fields or {},
                timings=timings,
                notes={**notes, "ray": ray_info},
            )
            extra_files[REPORT_FILE] = report.to_bytes()
        build_info = _build_info(report, collection, inputs, timings, results, ray_info)
        collection_input = CollectionInput(
            name=collection,
            ids=assembled.ids,
            metadata=assembled.metadata,
            vectors=assembled.vectors,
            index=index_writer(options.factory, options.index),
            fields=fields,
            image_paths=[Path(path) for path in assembled.payloads] if tower == "image" else None,
        )
        version_dir = write_bundle(
            bundles_root,
            name,
            [collection_input],
            variant_name=manifest.name,
            variant_fingerprint=manifest.fingerprint,
            version=version,
            build_info=build_info,
            extra_files=extra_files,
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


def _build_info(
    report: BuildReport | None,
    collection: str,
    inputs: Mapping[str, object],
    timings: Mapping[str, float],
    results: Sequence[PartResult],
    ray_info: Mapping[str, object],
) -> dict[str, object]:
    """The manifest's ``build_info``: the single-machine build's (its ``source`` for captions,
    which have no report), with ``mode``, the providers the workers used and ``ray``."""
    providers = sorted({provider for result in results for provider in result.providers})
    common: dict[str, object] = {
        "mode": "ray",
        "embed_seconds": {collection: round(timings["embed"], 3)},
        "providers": providers,
        "host": platform.node(),
        "ray": dict(ray_info),
    }
    if report is None:
        return {**common, "source": dict(inputs)}
    return {**common, **report.build_info(), "report": REPORT_FILE}
