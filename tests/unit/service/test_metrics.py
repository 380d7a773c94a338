"""The service's metrics (service.metrics): a registry per app, requests counted by route and
status, and what is served published so that a reload replaces it."""

from __future__ import annotations

from service.metrics import ServiceMetrics


def sample(metrics: ServiceMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def test_two_apps_keep_separate_registries() -> None:
    first, second = ServiceMetrics(), ServiceMetrics()
    first.observe_request("/v1/search", "POST", 200, 0.01)
    assert (
        sample(first, "crisscross_requests_total", route="/v1/search", method="POST", status="200")
        == 1
    )
    assert (
        sample(second, "crisscross_requests_total", route="/v1/search", method="POST", status="200")
        is None
    )


def test_a_request_is_counted_and_timed() -> None:
    metrics = ServiceMetrics()
    metrics.observe_request("/v1/search", "POST", 503, 0.2)
    metrics.observe_request("/v1/search", "POST", 503, 0.3)
    labels = {"route": "/v1/search", "method": "POST", "status": "503"}
    assert sample(metrics, "crisscross_requests_total", **labels) == 2
    assert sample(metrics, "crisscross_request_duration_seconds_count", **labels) == 2
    assert sample(metrics, "crisscross_request_duration_seconds_sum", **labels) == 0.5


def test_what_is_loaded_replaces_what_was() -> None:
    metrics = ServiceMetrics()
    metrics.record_loaded(
        bundles=[("coco", "v1", "clip")],
        collections=[("clip", "captions", "coco", "v1", 25)],
        variants=[
            ("clip", "text", "fp32", ["CUDAExecutionProvider", "CPUExecutionProvider"], "ab")
        ],
    )
    assert (
        sample(metrics, "crisscross_bundle_loaded", bundle="coco", version="v1", variant="clip")
        == 1
    )
    collection = {"variant": "clip", "collection": "captions", "bundle": "coco", "version": "v1"}
    assert sample(metrics, "crisscross_collection_items", **collection) == 25
    providers = "CUDAExecutionProvider,CPUExecutionProvider"
    tower = {"variant": "clip", "tower": "text", "precision": "fp32", "providers": providers}
    assert sample(metrics, "crisscross_variant_loaded", **tower, fingerprint="ab") == 1
    assert sample(metrics, "crisscross_ready") == 1
    loaded_at = sample(metrics, "crisscross_store_loaded_timestamp_seconds")
    assert loaded_at is not None
    assert loaded_at > 0

    metrics.record_loaded(bundles=[("coco", "v2", "clip")], collections=[], variants=[])
    assert (
        sample(metrics, "crisscross_bundle_loaded", bundle="coco", version="v1", variant="clip")
        is None
    )
    assert (
        sample(metrics, "crisscross_bundle_loaded", bundle="coco", version="v2", variant="clip")
        == 1
    )
    assert sample(metrics, "crisscross_collection_items", **collection) is None


def test_the_exposition_is_prometheus_text() -> None:
    metrics = ServiceMetrics()
    metrics.observe_request("/healthz", "GET", 200, 0.001)
    text = metrics.exposition().decode("utf-8")
    assert "# TYPE crisscross_requests_total counter" in text
    assert metrics.content_type.startswith("text/plain")
