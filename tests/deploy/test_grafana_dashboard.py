"""deploy/grafana/: the provisioned data source, the dashboard provider and the Crisscross
dashboard, checked against what a live service really exports.

- The provisioning files parse and agree with each other and with compose's mounts: the data
  source has uid ``prometheus`` at ``http://prometheus:9090`` (with Prometheus' scrape
  interval), the provider loads ``/var/lib/grafana/dashboards``.
- The dashboard JSON parses (uid ``crisscross``, schema 39, variables ``variant``,
  ``collection`` and ``route`` from ``label_values``); every panel reads the ``prometheus``
  data source and has a query; every rate window is ``$__rate_interval``; the panels cover
  traffic, latency, admission, encoders, search, images, readiness and what is loaded.
- Every metric name a panel, a variable or an alert rule uses is one a live service exports
  (after a text search, an image search and an upload, so that every family has samples), and
  every family it exports has a panel. (The same against the table of declarations,
  ``service.metrics.METRICS``, needs no service: ``tests/unit/service/test_metrics.py``.)
- A real Prometheus scraping that service evaluates every panel query (variables set to All,
  ``$__rate_interval`` to 1m) without error, and with data except where the service has had
  nothing of the kind (no 503, no refusal, no reload, no replica); the variables list the served
  variant, collections and routes.
- A real replica set (a leader and a follower, each a live service with its own collections)
  that has had a write acknowledged by both and a write refused by the follower samples every
  replication metric, and a real Prometheus scraping both evaluates every panel of the
  "Replicas" row with data.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from service.metrics import METRICS
from tests.conftest import require_tools
from tests.deploy.monitoring import (
    DASHBOARD_PROVIDERS,
    DATASOURCES,
    PROMETHEUS_CONFIG,
    PROMETHEUS_SERIES,
    LivePrometheus,
    alert_rules,
    dashboard,
    dashboard_metric_names,
    drive_traffic,
    drive_writes,
    label_values_query,
    live_config,
    live_metric_names,
    load_yaml,
    metric_family,
    metric_names,
    panel_exprs,
    panel_metric_names,
    query_panels,
    start_prometheus,
    stop_prometheus,
    variable_queries,
    wait_for_rates,
    wait_for_result,
    wait_for_target_up,
    wait_for_targets_up,
)
from tests.deploy.replicas import drive_replication, start_replica_set, stop_replica_set
from tests.e2e.conftest import LiveService, start_service, stop_service

DATASOURCE_UID = "prometheus"
DASHBOARDS_PATH = "/var/lib/grafana/dashboards"
VARIABLES = ("variant", "collection", "route")
# What an operator needs to see, each in at least one panel.
OPERATOR_METRICS = frozenset(
    {
        "crisscross_requests_total",
        "crisscross_request_duration_seconds_bucket",
        "crisscross_admission_waiting",
        "crisscross_admission_overloaded",
        "crisscross_admission_limit",
        "crisscross_requests_refused_total",
        "crisscross_encode_queue_depth",
        "crisscross_encode_queue_wait_seconds_bucket",
        "crisscross_encode_batch_size_bucket",
        "crisscross_encode_batch_size_sum",
        "crisscross_encode_batch_size_count",
        "crisscross_encode_duration_seconds_bucket",
        "crisscross_search_duration_seconds_bucket",
        "crisscross_image_decode_duration_seconds_bucket",
        "crisscross_ready",
        "crisscross_workers",
        "crisscross_reloads_total",
        "crisscross_bundle_loaded",
        "crisscross_collection_items",
        "crisscross_load_failures_total",
        "up",
    }
)
# Panels that may show nothing on a healthy service that has only answered a few searches.
MAY_BE_EMPTY = frozenset(
    {
        "503 responses/s",
        "503 share of API requests",
        "Refused/s by reason",
        "Images refused/s by reason",
        "Client refusals/s by reason",
        "Reloads by outcome",
        "Query cache lookups/s by result",
    }
)
ROW_REPLICAS = "Replicas"
# The Replicas row's panels that need a follower (or a write a follower acknowledges or refuses):
# empty on a server alone, with data on a replica set.
EMPTY_ALONE = frozenset(
    {
        "Replication lag (records)",
        "Replication lag (seconds)",
        "Follower positions (seq) reported to the leader",
        "Writes refused/s by reason (replication)",
        "Acknowledgement wait (p50, p99) by acks",
        "Catch-up bytes/s by kind",
        "Collections installed whole by reason",
    }
)
# The metrics only the members of a replica set sample (a labelled family with no sample yet on
# a server alone); tested on one below.
REPLICA_SET_SAMPLES = frozenset(
    {
        "crisscross_replication_lag_records",
        "crisscross_replication_lag_seconds",
        "crisscross_replication_follower_seq",
        "crisscross_replication_refused_writes_total",
        "crisscross_replication_ack_seconds_bucket",
        "crisscross_replication_catchup_bytes_total",
        "crisscross_replication_installs_total",
    }
)
# Grafana's variables as a test sets them: every variable at All, the intervals at 1m.
_VARIABLE = re.compile(r"\$\{?(\w+)\}?")
_INTERVALS = {"__rate_interval": "1m", "__interval": "1m", "__range": "1h"}
_RANGE_WINDOW = re.compile(r"\b(?:rate|increase|irate|\w+_over_time)\([^\[]*\[([^\]]*)\]")


def substitute(expr: str) -> str:
    """``expr`` as Grafana sends it with every variable at All (``.*``) and the intervals 1m."""
    return _VARIABLE.sub(lambda match: _INTERVALS.get(match.group(1), ".*"), expr)


# -- Static checks --------------------------------------------------------------------------------


def test_the_metric_name_tokenizer() -> None:
    expr = (
        'histogram_quantile(0.99, sum by (le, route) (rate(a_seconds_bucket{route=~"/v1/.*"}'
        "[$__rate_interval]))) > 0.5 and on (job, route) sum(rate(a_seconds_count[5m])) > 1e3"
        ' or (b_total > 0 unless b_total offset 15m) or time() - c_timestamp or up{job="x"}'
    )
    assert metric_names(expr) == {
        "a_seconds_bucket",
        "a_seconds_count",
        "b_total",
        "c_timestamp",
        "up",
    }
    assert label_values_query('label_values(m{variant=~"$variant"}, collection)') == (
        'm{variant=~"$variant"}',
        "collection",
    )


def test_the_provisioning_points_at_the_datasource_and_the_dashboards() -> None:
    (datasource,) = load_yaml(DATASOURCES)["datasources"]
    assert datasource["uid"] == DATASOURCE_UID
    assert datasource["type"] == "prometheus"
    assert datasource["url"] == "http://prometheus:9090"
    scrape_interval = load_yaml(PROMETHEUS_CONFIG)["global"]["scrape_interval"]
    assert datasource["jsonData"]["timeInterval"] == scrape_interval
    (provider,) = load_yaml(DASHBOARD_PROVIDERS)["providers"]
    assert provider["type"] == "file"
    assert provider["options"]["path"] == DASHBOARDS_PATH


def test_the_dashboard_parses_with_its_uid_and_variables() -> None:
    document = dashboard()
    assert document["uid"] == "crisscross"
    assert 36 <= document["schemaVersion"] <= 41
    variables = {variable["name"]: variable for variable in document["templating"]["list"]}
    assert set(variables) == set(VARIABLES)
    for name, query in variable_queries().items():
        variable = variables[name]
        assert variable["type"] == "query"
        assert variable["datasource"]["uid"] == DATASOURCE_UID
        assert variable["includeAll"]
        assert variable["allValue"] == ".*"
        _, label = label_values_query(query)
        assert label == name
    panels = [
        *document["panels"],
        *(p for row in document["panels"] for p in row.get("panels", [])),
    ]
    ids = [panel["id"] for panel in panels]
    assert len(set(ids)) == len(ids), ids
    for panel in panels:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"]), panel["title"]
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24, panel["title"]


def test_every_panel_reads_prometheus_and_has_a_query() -> None:
    panels = query_panels()
    assert len(panels) >= 20
    for panel in panels:
        title = panel["title"]
        assert panel["datasource"]["uid"] == DATASOURCE_UID, title
        assert panel["targets"], title
        refs = [target["refId"] for target in panel["targets"]]
        assert len(set(refs)) == len(refs), title
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == DATASOURCE_UID, title
            assert target["expr"].strip(), title


def test_every_rate_window_is_the_rate_interval() -> None:
    """``$__rate_interval`` follows the zoom and is never shorter than four scrapes."""
    for title, expr in panel_exprs():
        for window in _RANGE_WINDOW.findall(expr):
            assert window == "$__rate_interval", f"{title}: {expr}"


def test_the_dashboard_covers_what_an_operator_needs() -> None:
    used = panel_metric_names()
    assert used >= OPERATOR_METRICS, sorted(OPERATOR_METRICS - used)


def row_panels(title: str) -> list[dict[str, Any]]:
    """The panels under the (expanded) row ``title``, up to the next row."""
    found: list[dict[str, Any]] | None = None
    for panel in dashboard()["panels"]:
        if panel["type"] == "row":
            if found is not None:
                break
            if panel["title"] == title:
                assert not panel["collapsed"]
                found = []
        elif found is not None:
            found.append(panel)
    assert found, f"no row {title!r}"
    return found


def test_the_replicas_row_shows_every_replication_metric() -> None:
    panels = row_panels(ROW_REPLICAS)
    titles = {panel["title"] for panel in panels}
    assert titles > EMPTY_ALONE
    shown = {
        metric_family(name)
        for panel in panels
        for target in panel["targets"]
        for name in metric_names(target["expr"])
    }
    replication = {metric_family(spec.name) for spec in METRICS if "_replication_" in spec.name}
    assert len(replication) == 10
    assert replication <= shown, sorted(replication - shown)
    assert {metric_family(name) for name in REPLICA_SET_SAMPLES} <= replication


# -- Against a live service and a real Prometheus -------------------------------------------------


@dataclass(frozen=True)
class Stack:
    """A live service that has answered a text search, an image search and an upload, what its
    /metrics declared and sampled then, and the Prometheus scraping it."""

    service: LiveService
    declared: set[str]
    sampled: set[str]
    prometheus: LivePrometheus


@pytest.fixture(scope="module")
def stack(
    scenes_roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    tools = require_tools("prometheus")
    root = tmp_path_factory.mktemp("grafana-stack")
    variants_root, bundles_root = scenes_roots
    service = start_service(
        variants_root,
        bundles_root,
        root / "service.log",
        {"CRISSCROSS_COLLECTIONS_DIR": str(root / "collections")},
    )
    try:
        drive_traffic(service)
        drive_writes(service)
        declared, sampled = live_metric_names(service)
        prometheus = start_prometheus(
            tools["prometheus"], live_config(service, []), root / "prometheus"
        )
        try:
            yield Stack(service, declared, sampled, prometheus)
        finally:
            stop_prometheus(prometheus)
    finally:
        assert stop_service(service) == 0, service.log()


def test_every_metric_the_dashboard_uses_is_exported(stack: Stack) -> None:
    used = dashboard_metric_names()
    unknown = used - stack.declared - PROMETHEUS_SERIES
    assert unknown == set(), f"not exported by the service: {sorted(unknown)}"
    # The searches gave every family samples but the counters of events that did not happen.
    events = {
        "crisscross_reloads_total",
        "crisscross_requests_refused_total",
        "crisscross_images_refused_total",
        "crisscross_client_refusals_total",
        "crisscross_query_cache_lookups_total",
    }
    unsampled = used - stack.sampled - PROMETHEUS_SERIES - events - REPLICA_SET_SAMPLES
    assert unsampled == set(), sorted(unsampled)


def test_every_metric_the_alert_rules_use_is_exported(stack: Stack) -> None:
    used = set().union(*(metric_names(rule["expr"]) for rule in alert_rules()))
    unknown = used - stack.declared - PROMETHEUS_SERIES
    assert unknown == set(), f"not exported by the service: {sorted(unknown)}"


def test_every_exported_family_has_a_panel(stack: Stack) -> None:
    """A metric added to the service without a panel fails here: add one."""
    shown = {metric_family(name) for name in panel_metric_names()}
    exported = {metric_family(name) for name in stack.declared if not name.endswith("_created")}
    assert exported - shown == set(), sorted(exported - shown)


def test_prometheus_runs_every_panel_query(stack: Stack) -> None:
    prometheus = stack.prometheus
    wait_for_target_up(prometheus)
    # rate() needs two scrapes of the traffic driven before the first.
    wait_for_result(prometheus, "sum(rate(crisscross_requests_total[1m]))")
    empty = []
    for title, expr in panel_exprs():
        if not prometheus.query(substitute(expr)):  # fails on a query Prometheus refuses
            empty.append(title)
    assert set(empty) <= MAY_BE_EMPTY | EMPTY_ALONE, sorted(set(empty) - MAY_BE_EMPTY - EMPTY_ALONE)


def test_the_variables_list_what_is_served(stack: Stack) -> None:
    prometheus = stack.prometheus
    wait_for_target_up(prometheus)
    wait_for_result(prometheus, "crisscross_collection_items")  # the first scrape is stored
    values = {}
    for name, query in variable_queries().items():
        selector, label = label_values_query(query)
        values[name] = set(
            prometheus.api(f"label/{label}/values", **{"match[]": substitute(selector)})
        )
    assert values["variant"] == {"scenes-dual-encoder"}
    assert values["collection"] == {"captions", "images"}
    assert {"/v1/search", "/v1/search/upload"} <= values["route"]


# -- A replica set and a real Prometheus ----------------------------------------------------------


@dataclass(frozen=True)
class ReplicaStack:
    """A leader and its follower that have replicated a write and refused one, what their
    /metrics sampled then, and the Prometheus scraping both."""

    members: list[LiveService]
    sampled: set[str]
    prometheus: LivePrometheus


@pytest.fixture(scope="module")
def replica_stack(
    scenes_roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReplicaStack]:
    tools = require_tools("prometheus")
    root = tmp_path_factory.mktemp("grafana-replicas")
    variants_root, bundles_root = scenes_roots
    members = start_replica_set(variants_root, bundles_root, root, 2)
    try:
        leader, follower = members
        drive_replication(leader, [follower])
        sampled = set().union(*(live_metric_names(member)[1] for member in members))
        prometheus = start_prometheus(
            tools["prometheus"], live_config(leader, [], also=[follower]), root / "prometheus"
        )
        try:
            yield ReplicaStack(members, sampled, prometheus)
        finally:
            stop_prometheus(prometheus)
    finally:
        stop_replica_set(members)


def test_a_replica_set_samples_every_replication_metric(replica_stack: ReplicaStack) -> None:
    used = {name for name in dashboard_metric_names() if "_replication_" in name}
    assert used >= REPLICA_SET_SAMPLES
    assert used - replica_stack.sampled == set(), sorted(used - replica_stack.sampled)


def test_prometheus_shows_every_replicas_panel_with_data(replica_stack: ReplicaStack) -> None:
    prometheus = replica_stack.prometheus
    wait_for_targets_up(prometheus, len(replica_stack.members))
    # rate() needs two scrapes of each member, of what happened before the first.
    wait_for_rates(prometheus, len(replica_stack.members))
    empty = [
        panel["title"]
        for panel in row_panels(ROW_REPLICAS)
        for target in panel["targets"]
        if not prometheus.query(substitute(target["expr"]))
    ]
    assert empty == []
    # Each member shows its role: one leader (1), one follower (2).
    (roles,) = [p for p in row_panels(ROW_REPLICAS) if p["title"] == "Replica role by instance"]
    (target,) = roles["targets"]
    values = sorted(float(series["value"][1]) for series in prometheus.query(target["expr"]))
    assert values == [1.0, 2.0]
