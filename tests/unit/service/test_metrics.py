"""The service's metrics (service.metrics): a registry per app, requests counted by route and
status, and what is served published so that a reload replaces it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from service.metrics import MULTIPROCESS_DIR_VARIABLE, ServiceMetrics


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
        batch_sizes=[("clip", "text", 64)],
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
    assert sample(metrics, "crisscross_encoder_max_batch_size", variant="clip", tower="text") == 64
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
    assert (
        sample(metrics, "crisscross_encoder_max_batch_size", variant="clip", tower="text") is None
    )


def test_the_exposition_is_prometheus_text() -> None:
    metrics = ServiceMetrics()
    metrics.observe_request("/healthz", "GET", 200, 0.001)
    text = metrics.exposition().decode("utf-8")
    assert "# TYPE crisscross_requests_total counter" in text
    assert metrics.content_type.startswith("text/plain")


# -- several worker processes --------------------------------------------------------------------

_WORKER = """
import sys
from pathlib import Path
from service.metrics import ServiceMetrics
metrics = ServiceMetrics(Path(sys.argv[1]))
metrics.workers.set(2)
metrics.observe_request("/v1/search", "POST", 200, 0.01)
metrics.record_loaded([("b", sys.argv[2], "v")], [], [])
if len(sys.argv) > 4:
    metrics.record_loaded([("b", sys.argv[4], "v")], [], [])
metrics.ready.set(float(sys.argv[3]))
sys.stdout.write(metrics.exposition().decode())
"""


def _worker(metrics_dir: Path, *args: str, env_dir: Path | None = None) -> str:
    env = {**os.environ, MULTIPROCESS_DIR_VARIABLE: str(env_dir or metrics_dir)}
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, str(metrics_dir), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 or env_dir is not None, done.stderr
    return done.stdout if done.returncode == 0 else done.stderr


def test_workers_metrics_add_up_whichever_worker_answers(tmp_path: Path) -> None:
    _worker(tmp_path, "v1", "1")
    last = _worker(tmp_path, "v1", "0", "v2")  # this one reloaded to v2 and is not ready
    assert 'crisscross_requests_total{method="POST",route="/v1/search",status="200"} 2.0' in last
    assert "crisscross_workers 2.0" in last
    # A version some worker still serves stays 1; the min of readiness over workers is 0.
    assert 'crisscross_bundle_loaded{bundle="b",variant="v",version="v1"} 1.0' in last
    assert 'crisscross_bundle_loaded{bundle="b",variant="v",version="v2"} 1.0' in last
    assert "crisscross_ready 0.0" in last


def test_multiprocess_metrics_need_the_variable_set_before_import(tmp_path: Path) -> None:
    refused = _worker(tmp_path, "v1", "1", env_dir=tmp_path / "elsewhere")
    assert "MultiprocessMetricsError" in refused
