"""Several encoder variants of one live service, measured in one run: quality against cost.

``python -m benchmarks compare --variants a,b`` asks one service, over HTTP only, for:

1. ``GET /v1/variants``: every requested variant must be loaded; its precision, providers really
   in use (per tower), dimension and served bundle versions go into the report;
2. quality, variant after variant: the same CxC tasks (:func:`benchmarks.cxc.run_cxc` with
   ``variant=...``, so each variant's own collections and sizes are used) on the same queries
   (``limit_queries`` keeps each task's first N);
3. cost: closed-loop text searches (:func:`benchmarks.latency.closed_loop`, k = ``latency_k``) at
   each concurrency level, the same shuffled caption texts for every variant. With ``rounds``
   > 1 the variants are *interleaved*: each level's requests are cut into ``rounds`` chunks and
   the variants take turns, the order rotating each round (A B, B A, A B, ...), so a slow
   minute of a shared machine falls on all of them; ``rounds`` = 1 runs them back to back. The
   chunks of a variant are merged: percentiles over all its latencies, throughput = successes
   ÷ the summed wall time of its chunks.

Outputs: ``compare.json`` (one entry per variant: facts, tasks, latency; the schedule; the
Pareto-optimal variants per quality and cost metric), ``compare.md`` (a quality table, a cost
table, the Pareto sets) and ``compare_pareto.png`` (quality on y against p50 / p99 latency and
throughput on x, one labelled point per variant and level).
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import httpx
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from benchmarks.client import CrisscrossClient, JsonObject, text_query
from benchmarks.correlation import DEFAULT_SAMPLES
from benchmarks.cxc import BenchmarkSetupError, CxcRunConfig, run_cxc
from benchmarks.datasets import captions_path, read_captions
from benchmarks.latency import LatencyResult, closed_loop
from benchmarks.markdown import markdown_table
from benchmarks.plan import QUALITY_TASKS
from benchmarks.report import environment_info, write_json

logger = logging.getLogger(__name__)

COMPARE_SCHEMA_VERSION: Final = 1
DEFAULT_COMPARE_TASKS: Final = ("t2t", "t2t_cocaptions", "sts")
PARETO_PLOT: Final = "compare_pareto.png"
RECALL_CUTS: Final = ("R@1", "R@5", "R@10")

__all__ = (
    "DEFAULT_COMPARE_TASKS",
    "CompareConfig",
    "CompareRun",
    "pareto_front",
    "plot_pareto",
    "quality_metrics",
    "render_compare_markdown",
    "run_compare",
    "write_compare_outputs",
)


@dataclass(frozen=True)
class CompareConfig:
    """Settings of one comparison run.

    Attributes:
        url: the service root URL.
        variants: the variant names to compare (≥ 1, distinct); the first is the baseline of
            the report's "vs baseline" columns.
        data_dir: the data folder (``coco-karpathy-captions/``, ``cxc/``, ...).
        split: the split name in the file names.
        dataset: ``coco-karpathy`` or ``scenes``.
        collection: the caption collection's name (each variant serves its own).
        images_collection: the image collection's name.
        tasks: quality tasks, a subset of :data:`benchmarks.plan.QUALITY_TASKS`; the default
            needs a text tower only.
        k: results per retrieval query.
        probe_k: results asked for first per retrieval query (see :class:`CxcRunConfig`).
        limit_queries: each retrieval task's first N queries only; all when ``None``.
        replay_concurrency: requests in flight during the quality replays.
        score_batch: pairs per ``POST /v1/score``.
        bootstrap_samples: Spearman bootstrap samples.
        seed: seed of the bootstrap and of the latency query order.
        concurrency_levels: closed-loop concurrency levels.
        latency_requests: measured requests per variant and level (split over the rounds).
        warmup_requests: unrecorded requests before each measured chunk.
        latency_k: ``k`` of the latency searches.
        rounds: latency chunks per variant and level, variants taking turns (1 = back to back).
        ready_timeout_s: how long to wait for ``/readyz``.
        request_timeout_s: per-request timeout, seconds.
        show_progress: draw tqdm progress bars on stderr during the quality replays.
    """

    url: str
    variants: tuple[str, ...]
    data_dir: Path
    split: str = "val"
    dataset: str = "coco-karpathy"
    collection: str = "captions"
    images_collection: str = "images"
    tasks: tuple[str, ...] = DEFAULT_COMPARE_TASKS
    k: int = 1000
    probe_k: int = 100
    limit_queries: int | None = None
    replay_concurrency: int = 8
    score_batch: int = 1024
    bootstrap_samples: int = DEFAULT_SAMPLES
    seed: int = 0
    concurrency_levels: tuple[int, ...] = (1, 8)
    latency_requests: int = 300
    warmup_requests: int = 20
    latency_k: int = 10
    rounds: int = 3
    ready_timeout_s: float = 120.0
    request_timeout_s: float = 60.0
    show_progress: bool = True

    def __post_init__(self) -> None:
        if not self.variants:
            raise ValueError("name at least one variant to compare")
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants repeat: {list(self.variants)}")
        unknown = sorted(set(self.tasks) - set(QUALITY_TASKS))
        if unknown:
            raise ValueError(f"unknown quality task(s) {unknown}; choose from {QUALITY_TASKS}")
        if not self.concurrency_levels or min(self.concurrency_levels) < 1:
            raise ValueError("concurrency levels must be positive")
        if self.rounds < 1 or self.latency_requests < self.rounds:
            raise ValueError("need rounds ≥ 1 and latency_requests ≥ rounds")
        if self.warmup_requests < 0:
            raise ValueError("warmup_requests must be ≥ 0")
        # The rest is checked by the CxcRunConfig each variant gets.
        self.cxc_config(self.variants[0])

    def cxc_config(self, variant: str) -> CxcRunConfig:
        """The quality run of one variant: this run's tasks and settings, no latency phase."""
        return CxcRunConfig(
            url=self.url,
            data_dir=self.data_dir,
            split=self.split,
            dataset=self.dataset,
            collection=self.collection,
            images_collection=self.images_collection,
            tasks=self.tasks,
            k=self.k,
            probe_k=self.probe_k,
            limit_queries=self.limit_queries,
            replay_concurrency=self.replay_concurrency,
            score_batch=self.score_batch,
            bootstrap_samples=self.bootstrap_samples,
            seed=self.seed,
            variant=variant,
            ready_timeout_s=self.ready_timeout_s,
            request_timeout_s=self.request_timeout_s,
            show_progress=self.show_progress,
        )

    def chunk_sizes(self) -> list[int]:
        """Measured requests of each round's chunk (they add up to ``latency_requests``)."""
        base, extra = divmod(self.latency_requests, self.rounds)
        return [base + (1 if index < extra else 0) for index in range(self.rounds)]


@dataclass
class CompareRun:
    """The outcome of :func:`run_compare`: the report object and the raw latencies
    (variant → level name ``c<N>`` → latencies in ms)."""

    report: dict[str, Any]
    latencies_ms: dict[str, dict[str, tuple[float, ...]]] = field(default_factory=dict)


@dataclass
class _Chunks:
    """One variant's measured chunks at one level, merged into one :class:`LatencyResult`."""

    concurrency: int
    parts: list[LatencyResult] = field(default_factory=list)

    def merged(self) -> LatencyResult:
        return LatencyResult(
            concurrency=self.concurrency,
            requests=sum(part.requests for part in self.parts),
            errors=sum(part.errors for part in self.parts),
            latencies_ms=tuple(value for part in self.parts for value in part.latencies_ms),
            wall_s=sum(part.wall_s for part in self.parts),
            busy_s=sum(part.busy_s for part in self.parts),
        )


def _variant_facts(entry: JsonObject) -> dict[str, Any]:
    """What ``GET /v1/variants`` says about one variant, as the report keeps it."""
    keys = ("dim", "precision", "towers", "providers", "tower_providers", "bundle_versions")
    return {key: entry.get(key) for key in keys}


async def _check_variants(client: CrisscrossClient, wanted: Sequence[str]) -> dict[str, JsonObject]:
    """The ``/v1/variants`` entry of every wanted variant; BenchmarkSetupError if one is absent."""
    loaded = {str(entry.get("name")): entry for entry in await client.variants()}
    missing = [name for name in wanted if name not in loaded]
    if missing:
        raise BenchmarkSetupError(
            f"variants {missing} are not loaded by the service; loaded: {sorted(loaded)}"
        )
    return {name: loaded[name] for name in wanted}


def _latency_skip_reason(
    facts: Mapping[str, Any], collections: Sequence[JsonObject], variant: str, collection: str
) -> str | None:
    towers = facts.get("towers")
    if isinstance(towers, list) and "text" not in towers:
        return f"variant {variant!r} has no text tower (latency queries are caption texts)"
    if not any(
        entry.get("variant") == variant and entry.get("name") == collection for entry in collections
    ):
        return f"variant {variant!r} serves no {collection!r} collection"
    return None


async def _latency_phase(
    client: CrisscrossClient,
    config: CompareConfig,
    variants: Sequence[str],
    texts: Sequence[str],
) -> tuple[dict[str, dict[str, _Chunks]], list[list[str]]]:
    """Closed-loop text searches per level, the variants taking turns chunk by chunk.

    Returns:
        variant → level name → its chunks, and the variant order of every round (one list per
        level and round, in the order run).
    """
    chunks: dict[str, dict[str, _Chunks]] = {name: {} for name in variants}
    orders: list[list[str]] = []
    sizes = config.chunk_sizes()
    for level in config.concurrency_levels:
        name = f"c{level}"
        offset = 0
        for round_index, size in enumerate(sizes):
            shift = round_index % len(variants)
            order = list(variants[shift:]) + list(variants[:shift])
            orders.append(order)
            for variant in order:
                logger.info(
                    "latency %s: round %d, %s, %d requests", name, round_index + 1, variant, size
                )

                async def send(index: int, variant: str = variant, offset: int = offset) -> object:
                    return await client.search(
                        text_query(texts[(offset + index) % len(texts)]),
                        config.collection,
                        config.latency_k,
                        variant=variant,
                        retry=False,
                    )

                measured = await closed_loop(send, level, size, config.warmup_requests)
                chunks[variant].setdefault(name, _Chunks(level)).parts.append(measured)
            # Every variant of a round saw the same texts; the next round moves on.
            offset += config.warmup_requests + size
    return chunks, orders


def _schedule(config: CompareConfig, orders: list[list[str]]) -> dict[str, Any]:
    interleaved = config.rounds > 1 and len(config.variants) > 1
    return {
        "mode": "interleaved" if interleaved else "back_to_back",
        "rounds": config.rounds,
        "chunk_requests": config.chunk_sizes(),
        "warmup_per_chunk": config.warmup_requests,
        "orders": orders,
        "note": (
            "per level, the variants take turns in chunks, the order rotating each round; "
            "each variant's chunks are merged"
            if interleaved
            else "per level, each variant's requests run in one block, one variant after another"
        ),
    }


async def run_compare(
    config: CompareConfig, transport: httpx.AsyncBaseTransport | None = None
) -> CompareRun:
    """Measure every variant's quality and cost against the live service and build the report.

    Args:
        config: the run's settings.
        transport: an httpx transport replacing the network (tests).

    Raises:
        ServiceNotReadyError: ``/readyz`` never answered 200.
        ServiceError: the service refused a request.
        BenchmarkSetupError: a variant is not loaded, serves collections that do not match the
            data, or can answer none of the tasks.
        DatasetError / ValueError / OSError: the data files are missing or malformed.
    """
    started = time.perf_counter()
    captions = read_captions(captions_path(config.data_dir, config.split))
    texts = [caption.text for caption in captions]
    random.Random(config.seed).shuffle(texts)
    pool = max(config.replay_concurrency, *config.concurrency_levels)
    async with CrisscrossClient(
        config.url, timeout_s=config.request_timeout_s, max_connections=pool, transport=transport
    ) as client:
        await client.wait_ready(config.ready_timeout_s)
        entries = await _check_variants(client, config.variants)
        collections = await client.collections()

    entries_out: dict[str, dict[str, Any]] = {}
    durations: dict[str, float] = {}
    for variant in config.variants:
        phase = time.perf_counter()
        logger.info("quality: variant %s, tasks %s", variant, ",".join(config.tasks))
        run = await run_cxc(config.cxc_config(variant), transport=transport)
        durations[f"quality_{variant}"] = time.perf_counter() - phase
        report = run.report
        entries_out[variant] = {
            "name": variant,
            **_variant_facts(entries[variant]),
            "bundle": report.get("bundle"),
            "bundle_version": report.get("bundle_version"),
            "bundle_versions_seen": report.get("bundle_versions_seen"),
            "collections": report.get("collections"),
            "tasks": report.get("tasks"),
            "skipped": dict(report.get("skipped") or {}),
            "checks": report.get("checks"),
            "latency": {},
        }

    timed = []
    for variant in config.variants:
        reason = _latency_skip_reason(entries[variant], collections, variant, config.collection)
        if reason is None:
            timed.append(variant)
        else:
            logger.warning("latency skipped: %s", reason)
            entries_out[variant]["skipped"]["latency"] = reason
    latencies: dict[str, dict[str, tuple[float, ...]]] = {}
    orders: list[list[str]] = []
    if timed:
        phase = time.perf_counter()
        async with CrisscrossClient(
            config.url,
            timeout_s=config.request_timeout_s,
            max_connections=pool,
            transport=transport,
        ) as client:
            chunks, orders = await _latency_phase(client, config, timed, texts)
        durations["latency"] = time.perf_counter() - phase
        for variant, levels in chunks.items():
            merged = {name: chunk.merged() for name, chunk in levels.items()}
            entries_out[variant]["latency"] = {
                name: result.as_report() for name, result in merged.items()
            }
            latencies[variant] = {name: result.latencies_ms for name, result in merged.items()}
    durations["total"] = time.perf_counter() - started

    variants_out = [entries_out[name] for name in config.variants]
    settings = {
        key: value
        for key, value in dataclasses.asdict(config).items()
        if key not in {"url", "variants", "data_dir", "show_progress"}
    }
    settings["tasks"] = list(config.tasks)
    settings["concurrency_levels"] = list(config.concurrency_levels)
    report_out: dict[str, Any] = {
        "schema_version": COMPARE_SCHEMA_VERSION,
        "kind": "compare",
        "dataset": config.dataset,
        "split": config.split,
        "data_dir": str(config.data_dir),
        "service_url": config.url,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "baseline": config.variants[0],
        "variants": variants_out,
        "latency_schedule": _schedule(config, orders),
        "pareto": pareto_sets(variants_out),
        "settings": settings,
        "durations_s": {name: round(value, 3) for name, value in durations.items()},
        "environment": environment_info(),
    }
    return CompareRun(report=report_out, latencies_ms=latencies)


# -- quality and cost metrics, Pareto sets ------------------------------------------------------


def quality_metrics(tasks: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """The headline quality numbers of one variant's ``tasks`` (all ×100, higher is better):
    ``<task> R@1/R@5/R@10`` for retrieval, ``<task> ρ`` (Spearman mean) for correlations,
    ``bison acc`` for BISON. Missing values are left out."""
    metrics: dict[str, float] = {}
    for task, entry in tasks.items():
        for cut in RECALL_CUTS:
            value = entry.get(cut)
            if isinstance(value, int | float):
                metrics[f"{task} {cut}"] = float(value) * 100.0
        rho = entry.get("spearman_mean")
        if isinstance(rho, int | float):
            metrics[f"{task} ρ"] = float(rho)
        accuracy = entry.get("accuracy")
        if task == "bison" and isinstance(accuracy, int | float):
            metrics["bison acc"] = float(accuracy) * 100.0
    return metrics


COST_METRICS: Final = (("p50_ms", False), ("p99_ms", False), ("qps", True))
"""Cost metric of a latency level → whether higher is better."""


def pareto_front(
    points: Mapping[str, tuple[float, float]], *, higher_cost_is_better: bool
) -> list[str]:
    """The names whose (cost, quality) point no other point dominates.

    A point dominates another when it is at least as good on both axes and better on one;
    quality is better when higher, cost when lower (or higher, with ``higher_cost_is_better``,
    for throughput). Returned in ``points``' order.
    """

    def better_or_equal(a: tuple[float, float], b: tuple[float, float]) -> tuple[bool, bool]:
        cost_ok = a[0] >= b[0] if higher_cost_is_better else a[0] <= b[0]
        cost_strict = a[0] > b[0] if higher_cost_is_better else a[0] < b[0]
        return cost_ok and a[1] >= b[1], cost_strict or a[1] > b[1]

    front = []
    for name, point in points.items():
        dominated = False
        for other_name, other in points.items():
            if other_name == name:
                continue
            at_least, strictly = better_or_equal(other, point)
            if at_least and strictly:
                dominated = True
                break
        if not dominated:
            front.append(name)
    return front


def _primary_quality(variants: Sequence[Mapping[str, Any]]) -> list[str]:
    """Quality metrics every variant has, headline first: R@1 of each retrieval task, then ρ."""
    shared: list[str] | None = None
    for entry in variants:
        names = list(quality_metrics(entry.get("tasks") or {}))
        shared = names if shared is None else [name for name in shared if name in names]
    return [name for name in shared or [] if name.endswith(("R@1", "ρ", "acc"))]


def pareto_sets(variants: Sequence[Mapping[str, Any]]) -> dict[str, list[str]]:
    """For each headline quality metric, cost metric and level every variant has:
    ``"<quality> vs <cost> @<level>"`` → the Pareto-optimal variant names."""
    sets: dict[str, list[str]] = {}
    levels: list[str] | None = None
    for entry in variants:
        names = list((entry.get("latency") or {}).keys())
        levels = names if levels is None else [name for name in levels if name in names]
    for quality in _primary_quality(variants):
        for level in levels or []:
            for cost, higher_is_better in COST_METRICS:
                points = {}
                for entry in variants:
                    value = entry["latency"][level].get(cost)
                    if isinstance(value, int | float):
                        points[str(entry["name"])] = (
                            float(value),
                            quality_metrics(entry["tasks"])[quality],
                        )
                if len(points) == len(variants):
                    sets[f"{quality} vs {cost} @{level}"] = pareto_front(
                        points, higher_cost_is_better=higher_is_better
                    )
    return sets


# -- outputs ------------------------------------------------------------------------------------


def _cell(value: object, digits: int = 1) -> str:
    if isinstance(value, bool) or value is None:
        return "–"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def _ratio(value: object, baseline: object) -> str:
    """``×value/baseline`` with two decimals, or ``–`` when either is missing or zero."""
    if isinstance(value, int | float) and isinstance(baseline, int | float) and baseline:
        return f"×{float(value) / float(baseline):.2f}"
    return "–"


def _providers_cell(entry: Mapping[str, Any]) -> str:
    providers = entry.get("providers")
    if not isinstance(providers, list):
        return "unknown"
    return ", ".join(str(name).removesuffix("ExecutionProvider") for name in providers)


def _versions_cell(entry: Mapping[str, Any]) -> str:
    versions = entry.get("bundle_versions")
    if isinstance(versions, dict) and versions:
        return ", ".join(f"{name}@{version}" for name, version in versions.items())
    return f"{entry.get('bundle')}@{entry.get('bundle_version')}"


def render_compare_markdown(report: Mapping[str, Any]) -> str:
    """The Markdown of a ``compare.json`` object: run facts, variants, quality, cost, Pareto."""
    variants: list[Mapping[str, Any]] = list(report.get("variants") or [])
    schedule: Mapping[str, Any] = report.get("latency_schedule") or {}
    settings: Mapping[str, Any] = report.get("settings") or {}
    environment: Mapping[str, Any] = report.get("environment") or {}
    lines = [
        f"# Crisscross variant comparison — {report.get('dataset')} {report.get('split')}",
        "",
        f"- service: `{report.get('service_url')}`; created {report.get('created_at')}",
        f"- one run, same queries for every variant: tasks {', '.join(settings.get('tasks', []))}"
        + (
            f" (first {settings['limit_queries']} queries per retrieval task), "
            if settings.get("limit_queries")
            else " (all queries), "
        )
        + f"latency k={settings.get('latency_k')} at concurrency "
        f"{', '.join(str(c) for c in settings.get('concurrency_levels', []))}",
        f"- latency schedule: {schedule.get('mode')} ({schedule.get('note')}); "
        f"{schedule.get('rounds')} round(s) of {schedule.get('chunk_requests')} measured "
        f"requests, {schedule.get('warmup_per_chunk')} warm-up per chunk",
        f"- client machine: {environment.get('cpu_count')} CPUs, {environment.get('platform')}",
        "",
        "## Variants",
        "",
    ]
    lines += markdown_table(
        ["variant", "precision", "dim", "providers (in use)", "bundle versions"],
        [
            [
                f"`{entry.get('name')}`",
                _cell(entry.get("precision")),
                _cell(entry.get("dim")),
                _providers_cell(entry),
                _versions_cell(entry),
            ]
            for entry in variants
        ],
    )
    metrics = {
        str(entry.get("name")): quality_metrics(entry.get("tasks") or {}) for entry in variants
    }
    names = list(dict.fromkeys(name for values in metrics.values() for name in values))
    if names:
        lines += ["", "## Quality (×100; R@K share of queries, ρ Spearman mean)", ""]
        lines += markdown_table(
            ["variant", *names],
            [
                [f"`{variant}`", *(_cell(values.get(name)) for name in names)]
                for variant, values in metrics.items()
            ],
        )
    levels = list(
        dict.fromkeys(level for entry in variants for level in entry.get("latency") or {})
    )
    if levels:
        header = ["variant"]
        for level in levels:
            header += [f"{level} p50 ms", f"{level} p99 ms", f"{level} req/s", f"{level} errors"]
        rows = []
        for entry in variants:
            row = [f"`{entry.get('name')}`"]
            latency = entry.get("latency") or {}
            for level in levels:
                values = latency.get(level) or {}
                row += [
                    _cell(values.get("p50_ms")),
                    _cell(values.get("p99_ms")),
                    _cell(values.get("qps")),
                    _cell(values.get("errors")),
                ]
            rows.append(row)
        lines += ["", "## Cost (client-side latency, closed loop, warm-up excluded)", ""]
        lines += markdown_table(header, rows)
    baseline = str(report.get("baseline"))
    if len(variants) > 1 and baseline in metrics:
        lines += ["", f"## Against the baseline `{baseline}`", ""]
        base_entry = next(entry for entry in variants if entry.get("name") == baseline)
        rows = []
        for entry in variants:
            name = str(entry.get("name"))
            if name == baseline:
                continue
            cells = [f"`{name}`"]
            for metric in _primary_quality(variants):
                delta = metrics[name][metric] - metrics[baseline][metric]
                cells.append(f"{delta:+.1f}")
            for level in levels:
                mine = (entry.get("latency") or {}).get(level) or {}
                theirs = (base_entry.get("latency") or {}).get(level) or {}
                for key in ("p50_ms", "qps"):
                    cells.append(_ratio(mine.get(key), theirs.get(key)))
            rows.append(cells)
        header = ["variant", *(f"Δ {metric}" for metric in _primary_quality(variants))]
        for level in levels:
            header += [f"{level} p50 ratio", f"{level} req/s ratio"]
        lines += markdown_table(header, rows)
    pareto: Mapping[str, list[str]] = report.get("pareto") or {}
    if pareto:
        # Keys are "<quality> vs <cost> @<level>": one row per quality and cost, a column per level.
        rows_of: dict[str, dict[str, list[str]]] = {}
        for key, front in pareto.items():
            pair, _, level = key.rpartition(" @")
            rows_of.setdefault(pair, {})[level] = front
        pareto_levels = list(dict.fromkeys(level for row in rows_of.values() for level in row))
        lines += ["", "## Pareto-optimal variants (none other is both better and cheaper)", ""]
        lines += markdown_table(
            ["quality vs cost", *pareto_levels],
            [
                [
                    pair,
                    *(", ".join(f"`{n}`" for n in row.get(level, [])) for level in pareto_levels),
                ]
                for pair, row in rows_of.items()
            ],
        )
    skipped = [
        (str(entry.get("name")), task, str(reason))
        for entry in variants
        for task, reason in (entry.get("skipped") or {}).items()
    ]
    if skipped:
        lines += ["", "## Skipped", ""]
        lines += markdown_table(["variant", "task", "reason"], [list(row) for row in skipped])
    lines += ["", f"![quality vs cost]({PARETO_PLOT})", ""]
    return "\n".join(lines)


def plot_pareto(report: Mapping[str, Any], path: Path, title: str) -> Path:
    """Quality (y) against cost (x): one row per headline quality metric, columns p50 latency,
    p99 latency (ms, log scale) and throughput (requests/s); one point per variant and level,
    labelled ``variant c<N>``, colour by variant, marker by level; each level's Pareto front
    is joined by a dashed line.

    Returns:
        ``path``.
    """
    variants: list[Mapping[str, Any]] = list(report.get("variants") or [])
    qualities = _primary_quality(variants) or ["(no quality metric)"]
    levels = list(
        dict.fromkeys(level for entry in variants for level in entry.get("latency") or {})
    )
    markers = ("o", "s", "^", "D", "v", "P")
    colours = [f"C{index}" for index in range(len(variants))]
    figure = Figure(figsize=(15.0, 4.2 * len(qualities) + 0.6))
    grid = figure.subplots(len(qualities), len(COST_METRICS), squeeze=False)
    labels = {
        "p50_ms": "p50 latency (ms)",
        "p99_ms": "p99 latency (ms)",
        "qps": "throughput (req/s)",
    }
    for row, quality in zip(grid, qualities, strict=True):
        for axes, (cost, higher_is_better) in zip(row, COST_METRICS, strict=True):
            for level_index, level in enumerate(levels):
                points: dict[str, tuple[float, float]] = {}
                for colour, entry in zip(colours, variants, strict=True):
                    value = ((entry.get("latency") or {}).get(level) or {}).get(cost)
                    score = quality_metrics(entry.get("tasks") or {}).get(quality)
                    if not isinstance(value, int | float) or score is None:
                        continue
                    name = str(entry.get("name"))
                    points[name] = (float(value), score)
                    axes.scatter(
                        [value],
                        [score],
                        color=colour,
                        marker=markers[level_index % len(markers)],
                        s=50,
                        zorder=3,
                        label=f"{name} {level}",
                    )
                    axes.annotate(
                        f"{name} {level}",
                        (value, score),
                        fontsize=7,
                        xytext=(4, 4),
                        textcoords="offset points",
                    )
                front = pareto_front(points, higher_cost_is_better=higher_is_better)
                if len(front) > 1:
                    ordered = sorted(points[name] for name in front)
                    axes.plot(
                        [p[0] for p in ordered],
                        [p[1] for p in ordered],
                        linestyle="--",
                        color="grey",
                        linewidth=0.8,
                    )
            if cost != "qps":
                axes.set_xscale("log")
            better = "higher" if higher_is_better else "lower"
            axes.set_xlabel(f"{labels[cost]}, {better} is better")
            axes.margins(x=0.2, y=0.2)
            axes.set_ylabel(f"{quality} (×100)")
            axes.grid(True, which="both", alpha=0.3)
    handles, legend_labels = grid[0][0].get_legend_handles_labels()
    if handles:
        grid[0][0].legend(handles, legend_labels, fontsize=7, loc="best")
    figure.suptitle(title)
    figure.tight_layout()
    FigureCanvasAgg(figure)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=120)
    return path


def write_compare_outputs(run: CompareRun, out_dir: Path) -> dict[str, Path]:
    """Write ``compare.json``, ``compare.md`` and ``compare_pareto.png`` into ``out_dir``.

    Returns:
        Output kind (``json``, ``markdown``, ``pareto_plot``) → file written.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    report = run.report
    names = ", ".join(str(entry.get("name")) for entry in report["variants"])
    title = f"{report['dataset']} {report['split']} — {names}"
    written = {"json": write_json(report, out_dir / "compare.json")}
    written["pareto_plot"] = plot_pareto(
        report, out_dir / PARETO_PLOT, f"Quality vs cost — {title}"
    )
    markdown = out_dir / "compare.md"
    markdown.write_text(render_compare_markdown(report), encoding="utf-8")
    written["markdown"] = markdown
    return written
