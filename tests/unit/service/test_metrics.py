"""The service's metrics (service.metrics): the table of declarations (each metric an attribute of
its kind, exported as declared, every metric a dashboard panel, variable or alert rule queries
declared and every declared one on a panel), a registry per app, requests counted by route and
status, the admission gauges read from the gate, and what is served published so that a reload
replaces it."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import get_type_hints

import pytest
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.parser import text_string_to_metric_families

from service.metrics import METRICS, MULTIPROCESS_DIR_VARIABLE, MetricSpec, ServiceMetrics
from tests.deploy.monitoring import (
    DASHBOARD,
    PROMETHEUS_SERIES,
    alert_rules,
    dashboard_metric_names,
    metric_family,
    metric_names,
    panel_metric_names,
)

_KINDS = {Counter: "counter", Gauge: "gauge", Histogram: "histogram"}


def sample(metrics: ServiceMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


def declared_series() -> set[str]:
    """Every series name the table declares."""
    return set().union(*(spec.series for spec in METRICS))


# -- The table ------------------------------------------------------------------------------------


def test_the_table_declares_each_name_and_attribute_once() -> None:
    names = [spec.name for spec in METRICS]
    attributes = [spec.attribute for spec in METRICS]
    assert len(set(names)) == len(names)
    assert len(set(attributes)) == len(attributes)


def test_every_declared_metric_is_the_attribute_its_annotation_types() -> None:
    annotated = {
        name: hint for name, hint in get_type_hints(ServiceMetrics).items() if hint in _KINDS
    }
    assert annotated == {spec.attribute: spec.kind for spec in METRICS}
    metrics = ServiceMetrics()
    for spec in METRICS:
        assert type(getattr(metrics, spec.attribute)) is spec.kind, spec.attribute


def test_a_spec_refuses_buckets_and_modes_its_kind_has_no_use_for() -> None:
    with pytest.raises(ValueError, match="buckets"):
        MetricSpec("a", Counter, "a", "A.", buckets=(1.0,))
    with pytest.raises(ValueError, match="buckets"):
        MetricSpec("a", Histogram, "a", "A.")
    with pytest.raises(ValueError, match="multiprocess mode"):
        MetricSpec("a", Gauge, "a", "A.")
    with pytest.raises(ValueError, match="multiprocess mode"):
        MetricSpec("a", Counter, "a", "A.", multiprocess_mode="livesum")


def test_the_exposition_is_the_table() -> None:
    """Every metric exported in the table's order, with its kind, help, labels and buckets."""
    metrics = ServiceMetrics()
    for spec in METRICS:
        metric = getattr(metrics, spec.attribute)
        child = (
            metric.labels(*(f"{label}-value" for label in spec.labels)) if spec.labels else metric
        )
        if spec.kind is Histogram:
            child.observe(1)
        else:
            child.inc()
    # The text format exports a counter's or a histogram's ``_created`` as a gauge of its own.
    families = list(text_string_to_metric_families(metrics.exposition().decode()))
    created = {f"{spec.name}_created" for spec in METRICS if spec.kind is not Gauge}
    assert [
        (family.name, family.type, family.documentation)
        for family in families
        if family.name not in created
    ] == [(spec.name, _KINDS[spec.kind], spec.help) for spec in METRICS]
    samples = {family.name: family.samples for family in families}
    for spec in METRICS:
        exported = [*samples[spec.name], *samples.get(f"{spec.name}_created", [])]
        assert {sample.name for sample in exported} == spec.series, spec.name
        for sample in exported:
            labels = {name: value for name, value in sample.labels.items() if name != "le"}
            assert labels == {label: f"{label}-value" for label in spec.labels}, sample
        bounds = [float(s.labels["le"]) for s in exported if s.name.endswith("_bucket")]
        assert bounds == ([*spec.buckets, math.inf] if spec.buckets else []), spec.name


def test_every_metric_the_dashboard_and_the_alert_rules_query_is_declared() -> None:
    """A panel, variable or alert rule querying a metric the service does not declare fails here
    (the deploy tests check the same against a live service, where Prometheus is installed)."""
    used = dashboard_metric_names().union(*(metric_names(rule["expr"]) for rule in alert_rules()))
    unknown = used - declared_series() - PROMETHEUS_SERIES
    assert unknown == set(), f"not in service.metrics.METRICS: {sorted(unknown)}"


def test_every_declared_metric_has_a_panel() -> None:
    """A metric added to the table without a dashboard panel fails here: add one."""
    shown = {metric_family(name) for name in panel_metric_names()}
    unshown = [spec.name for spec in METRICS if spec.name not in shown]
    assert unshown == [], f"no panel in {DASHBOARD.name}: {unshown}"


# -- Observations ---------------------------------------------------------------------------------


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


@dataclass
class Gate:
    """An admission gate whose readings a test sets."""

    waiting: int = 0
    overloaded: bool = False
    current_limit: int = 8


def test_the_admission_gauges_read_the_gate_at_scrape_time() -> None:
    metrics, gate = ServiceMetrics(), Gate()
    metrics.watch_admission(gate)
    assert sample(metrics, "crisscross_admission_limit") == 8
    gate.waiting, gate.overloaded, gate.current_limit = 3, True, 2
    assert sample(metrics, "crisscross_admission_waiting") == 3
    assert sample(metrics, "crisscross_admission_overloaded") == 1
    assert sample(metrics, "crisscross_admission_limit") == 2


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
