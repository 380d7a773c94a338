"""Settings of the compare run (``python -m benchmarks compare``), each field its own option."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from benchmarks.runs.compare.levers import SETTING_HELP, LeverSetting, setting_argument
from benchmarks.runs.option_types import (
    at_least_zero,
    int_list,
    positive_int,
    quality_task_list,
    variant_list,
)
from benchmarks.runs.options import (
    data_option,
    no_progress_option,
    option,
    out_option,
    ready_timeout_option,
    url_option,
)
from benchmarks.runs.quality.config import BULK_SIZE, QualityRunConfig
from evaluation.data.corpus import DATASETS
from evaluation.data.task_plan import QUALITY_TASKS
from evaluation.metrics.correlation import DEFAULT_SAMPLES

DEFAULT_COMPARE_TASKS: Final = ("t2t", "t2t_cocaptions", "sts")
LATENCY_TARGETS: Final = ("captions", "images")
COMPARE_HTML_QUERIES: Final = 500
"""Default bound on ``compare.html``'s per-query sample (per variant, all streams)."""


def _settings_tuple(given: list[LeverSetting] | None) -> tuple[LeverSetting, ...]:
    """``--setting``'s values (a list, or ``None`` when not given) as the field's tuple."""
    return tuple(given or ())


@dataclass(frozen=True, kw_only=True)
class CompareConfig:
    """Settings of one comparison run (fields on the command line in ``--help`` order).

    The run's rows (:meth:`rows`) are its lever settings, or one setting per variant.

    Attributes:
        url: the service root URL.
        variants: the variant names to compare (distinct); the first is the baseline of the
            report's "vs baseline" columns. Each is the setting that names only that variant.
        lever_settings: the rows instead of ``variants`` (distinct names; the first is the
            baseline): :class:`~benchmarks.runs.compare.levers.LeverSetting`, each search of
            the run (quality and latency, every task) carrying its variant and levers. Give
            exactly one of ``variants`` and ``lever_settings``.
        data_dir: the data folder (``coco-karpathy-captions/``, ``cxc/``, ...).
        split: the split name in the file names.
        dataset: ``coco-karpathy`` or ``scenes``.
        out_dir: where the command line writes the report (not used by the run itself).
        tasks: quality tasks, a subset of :data:`evaluation.data.task_plan.QUALITY_TASKS`; the
            default needs a text tower only.
        limit_queries: each retrieval task's first N queries only; all when ``None``.
        k: results per retrieval query.
        concurrency_levels: closed-loop concurrency levels.
        latency_requests: measured requests per variant and level (split over the rounds).
        rounds: latency chunks per variant and level, variants taking turns (1 = back to back).
        warmup_requests: unrecorded requests before each measured chunk.
        latency_k: ``k`` of the latency searches.
        bootstrap_samples: Spearman bootstrap samples.
        seed: seed of the bootstrap and of the latency query order.
        ready_timeout_s: how long to wait for ``/readyz``.
        request_timeout_s: per-request timeout, seconds.
        show_progress: draw tqdm progress bars on stderr during the quality replays.
        html_queries: most queries of ``compare.html``'s per-query sample: the first variant's
            quality run samples them (the quality run's rule), every other variant records the
            same query ids; 0: no sample.
        collection: the caption collection's name (each variant serves its own).
        images_collection: the image collection's name.
        latency_target: ``captions`` or ``images``: which of the two the latency searches
            (caption texts) go to — ``images`` measures text→image searches, e.g. a setting
            whose keywords are on an image field.
        probe_k: results asked for first per retrieval query (see :class:`QualityRunConfig`).
        replay_concurrency: requests in flight during the quality replays.
        bulk_size: searches per bulk search request.
        score_batch: pairs per ``POST /v1/score``.
    """

    url: str = field(metadata=url_option())
    variants: tuple[str, ...] = field(
        default=(),
        metadata=option(
            "--variants",
            parse=variant_list,
            help="comma-separated variant names; the first is the baseline (or --setting)",
        ),
    )
    lever_settings: tuple[LeverSetting, ...] = field(
        default=(),
        metadata=option(
            "--setting",
            parse=setting_argument,
            repeat=True,
            convert=_settings_tuple,
            help=SETTING_HELP,
        ),
    )
    data_dir: Path = field(metadata=data_option())
    split: str = field(
        default="val", metadata=option("--split", help="split name in the data file names (val)")
    )
    dataset: str = field(
        default="coco-karpathy", metadata=option("--dataset", choices=DATASETS, help="corpus")
    )
    out_dir: Path | None = field(default=None, metadata=out_option("compare.json/.md/.png"))
    tasks: tuple[str, ...] = field(
        default=DEFAULT_COMPARE_TASKS,
        metadata=option(
            "--tasks",
            parse=quality_task_list,
            help=f"quality tasks ({','.join(DEFAULT_COMPARE_TASKS)}: a text tower suffices)",
        ),
    )
    limit_queries: int | None = field(
        default=None,
        metadata=option("--limit-queries", parse=positive_int, help="first N queries per task"),
    )
    k: int = field(
        default=1000, metadata=option("--k", parse=positive_int, help="results per query (1000)")
    )
    concurrency_levels: tuple[int, ...] = field(
        default=(1, 8),
        metadata=option("--concurrency", parse=int_list, help="latency levels (1,8)"),
    )
    latency_requests: int = field(
        default=300,
        metadata=option(
            "--latency-requests",
            parse=positive_int,
            help="measured requests per variant and level (300)",
        ),
    )
    rounds: int = field(
        default=3,
        metadata=option(
            "--rounds",
            parse=positive_int,
            help="latency chunks per variant and level, variants taking turns; 1 = back to back "
            "(3)",
        ),
    )
    warmup_requests: int = field(
        default=20,
        metadata=option(
            "--warmup",
            parse=int,
            convert=at_least_zero,
            help="warm-up requests per chunk (20)",
        ),
    )
    latency_k: int = field(
        default=10, metadata=option("--latency-k", parse=positive_int, help="k of latency queries")
    )
    bootstrap_samples: int = field(
        default=DEFAULT_SAMPLES,
        metadata=option("--bootstrap-samples", parse=positive_int, help="(1000)"),
    )
    seed: int = field(
        default=0, metadata=option("--seed", parse=int, help="bootstrap / query order seed (0)")
    )
    ready_timeout_s: float = field(default=120.0, metadata=ready_timeout_option())
    request_timeout_s: float = field(
        default=60.0, metadata=option("--timeout", parse=float, help="per-request timeout, s")
    )
    show_progress: bool = field(default=True, metadata=no_progress_option())
    html_queries: int = field(
        default=COMPARE_HTML_QUERIES,
        metadata=option(
            "--html-queries",
            parse=int,
            convert=at_least_zero,
            help=f"queries in compare.html's per-query sample, 0: none ({COMPARE_HTML_QUERIES})",
        ),
    )
    collection: str = field(
        default="captions",
        metadata=option("--collection", help="caption collection name (captions)"),
    )
    images_collection: str = field(
        default="images",
        metadata=option("--images-collection", help="image collection name (images)"),
    )
    latency_target: str = field(
        default="captions",
        metadata=option(
            "--latency-collection",
            choices=LATENCY_TARGETS,
            help="the collection the latency searches (caption texts) go to: the caption or the "
            "image collection (captions)",
        ),
    )
    probe_k: int = 20
    replay_concurrency: int = 8
    bulk_size: int = field(
        default=BULK_SIZE,
        metadata=option(
            "--bulk-size",
            parse=positive_int,
            help=f"searches per /v1/search/bulk request (≤ service max_bulk_searches; {BULK_SIZE})",
        ),
    )
    score_batch: int = 1024

    def __post_init__(self) -> None:
        if self.variants and self.lever_settings:
            raise ValueError("give --variants or --setting, not both")
        if not self.variants and not self.lever_settings:
            raise ValueError("name at least one variant (--variants) or setting (--setting)")
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants repeat: {list(self.variants)}")
        names = [setting.name for setting in self.lever_settings]
        if len(set(names)) != len(names):
            raise ValueError(f"setting names repeat: {names}")
        unknown = sorted(set(self.tasks) - set(QUALITY_TASKS))
        if unknown:
            raise ValueError(f"unknown quality task(s) {unknown}; choose from {QUALITY_TASKS}")
        if not self.concurrency_levels or min(self.concurrency_levels) < 1:
            raise ValueError("concurrency levels must be positive")
        if self.rounds < 1 or self.latency_requests < self.rounds:
            raise ValueError("need rounds ≥ 1 and latency_requests ≥ rounds")
        if self.warmup_requests < 0:
            raise ValueError("warmup_requests must be ≥ 0")
        if self.html_queries < 0:
            raise ValueError("html_queries must be ≥ 0")
        if self.latency_target not in LATENCY_TARGETS:
            raise ValueError(f"latency_target must be one of {list(LATENCY_TARGETS)}")
        for row in self.rows():
            window = row.sent_window()
            if window is not None and window < self.latency_k:
                raise ValueError(
                    f"setting {row.name!r}: window {window} is less than --latency-k "
                    f"{self.latency_k} (a search asks for at most its window)"
                )
            # The rest is checked by the QualityRunConfig each row gets.
            self.quality_config(row)

    @property
    def by_settings(self) -> bool:
        """Whether the rows are lever settings (``--setting``) rather than variants."""
        return bool(self.lever_settings)

    def rows(self) -> tuple[LeverSetting, ...]:
        """The rows of the comparison, in order (the first is the baseline): the lever
        settings, else one setting per variant naming only it."""
        if self.lever_settings:
            return self.lever_settings
        return tuple(LeverSetting.of_variant(variant) for variant in self.variants)

    def quality_config(
        self,
        row: LeverSetting | str,
        query_ids: Mapping[str, tuple[str, ...]] | None = None,
        tasks: tuple[str, ...] | None = None,
    ) -> QualityRunConfig:
        """The quality run of one row (a setting, or a variant's name): this run's tasks (or
        ``tasks``) and settings, no latency phase, every search carrying the row's variant and
        levers and asking for at most its window; its per-query sample records ``query_ids``
        (stream → ids) when given, else samples."""
        setting = LeverSetting.of_variant(row) if isinstance(row, str) else row
        return QualityRunConfig(
            url=self.url,
            data_dir=self.data_dir,
            split=self.split,
            dataset=self.dataset,
            collection=self.collection,
            images_collection=self.images_collection,
            tasks=self.tasks if tasks is None else tasks,
            k=setting.quality_k(self.k),
            probe_k=self.probe_k,
            limit_queries=self.limit_queries,
            replay_concurrency=self.replay_concurrency,
            bulk_size=self.bulk_size,
            score_batch=self.score_batch,
            bootstrap_samples=self.bootstrap_samples,
            seed=self.seed,
            variant=setting.variant,
            ready_timeout_s=self.ready_timeout_s,
            request_timeout_s=self.request_timeout_s,
            show_progress=self.show_progress,
            html_queries=self.html_queries,
            html_query_ids=query_ids,
            search_fields=setting.search_fields() or None,
        )

    @property
    def latency_collection(self) -> str:
        """The service's name of the collection the latency searches go to."""
        return self.collection if self.latency_target == "captions" else self.images_collection

    def chunk_sizes(self) -> list[int]:
        """Measured requests of each round's chunk (they add up to ``latency_requests``)."""
        base, extra = divmod(self.latency_requests, self.rounds)
        return [base + (1 if index < extra else 0) for index in range(self.rounds)]

    def settings(self) -> dict[str, object]:
        """``compare.json``'s ``settings``: every setting but the URL, variants, folders and
        progress bars (``latency_collection`` only when it is not the caption collection)."""
        settings: dict[str, object] = {
            "split": self.split,
            "dataset": self.dataset,
            "collection": self.collection,
            "images_collection": self.images_collection,
            "tasks": list(self.tasks),
            "k": self.k,
            "probe_k": self.probe_k,
            "limit_queries": self.limit_queries,
            "replay_concurrency": self.replay_concurrency,
            "bulk_size": self.bulk_size,
            "score_batch": self.score_batch,
            "bootstrap_samples": self.bootstrap_samples,
            "seed": self.seed,
            "concurrency_levels": list(self.concurrency_levels),
            "latency_requests": self.latency_requests,
            "warmup_requests": self.warmup_requests,
            "latency_k": self.latency_k,
            "rounds": self.rounds,
            "ready_timeout_s": self.ready_timeout_s,
            "request_timeout_s": self.request_timeout_s,
            "html_queries": self.html_queries,
        }
        if self.latency_target != "captions":
            settings["latency_collection"] = self.latency_collection
        return settings
