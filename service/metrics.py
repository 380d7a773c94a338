"""Prometheus metrics of one app, in a registry of its own.

A per-app :class:`CollectorRegistry` (never the global default one) lets several apps live in one
process — the test suite builds dozens — without "duplicated timeseries" errors.
"""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

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


class ServiceMetrics:
    """The service's metrics. Durations are observed in seconds (Prometheus convention)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "crisscross_requests",
            "HTTP requests answered, by route template, method and status.",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            "crisscross_request_duration_seconds",
            "Time from request arrival to the end of the response, by route template and status.",
            ["route", "method", "status"],
            buckets=_REQUEST_BUCKETS_S,
            registry=self.registry,
        )
        self.encode_seconds = Histogram(
            "crisscross_encode_duration_seconds",
            "Time in one encoder call (one micro-batch of queued requests' texts or images), by "
            "variant and tower (text, image).",
            ["variant", "tower"],
            buckets=_STAGE_BUCKETS_S,
            registry=self.registry,
        )
        self.encode_batch_size = Histogram(
            "crisscross_encode_batch_size",
            "Inputs (texts or images) per encoder call, by variant and tower.",
            ["variant", "tower"],
            buckets=_BATCH_BUCKETS,
            registry=self.registry,
        )
        self.encode_batch_requests = Histogram(
            "crisscross_encode_batch_requests",
            "Requests whose inputs shared one encoder call, by variant and tower.",
            ["variant", "tower"],
            buckets=_BATCH_BUCKETS,
            registry=self.registry,
        )
        self.encode_queue_seconds = Histogram(
            "crisscross_encode_queue_wait_seconds",
            "Time a request waited in an encoder's queue before its batch started, by variant "
            "and tower.",
            ["variant", "tower"],
            buckets=_STAGE_BUCKETS_S,
            registry=self.registry,
        )
        self.encode_queue_depth = Gauge(
            "crisscross_encode_queue_depth",
            "Requests waiting in an encoder's queue (not yet in a running batch), by variant and "
            "tower.",
            ["variant", "tower"],
            registry=self.registry,
        )
        self.admission_waiting = Gauge(
            "crisscross_admission_waiting",
            "Requests waiting at the door for an in-flight slot (the admission waiting room).",
            registry=self.registry,
        )
        self.admission_overloaded = Gauge(
            "crisscross_admission_overloaded",
            "1 while the door counts the service as overloaded (arrivals outnumber completions) "
            "and refuses requests that find no free slot at once, else 0.",
            registry=self.registry,
        )
        self.admission_limit = Gauge(
            "crisscross_admission_limit",
            "The in-flight limit that applies now: max_concurrent_requests, or "
            "overload_concurrent_requests while overloaded.",
            registry=self.registry,
        )
        self.refused = Counter(
            "crisscross_requests_refused",
            "Requests refused before their work ran, by reason: in_flight, waiting_room_full, "
            "queue_timeout, queue_full and deadline (503 overloaded), shutting_down (503 "
            "not_ready), unauthorized (401), forbidden (403).",
            ["reason"],
            registry=self.registry,
        )
        self.reloads = Counter(
            "crisscross_reloads",
            "POST /v1/admin/reload calls by outcome: swapped (a new version serves), unchanged "
            "(nothing new to load), rejected (409 bundle_rejected: the old version keeps "
            "serving), not_found (404), failed (an unexpected error).",
            ["outcome"],
            registry=self.registry,
        )
        self.image_decode_seconds = Histogram(
            "crisscross_image_decode_duration_seconds",
            "Time turning one request's image payloads (base64, file bytes) into RGB pixels, "
            "refused payloads included.",
            buckets=_STAGE_BUCKETS_S,
            registry=self.registry,
        )
        self.images_refused = Counter(
            "crisscross_images_refused",
            "Image payloads refused, by reason (invalid_base64, too_many_bytes, "
            "too_many_pixels, unsupported_format, invalid_image).",
            ["reason"],
            registry=self.registry,
        )
        self.search_seconds = Histogram(
            "crisscross_search_duration_seconds",
            "Time in one faiss search including re-sorting, by variant and collection.",
            ["variant", "collection"],
            buckets=_STAGE_BUCKETS_S,
            registry=self.registry,
        )
        self.bundle_info = Gauge(
            "crisscross_bundle_loaded",
            "1 for each bundle version being served.",
            ["bundle", "version", "variant"],
            registry=self.registry,
        )
        self.collection_items = Gauge(
            "crisscross_collection_items",
            "Rows in each served collection.",
            ["variant", "collection", "bundle", "version"],
            registry=self.registry,
        )
        self.variant_info = Gauge(
            "crisscross_variant_loaded",
            "1 for each tower of each encoder variant loaded, with its precision and onnxruntime "
            "providers.",
            ["variant", "tower", "precision", "providers", "fingerprint"],
            registry=self.registry,
        )
        self.ready = Gauge(
            "crisscross_ready",
            "1 once every bundle and encoder is loaded and the service answers queries.",
            registry=self.registry,
        )
        self.loaded_at = Gauge(
            "crisscross_store_loaded_timestamp_seconds",
            "Unix time at which the store being served was published (startup or reload).",
            registry=self.registry,
        )
        self.load_failures = Counter(
            "crisscross_load_failures",
            "Attempts to load bundles and encoders that were refused.",
            registry=self.registry,
        )

    def observe_request(self, route: str, method: str, status: int, seconds: float) -> None:
        """Count one answered request and its duration."""
        labels = (route, method, str(status))
        self.requests.labels(*labels).inc()
        self.request_seconds.labels(*labels).observe(seconds)

    def record_loaded(
        self,
        bundles: Iterable[tuple[str, str, str]],
        collections: Iterable[tuple[str, str, str, str, int]],
        variants: Iterable[tuple[str, str, str, Iterable[str], str]],
    ) -> None:
        """Publish what is served: ``(bundle, version, variant)``,
        ``(variant, collection, bundle, version, count)`` and
        ``(variant, tower, precision, providers, fingerprint)`` tuples. Replaces earlier
        values."""
        self.bundle_info.clear()
        self.collection_items.clear()
        self.variant_info.clear()
        for bundle, version, variant in bundles:
            self.bundle_info.labels(bundle, version, variant).set(1)
        for variant, collection, bundle, version, count in collections:
            self.collection_items.labels(variant, collection, bundle, version).set(count)
        for variant, tower, precision, providers, fingerprint in variants:
            self.variant_info.labels(
                variant, tower, precision, ",".join(providers), fingerprint
            ).set(1)
        self.ready.set(1)
        self.loaded_at.set_to_current_time()

    def exposition(self) -> bytes:
        """The registry in Prometheus text format."""
        return generate_latest(self.registry)
