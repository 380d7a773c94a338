"""Prometheus metrics of one app, in a registry of its own, declared in one table.

:data:`METRICS` lists every metric the service exports, one :class:`MetricSpec` each: the
:class:`ServiceMetrics` attribute that holds it, its kind (counter, gauge, histogram), its name,
help text and label names, a histogram's buckets and a gauge's multiprocess mode.
:class:`ServiceMetrics` builds them all from it, in its order (the order of ``/metrics``), and the
tests read it: every metric a Grafana panel, variable or alert rule queries must be declared there,
and every declared metric must have a panel.

A per-app :class:`CollectorRegistry` (never the global default one) lets several apps live in one
process — the test suite builds dozens — without "duplicated timeseries" errors.

With several worker processes (:mod:`service.runtime.workers`) the metrics use prometheus_client's
multiprocess mode: every worker writes its values to files in a shared folder (the supervisor
sets ``PROMETHEUS_MULTIPROC_DIR`` before it spawns them) and ``/metrics``, whichever worker
answers it, reads them all: counters and histograms are summed, and each gauge is combined as its
``multiprocess_mode`` says (queue depths and limits summed over live workers, readiness the
minimum, what is loaded the maximum). Gauges read from a live object at scrape time cannot work
across processes; there each worker copies the admission gate into its gauges once a second
(:meth:`ServiceMetrics.refresh_admission`).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROCESS_DIR_VARIABLE = "PROMETHEUS_MULTIPROC_DIR"

# Request latency on CPU ranges from sub-millisecond (healthz) to seconds (k=1000 over a big
# corpus, or 256 texts to embed); stage buckets start lower because a cached lookup is µs.
_REQUEST_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_STAGE_BUCKETS_S = (
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)

UNMATCHED_ROUTE = "unmatched"

# How prometheus_client combines a gauge's values over worker processes ("live": of the
# workers still running).
MultiprocessMode = Literal[
    "all",
    "liveall",
    "min",
    "livemin",
    "max",
    "livemax",
    "sum",
    "livesum",
    "mostrecent",
    "livemostrecent",
]
Metric = Counter | Gauge | Histogram


@dataclass(frozen=True)
class MetricSpec:
    """The declaration of one metric: the :class:`ServiceMetrics` attribute that holds it, its
    kind (:class:`Counter`, :class:`Gauge` or :class:`Histogram`), its name (a counter's without
    ``_total``), help text and label names; a histogram's ``buckets`` and a gauge's
    ``multiprocess_mode`` (required there, refused elsewhere: ValueError)."""

    attribute: str
    kind: type[Counter] | type[Gauge] | type[Histogram]
    name: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] | None = None
    multiprocess_mode: MultiprocessMode | None = None

    def __post_init__(self) -> None:
        if (self.buckets is not None) != (self.kind is Histogram):
            raise ValueError(f"{self.name}: buckets are for histograms, and they need them")
        if (self.multiprocess_mode is not None) != (self.kind is Gauge):
            raise ValueError(f"{self.name}: a multiprocess mode is for gauges, and they need one")

    @property
    def series(self) -> frozenset[str]:
        """The series names a PromQL query may select (what a single process exports): a
        counter ``x`` as ``x_total`` and ``x_created``, a histogram as ``x_bucket``, ``x_sum``,
        ``x_count`` and ``x_created``, a gauge as ``x``."""
        if self.kind is Counter:
            suffixes: tuple[str, ...] = ("_total", "_created")
        elif self.kind is Histogram:
            suffixes = ("_bucket", "_sum", "_count", "_created")
        else:
            suffixes = ("",)
        return frozenset(self.name + suffix for suffix in suffixes)

    def build(self, registry: CollectorRegistry) -> Metric:
        """The metric, registered in ``registry``."""
        if self.buckets is not None:
            return Histogram(
                self.name, self.help, self.labels, buckets=self.buckets, registry=registry
            )
        if self.multiprocess_mode is not None:
            return Gauge(
                self.name,
                self.help,
                self.labels,
                multiprocess_mode=self.multiprocess_mode,
                registry=registry,
            )
        return Counter(self.name, self.help, self.labels, registry=registry)


# Every metric the service exports, in the order of /metrics.
METRICS: tuple[MetricSpec, ...] = (
    MetricSpec(
        "requests",
        Counter,
        "crisscross_requests",
        "HTTP requests answered, by route template, method and status.",
        ("route", "method", "status"),
    ),
    MetricSpec(
        "request_seconds",
        Histogram,
        "crisscross_request_duration_seconds",
        "Time from request arrival to the end of the response, by route template and status.",
        ("route", "method", "status"),
        buckets=_REQUEST_BUCKETS_S,
    ),
    MetricSpec(
        "encode_seconds",
        Histogram,
        "crisscross_encode_duration_seconds",
        "Time in one encoder call (one micro-batch of queued requests' texts or images), by "
        "variant and tower (text, image).",
        ("variant", "tower"),
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "encode_batch_size",
        Histogram,
        "crisscross_encode_batch_size",
        "Inputs (texts or images) per encoder call, by variant and tower.",
        ("variant", "tower"),
        buckets=_BATCH_BUCKETS,
    ),
    MetricSpec(
        "encode_batch_requests",
        Histogram,
        "crisscross_encode_batch_requests",
        "Requests whose inputs shared one encoder call, by variant and tower.",
        ("variant", "tower"),
        buckets=_BATCH_BUCKETS,
    ),
    MetricSpec(
        "encode_queue_seconds",
        Histogram,
        "crisscross_encode_queue_wait_seconds",
        "Time a request waited in an encoder's queue before its batch started, by variant "
        "and tower.",
        ("variant", "tower"),
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "encode_queue_depth",
        Gauge,
        "crisscross_encode_queue_depth",
        "Requests waiting in an encoder's queue (not yet in a running batch), by variant and "
        "tower.",
        ("variant", "tower"),
        multiprocess_mode="livesum",
    ),
    MetricSpec(
        "admission_waiting",
        Gauge,
        "crisscross_admission_waiting",
        "Requests waiting at the door for an in-flight slot (the admission waiting room).",
        multiprocess_mode="livesum",
    ),
    MetricSpec(
        "admission_overloaded",
        Gauge,
        "crisscross_admission_overloaded",
        "1 while the door counts the service as overloaded (arrivals outnumber completions) "
        "and refuses requests that find no free slot at once, else 0.",
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "admission_limit",
        Gauge,
        "crisscross_admission_limit",
        "The in-flight limit that applies now: max_concurrent_requests, or "
        "overload_concurrent_requests while overloaded (summed over workers).",
        multiprocess_mode="livesum",
    ),
    MetricSpec(
        "refused",
        Counter,
        "crisscross_requests_refused",
        "Requests refused before their work ran, by reason: in_flight, waiting_room_full, "
        "queue_timeout, queue_full and deadline (503 overloaded), shutting_down (503 "
        "not_ready), unauthorized (401), forbidden (403).",
        ("reason",),
    ),
    MetricSpec(
        "query_cache_lookups",
        Counter,
        "crisscross_query_cache_lookups",
        "Query texts looked up in the query-embedding cache (query_cache_entries), by "
        "variant and result: hit (answered without the encoder) or miss (embedded, then "
        "kept).",
        ("variant", "result"),
    ),
    MetricSpec(
        "client_refusals",
        Counter,
        "crisscross_client_refusals",
        "Connections and requests refused for how the client sent them, by reason: "
        "head_timeout and body_timeout (408, closed), headers_too_large and too_many_headers "
        "(431, closed), connection_limit (503 at accept, closed), body_unread (closed after "
        "an answer that left the request's body unread).",
        ("reason",),
    ),
    MetricSpec(
        "connections_open",
        Gauge,
        "crisscross_connections_open",
        "HTTP connections open now (summed over workers).",
        multiprocess_mode="livesum",
    ),
    MetricSpec(
        "reloads",
        Counter,
        "crisscross_reloads",
        "POST /v1/admin/reload calls by outcome: swapped (a new version serves), unchanged "
        "(nothing new to load), rejected (409 bundle_rejected: the old version keeps "
        "serving), not_found (404), failed (an unexpected error); with several workers also "
        "followed (a worker swapped to the versions another one's reload loaded) and "
        "follow_rejected (it could not load them and serves what it did).",
        ("outcome",),
    ),
    MetricSpec(
        "image_decode_seconds",
        Histogram,
        "crisscross_image_decode_duration_seconds",
        "Time turning one request's image payloads (base64, file bytes) into RGB pixels, "
        "refused payloads included.",
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "images_refused",
        Counter,
        "crisscross_images_refused",
        "Image payloads refused, by reason (invalid_base64, too_many_bytes, "
        "too_many_pixels, unsupported_format, invalid_image).",
        ("reason",),
    ),
    MetricSpec(
        "search_seconds",
        Histogram,
        "crisscross_search_duration_seconds",
        "Time in one faiss search including re-sorting, by variant and collection.",
        ("variant", "collection"),
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "bundle_info",
        Gauge,
        "crisscross_bundle_loaded",
        "1 for each bundle version being served.",
        ("bundle", "version", "variant"),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "collection_items",
        Gauge,
        "crisscross_collection_items",
        "Rows in each served collection.",
        ("variant", "collection", "bundle", "version"),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "variant_info",
        Gauge,
        "crisscross_variant_loaded",
        "1 for each tower of each encoder variant loaded, with its precision and onnxruntime "
        "providers.",
        ("variant", "tower", "precision", "providers", "fingerprint"),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "encoder_max_batch_size",
        Gauge,
        "crisscross_encoder_max_batch_size",
        "Most inputs per encoder call, per variant and tower: max_batch_size, or when unset "
        "its default for the device the tower's session runs on.",
        ("variant", "tower"),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "ready",
        Gauge,
        "crisscross_ready",
        "1 once every bundle and encoder is loaded and the service answers queries (with "
        "several workers: once every live worker does).",
        multiprocess_mode="livemin",
    ),
    MetricSpec(
        "loaded_at",
        Gauge,
        "crisscross_store_loaded_timestamp_seconds",
        "Unix time at which the store being served was published (startup or reload).",
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "workers",
        Gauge,
        "crisscross_workers",
        "Worker processes serving on this port (the workers setting, resolved).",
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "load_failures",
        Counter,
        "crisscross_load_failures",
        "Attempts to load bundles and encoders that were refused.",
    ),
    MetricSpec(
        "writes",
        Counter,
        "crisscross_writes",
        "Write operations acknowledged, by collection and operation (upsert, delete, patch), "
        "and the items they wrote or deleted.",
        ("collection", "operation", "unit"),
    ),
    MetricSpec(
        "write_seconds",
        Histogram,
        "crisscross_write_commit_seconds",
        "Time from a write's hand-over to the log until it is fsynced and visible (its wait "
        "for the group before it included).",
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "log_fsync_seconds",
        Histogram,
        "crisscross_log_fsync_seconds",
        "Time of one group commit's append and fsync of a collection's log.",
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "write_group_size",
        Histogram,
        "crisscross_write_group_requests",
        "Write requests sharing one fsync (group commit).",
        buckets=_BATCH_BUCKETS,
    ),
    MetricSpec(
        "compactions",
        Counter,
        "crisscross_compactions",
        "Compactions of live collections (live items written as a new base bundle), by trigger "
        "(request, threshold) and outcome (ok, failed).",
        ("trigger", "outcome"),
    ),
    MetricSpec(
        "compaction_seconds",
        Histogram,
        "crisscross_compaction_seconds",
        "Time of one compaction of a live collection.",
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "live_items",
        Gauge,
        "crisscross_live_collection_items",
        "Items in each live collection, the rows of its mutable segment (every version, "
        "deleted ones too) and the bytes of its log.",
        ("collection", "measure"),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "replication_role",
        Gauge,
        "crisscross_replication_role",
        "This server's role among the replicas of its live collections: 1 for the role it "
        "holds (leader, follower, fenced: a leader that learned of a later term), 0 for the "
        "others.",
        ("role",),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "replication_term",
        Gauge,
        "crisscross_replication_term",
        "The latest leader term this server knows (a promotion begins a new one).",
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "replication_lag_records",
        Gauge,
        "crisscross_replication_lag_records",
        "On a follower: records of each live collection the leader had made visible at the "
        "last fetch and this replica had not applied yet.",
        ("collection",),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "replication_lag_seconds",
        Gauge,
        "crisscross_replication_lag_seconds",
        "On a follower: seconds since this replica of each live collection first fell behind "
        "the leader without catching up since (0: caught up).",
        ("collection",),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "replication_follower_seq",
        Gauge,
        "crisscross_replication_follower_seq",
        "On a leader: the last sequence number each follower reported durable, per live "
        "collection.",
        ("collection", "replica"),
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "replication_followers",
        Gauge,
        "crisscross_replication_followers",
        "On a leader: followers that fetched in its term within leader_lease_s.",
        multiprocess_mode="livemax",
    ),
    MetricSpec(
        "replication_refused_writes",
        Counter,
        "crisscross_replication_refused_writes",
        "Writes refused for replication, by reason (not_leader: sent to a follower; no_quorum: "
        "a leader without a majority; replication_timeout: acknowledgements that did not come "
        "in time).",
        ("reason",),
    ),
    MetricSpec(
        "replication_ack_seconds",
        Histogram,
        "crisscross_replication_ack_seconds",
        "Time a write waited for its replicas after the leader's fsync, by acks policy.",
        ("acks",),
        buckets=_STAGE_BUCKETS_S,
    ),
    MetricSpec(
        "replication_catchup_bytes",
        Counter,
        "crisscross_replication_catchup_bytes",
        "On a follower: bytes copied from the leader, by kind (log: records; base: a base "
        "bundle for a collection installed or re-installed).",
        ("kind",),
    ),
    MetricSpec(
        "replication_installs",
        Counter,
        "crisscross_replication_installs",
        "On a follower: live collections copied whole from the leader (new, behind its base, "
        "or diverged from its log).",
        ("reason",),
    ),
)


class MultiprocessMetricsError(RuntimeError):
    """Multiprocess metrics were asked for in a process that did not start in that mode."""


class AdmissionReading(Protocol):
    """What the admission gauges read from the gate."""

    @property
    def waiting(self) -> int: ...

    @property
    def overloaded(self) -> bool: ...

    @property
    def current_limit(self) -> int: ...


class ServiceMetrics:
    """The service's metrics. Durations are observed in seconds (Prometheus convention).

    Each metric of :data:`METRICS` is the attribute its :attr:`MetricSpec.attribute` names, built
    into this app's :attr:`registry` (the annotations below give their types).

    ``multiprocess_dir``: the folder every worker of a multi-process server writes to (None: a
    single process, whose registry is its own). The process must have started with
    ``PROMETHEUS_MULTIPROC_DIR`` naming it (prometheus_client reads it on import), else
    :class:`MultiprocessMetricsError`.
    """

    content_type = CONTENT_TYPE_LATEST

    requests: Counter
    request_seconds: Histogram
    encode_seconds: Histogram
    encode_batch_size: Histogram
    encode_batch_requests: Histogram
    encode_queue_seconds: Histogram
    encode_queue_depth: Gauge
    admission_waiting: Gauge
    admission_overloaded: Gauge
    admission_limit: Gauge
    refused: Counter
    query_cache_lookups: Counter
    client_refusals: Counter
    connections_open: Gauge
    reloads: Counter
    image_decode_seconds: Histogram
    images_refused: Counter
    search_seconds: Histogram
    bundle_info: Gauge
    collection_items: Gauge
    variant_info: Gauge
    encoder_max_batch_size: Gauge
    ready: Gauge
    loaded_at: Gauge
    workers: Gauge
    load_failures: Counter
    writes: Counter
    write_seconds: Histogram
    log_fsync_seconds: Histogram
    write_group_size: Histogram
    compactions: Counter
    compaction_seconds: Histogram
    live_items: Gauge
    replication_role: Gauge
    replication_term: Gauge
    replication_lag_records: Gauge
    replication_lag_seconds: Gauge
    replication_follower_seq: Gauge
    replication_followers: Gauge
    replication_refused_writes: Counter
    replication_ack_seconds: Histogram
    replication_catchup_bytes: Counter
    replication_installs: Counter

    def __init__(self, multiprocess_dir: Path | None = None) -> None:
        if multiprocess_dir is not None and os.environ.get(MULTIPROCESS_DIR_VARIABLE) != str(
            multiprocess_dir
        ):
            raise MultiprocessMetricsError(
                f"{MULTIPROCESS_DIR_VARIABLE} must name {multiprocess_dir} before "
                "prometheus_client is imported (the supervisor sets it for its workers)"
            )
        self.multiprocess_dir = multiprocess_dir
        self._gate: AdmissionReading | None = None
        self._loaded_series: list[tuple[Gauge, tuple[str, ...]]] = []
        self.registry = CollectorRegistry(auto_describe=True)
        for spec in METRICS:
            setattr(self, spec.attribute, spec.build(self.registry))

    def record_collection(self, name: str, items: int, rows: int, log_bytes: int) -> None:
        """Publish a live collection's size (items alive, segment rows, log bytes)."""
        self.live_items.labels(name, "items").set(items)
        self.live_items.labels(name, "rows").set(rows)
        self.live_items.labels(name, "log_bytes").set(log_bytes)

    def forget_collection(self, name: str) -> None:
        """Drop a dropped live collection's series."""
        for measure in ("items", "rows", "log_bytes"):
            with contextlib.suppress(KeyError):
                self.live_items.remove(name, measure)

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its duration."""
        labels = (route, method, str(status))
        self.requests.labels(*labels).inc()
        self.request_seconds.labels(*labels).observe(seconds)

    def count_query_cache(self, variant: str, *, hits: int, misses: int) -> None:
        """Count one request's lookups in the query-embedding cache."""
        if hits:
            self.query_cache_lookups.labels(variant, "hit").inc(hits)
        if misses:
            self.query_cache_lookups.labels(variant, "miss").inc(misses)

    def count_client_refusal(self, reason: str) -> None:
        """Count one refusal at the connection or the body gate (see ``client_refusals``)."""
        self.client_refusals.labels(reason).inc()

    def move_open_connections(self, delta: int) -> None:
        """A connection opened (+1) or closed (-1)."""
        self.connections_open.inc(delta)

    def record_loaded(
        self,
        bundles: Iterable[tuple[str, str, str]],
        collections: Iterable[tuple[str, str, str, str, int]],
        variants: Iterable[tuple[str, str, str, Iterable[str], str]],
        batch_sizes: Iterable[tuple[str, str, int]] = (),
    ) -> None:
        """Publish what is served: ``(bundle, version, variant)``,
        ``(variant, collection, bundle, version, count)``,
        ``(variant, tower, precision, providers, fingerprint)`` and
        ``(variant, tower, max_batch_size)`` tuples. Replaces earlier values."""
        if self.multiprocess_dir is not None:
            # A worker's files keep every series it ever wrote (prometheus_client cannot clear
            # them): what is no longer served reads 0.
            for gauge, labels in self._loaded_series:
                gauge.labels(*labels).set(0)
        else:
            for gauge in (
                self.bundle_info,
                self.collection_items,
                self.variant_info,
                self.encoder_max_batch_size,
            ):
                gauge.clear()
        series: list[tuple[Gauge, tuple[str, ...], float]] = [
            (self.bundle_info, (bundle, version, variant), 1.0)
            for bundle, version, variant in bundles
        ]
        series += [
            (self.collection_items, (variant, collection, bundle, version), float(count))
            for variant, collection, bundle, version, count in collections
        ]
        series += [
            (self.variant_info, (variant, tower, precision, ",".join(providers), fingerprint), 1.0)
            for variant, tower, precision, providers, fingerprint in variants
        ]
        series += [
            (self.encoder_max_batch_size, (variant, tower), float(size))
            for variant, tower, size in batch_sizes
        ]
        for gauge, labels, value in series:
            gauge.labels(*labels).set(value)
        self._loaded_series = [(gauge, labels) for gauge, labels, _ in series]
        self.ready.set(1)
        self.loaded_at.set_to_current_time()

    def watch_admission(self, gate: AdmissionReading) -> None:
        """Let the admission gauges show ``gate``: read at scrape time in a single process, copied
        by :meth:`refresh_admission` with several."""
        self._gate = gate
        if self.multiprocess_dir is None:
            self.admission_waiting.set_function(lambda: gate.waiting)
            self.admission_overloaded.set_function(lambda: float(gate.overloaded))
            self.admission_limit.set_function(lambda: gate.current_limit)
        else:
            self.refresh_admission()

    def refresh_admission(self) -> None:
        """Copy the watched gate into the admission gauges (multiprocess mode; a no-op else)."""
        gate = self._gate
        if gate is None or self.multiprocess_dir is None:
            return
        self.admission_waiting.set(gate.waiting)
        self.admission_overloaded.set(float(gate.overloaded))
        self.admission_limit.set(gate.current_limit)

    def exposition(self) -> bytes:
        """The metrics in Prometheus text format: this registry's, or every worker's in
        multiprocess mode."""
        if self.multiprocess_dir is None:
            return generate_latest(self.registry)
        combined = CollectorRegistry()
        MultiProcessCollector(combined, path=str(self.multiprocess_dir))  # type: ignore[no-untyped-call]
        return generate_latest(combined)
