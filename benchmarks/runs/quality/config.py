"""Settings of the quality run (``python -m benchmarks cxc``), each field its own option."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchmarks.runs.option_types import at_least_zero, int_list, positive_int, task_list
from benchmarks.runs.options import (
    data_option,
    no_progress_option,
    option,
    out_option,
    ready_timeout_option,
    url_option,
)
from evaluation.data.corpus import DATASETS, default_images_dir
from evaluation.data.task_plan import (
    ALL_TASKS,
    CAPTION_QUERY_MODES,
    IMAGE_QUERY_MODES,
    RETRIEVAL_TASKS,
    CaptionQueryMode,
    ImageQueryMode,
)
from evaluation.metrics.correlation import DEFAULT_SAMPLES

BULK_SIZE = 256
"""Default searches per bulk request, the service's default ``max_bulk_searches``: 3,000 MiniLM
t2t queries on 2 cores took a median 15.0 s at 256, 16.2 s at 128, 18.3 s at 64 (2 in flight;
3 in flight: the same)."""
HTML_QUERIES = 2000
"""The command line's bound on the HTML report's per-query sample (≤ 500 per query stream)."""
CiderMode = Literal["auto", "off"]
CIDER_MODES: tuple[CiderMode, ...] = ("auto", "off")


@dataclass(frozen=True, kw_only=True)
class QualityRunConfig:
    """Settings of one quality run (fields in the order ``--help`` lists their options).

    Attributes:
        url: the service root URL.
        split: the split name in the file names (``val``, ``test``).
        data_dir: the data folder (holds ``cxc/``, ``coco-karpathy-captions/``, ``bison/``).
        out_dir: where the command line writes the report (not used by the run itself).
        dataset: ``coco-karpathy`` or ``scenes``, written to the report (also picks the image
            file-name pattern for BISON images outside the split).
        collection: the caption collection's name in the service.
        images_collection: the image collection's name in the service.
        images_dir: folder with the split's image files (uploads); ``<data>/images/<split>``
            when ``None`` and that folder exists.
        image_queries: ``item`` (query images by reference) or ``upload`` (send the bytes).
        caption_queries: ``text`` (the service encodes each caption) or ``item`` (query
            captions by reference: their stored vectors, no encoding).
        bison_file: the BISON CSV; ``<data>/bison/bison_<split>.csv`` or
            ``<data>/bison/bison_shared.csv`` when ``None``.
        tasks: which of :data:`ALL_TASKS` to run (those the service cannot answer are skipped).
        k: results asked for per retrieval query (≤ the service's ``max_k``; clipped to the
            target collection's size).
        probe_k: results asked for first per retrieval query; a query with no positive among
            them (for some task) is asked for the next page, down to 100, then down to ``k``
            (same ranks, far fewer results sent).
        limit_queries: use only each retrieval task's first N queries; all when ``None``.
        replay_concurrency: requests in flight during the quality replays (fewer bulk searches
            and score batches: see their phases).
        bulk_size: searches per bulk search request of the retrieval replays.
        score_batch: pairs per ``POST /v1/score`` request (≤ the service's ``max_score_pairs``).
        max_uploads_per_request: image uploads per ``/v1/score`` or bulk search request (≤ the
            service's ``max_images_per_request``).
        max_upload_bytes: base64 image bytes per ``/v1/score`` request (keep the body under
            the service's ``max_body_bytes``).
        bootstrap_samples: Spearman bootstrap samples.
        seed: seed of the bootstrap and of the latency query order.
        concurrency_levels: closed-loop latency concurrency levels.
        latency_requests: measured requests per level.
        warmup_requests: unrecorded requests per level before measuring.
        latency_k: ``k`` of the latency queries.
        variant: encoder variant to ask for; the service default when ``None``.
        ready_timeout_s: how long to wait for ``/readyz``.
        request_timeout_s: per-request timeout.
        show_progress: draw tqdm progress bars on stderr.
        cider: ``auto``: add NCS, SR and the false-negative view to i2t / t2i from the split's
            CIDEr-D matrix (read from the cache when its hash matches, else built); ``off``:
            none of them. The command line's default is ``auto``.
        cider_cache_dir: where the CIDEr-D matrix is cached (``<data>/cider`` when writable,
            else ``artifacts/cache/cider``, when ``None``).
        recall_eq1: keep each query's top result ids and add R (eq. 1), ``R_eq1@K``, to every
            retrieval task (always on the command line).
        html_queries: most queries in the HTML report's per-query sample (``report.html``,
            :mod:`~benchmarks.runs.quality.query_records`); 0: no sample. The command line's
            default is :data:`HTML_QUERIES`.
        html_query_ids: stream (``t2t``, ``i2t``, ...) → the query ids the per-query sample
            records instead of sampling (the compare run gives every variant the first one's);
            ``None``: the seeded sample. Not on the command line.
        search_fields: fields every search of the run carries besides its query, collection,
            k, exclusions and variant (``mode``, ``fusion``, ``window``, ``rerank``,
            ``search_params``, ...: the compare run's lever settings); ``None``: none. Not on
            the command line.
    """

    url: str = field(metadata=url_option())
    split: str = field(
        default="val", metadata=option("--split", help="split name in the data file names (val)")
    )
    data_dir: Path = field(
        metadata=data_option("coco-karpathy-captions/, cxc/, bison/ [, images/<split>/]")
    )
    out_dir: Path | None = field(default=None, metadata=out_option("report.json/.md/.png"))
    dataset: str = field(
        default="coco-karpathy",
        metadata=option(
            "--dataset",
            choices=DATASETS,
            help="which corpus the data folder holds (coco-karpathy)",
        ),
    )
    collection: str = field(
        default="captions", metadata=option("--collection", help="caption collection name")
    )
    images_collection: str = field(
        default="images", metadata=option("--images-collection", help="image collection name")
    )
    images_dir: Path | None = field(
        default=None,
        metadata=option(
            "--images-dir",
            parse=Path,
            help="folder of the split's image files, by file name (default <data>/images/<split> "
            "when it exists); used for --image-queries upload and for images not served",
        ),
    )
    image_queries: ImageQueryMode = field(
        default="item",
        metadata=option(
            "--image-queries",
            choices=IMAGE_QUERY_MODES,
            help="send image queries as item references or as uploaded file bytes (item)",
        ),
    )
    caption_queries: CaptionQueryMode = field(
        default="text",
        metadata=option(
            "--caption-queries",
            choices=CAPTION_QUERY_MODES,
            help="send retrieval caption queries as texts (encoded by the service) or as item "
            "references to the served captions (their stored vectors; no encoding) (text)",
        ),
    )
    bison_file: Path | None = field(
        default=None,
        metadata=option(
            "--bison",
            parse=Path,
            help="BISON CSV (default <data>/bison/bison_<split>.csv, else bison_shared.csv)",
        ),
    )
    tasks: tuple[str, ...] = field(
        default=ALL_TASKS,
        metadata=option(
            "--tasks",
            parse=task_list,
            help=f"comma-separated subset of {','.join(ALL_TASKS)} (all)",
        ),
    )
    k: int = field(
        default=1000,
        metadata=option(
            "--k", parse=positive_int, help="results per query (≤ service max_k; 1000)"
        ),
    )
    probe_k: int = field(
        default=20,
        metadata=option(
            "--probe-k",
            parse=positive_int,
            help="results asked for first; a query with no positive among them is asked "
            "for the next page, down to 100, then down to --k (20)",
        ),
    )
    limit_queries: int | None = field(
        default=None,
        metadata=option("--limit-queries", parse=positive_int, help="first N queries only"),
    )
    replay_concurrency: int = field(
        default=8,
        metadata=option(
            "--replay-concurrency", parse=positive_int, help="quality replay in flight (8)"
        ),
    )
    bulk_size: int = field(
        default=BULK_SIZE,
        metadata=option(
            "--bulk-size",
            parse=positive_int,
            help=f"searches per /v1/search/bulk request (≤ service max_bulk_searches; {BULK_SIZE})",
        ),
    )
    score_batch: int = field(
        default=1024,
        metadata=option("--score-batch", parse=positive_int, help="pairs per /v1/score (1024)"),
    )
    max_uploads_per_request: int = field(
        default=32,
        metadata=option(
            "--max-uploads",
            parse=positive_int,
            help="image uploads per /v1/score or bulk search request (≤ service "
            "max_images_per_request; 32)",
        ),
    )
    max_upload_bytes: int = field(
        default=900_000,
        metadata=option(
            "--max-upload-bytes",
            parse=positive_int,
            help="base64 image bytes per /v1/score request (< service max_body_bytes; 900000)",
        ),
    )
    bootstrap_samples: int = field(
        default=DEFAULT_SAMPLES,
        metadata=option("--bootstrap-samples", parse=positive_int, help="(1000)"),
    )
    seed: int = field(
        default=0, metadata=option("--seed", parse=int, help="bootstrap / latency order seed (0)")
    )
    concurrency_levels: tuple[int, ...] = field(
        default=(1, 8),
        metadata=option("--concurrency", parse=int_list, help="latency levels, e.g. 1,8 (1,8)"),
    )
    latency_requests: int = field(
        default=300,
        metadata=option("--latency-requests", parse=positive_int, help="measured per level (300)"),
    )
    warmup_requests: int = field(
        default=20,
        metadata=option(
            "--warmup",
            parse=int,
            convert=at_least_zero,
            help="warm-up requests per level (20)",
        ),
    )
    latency_k: int = field(
        default=10, metadata=option("--latency-k", parse=positive_int, help="k of latency queries")
    )
    variant: str | None = field(
        default=None, metadata=option("--variant", help="encoder variant (service default)")
    )
    ready_timeout_s: float = field(default=120.0, metadata=ready_timeout_option())
    request_timeout_s: float = field(
        default=60.0, metadata=option("--timeout", parse=float, help="per-request timeout, seconds")
    )
    show_progress: bool = field(default=True, metadata=no_progress_option())
    cider: CiderMode = field(
        default="off",
        metadata=option(
            "--cider",
            cli_default="auto",
            choices=CIDER_MODES,
            help="NCS, SR and the false-negative view for i2t/t2i from the split's CIDEr-D matrix "
            "(cached; built when missing), or off (auto)",
        ),
    )
    cider_cache_dir: Path | None = field(
        default=None,
        metadata=option(
            "--cider-cache",
            parse=Path,
            help="CIDEr-D cache folder (<data>/cider when writable, else artifacts/cache/cider)",
        ),
    )
    recall_eq1: bool = field(default=False, metadata=option(None, cli_default=True))
    html_queries: int = field(default=0, metadata=option(None, cli_default=HTML_QUERIES))
    html_query_ids: Mapping[str, tuple[str, ...]] | None = field(default=None, hash=False)
    search_fields: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.tasks) - set(ALL_TASKS))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; choose from {list(ALL_TASKS)}")
        if self.k < 10 and any(task in RETRIEVAL_TASKS for task in self.tasks):
            raise ValueError("k must be at least 10 to report R@10")
        if self.limit_queries is not None and self.limit_queries < 1:
            raise ValueError("limit_queries must be at least 1")
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {list(DATASETS)}; got {self.dataset!r}")
        if self.image_queries not in IMAGE_QUERY_MODES:
            raise ValueError(f"image_queries must be one of {list(IMAGE_QUERY_MODES)}")
        if self.caption_queries not in CAPTION_QUERY_MODES:
            raise ValueError(f"caption_queries must be one of {list(CAPTION_QUERY_MODES)}")
        if self.max_uploads_per_request < 2 or self.max_upload_bytes < 1:
            raise ValueError("need max_uploads_per_request ≥ 2 and max_upload_bytes ≥ 1")
        if self.html_queries < 0:
            raise ValueError("html_queries must be at least 0")
        if self.cider not in CIDER_MODES:
            raise ValueError(f"cider must be one of {list(CIDER_MODES)}; got {self.cider!r}")

    def resolved_images_dir(self) -> Path | None:
        """``images_dir``, or ``<data>/images/<split>`` when that exists, or ``None``."""
        if self.images_dir is not None:
            return self.images_dir
        return default_images_dir(self.data_dir, self.split)
