"""deploy/prometheus/: the scrape configuration and alert rules, checked by promtool and run by a
real Prometheus against a real service.

- ``promtool check config`` accepts the shipped ``prometheus.yml``, which scrapes the service
  (job ``crisscross``, ``/metrics``, ``crisscross:8000``) and loads
  ``/etc/prometheus/alerts.yml``; ``promtool check rules`` accepts ``alerts.yml``; every alert
  has a ``for``, a severity and both annotations; ``promtool test rules alerts.test.yml`` passes
  and holds, for each alert, a case where it fires and one where it does not.
- A Prometheus running a configuration derived from the shipped one scrapes a live service: the
  target is up, ``crisscross_ready`` is 1, the rules load healthy, every alert expression
  evaluates against the real series, and no alert is active.
- A corrupt bundle version refused by a real ``POST /v1/admin/reload`` (409) sets
  ``CrisscrossReloadFailed`` pending, although the series of that outcome is new (the first
  rejection of the process).
- ``promtool check config`` accepts ``prometheus.replicas.yml`` (the replicated compose layout's),
  which differs from ``prometheus.yml`` only in its targets.
- A Prometheus scraping a real replica set (a leader and its follower, a write replicated and
  one refused) evaluates every replication rule against the real series with none active; once
  the leader stops, ``CrisscrossReplicaSetNoLeader`` turns pending.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from storage.reader import resolve_current
from tests.conftest import require_tools
from tests.deploy.monitoring import (
    ALERT_RULES,
    ALERT_TESTS,
    HTTP_TIMEOUT_S,
    PROMETHEUS_CONFIG,
    SCRAPE_JOB,
    LivePrometheus,
    alert_rules,
    drive_traffic,
    live_config,
    load_yaml,
    start_prometheus,
    stop_prometheus,
    wait_for,
    wait_for_rates,
    wait_for_result,
    wait_for_target_up,
    wait_for_targets_up,
)
from tests.deploy.replicas import drive_replication, start_replica_set, stop_replica_set
from tests.e2e.conftest import LiveService, start_service, stop_service

CONTAINER_RULES = "/etc/prometheus/alerts.yml"
SEVERITIES = frozenset({"critical", "warning"})
BUNDLE = "scenes"
ADMIN_KEY = "deploy-monitoring-admin-key-0123456789"
RELOAD_ENV = {"CRISSCROSS_ADMIN_KEYS": ADMIN_KEY, "CRISSCROSS_ADMIN_RELOAD": "true"}
RELOAD_ALERT = "CrisscrossReloadFailed"
NO_LEADER_ALERT = "CrisscrossReplicaSetNoLeader"
REPLICATION_ALERTS = frozenset(
    {
        "CrisscrossReplicationLag",
        NO_LEADER_ALERT,
        "CrisscrossReplicaFenced",
        "CrisscrossLeaderWithoutMajority",
        "CrisscrossWritesNotReplicated",
        "CrisscrossWritesMisdirected",
    }
)
REPLICAS_CONFIG = PROMETHEUS_CONFIG.with_name("prometheus.replicas.yml")


def promtool(tools: dict[str, str], *arguments: str) -> None:
    """Run promtool; fails with its output unless it exits 0."""
    run = subprocess.run(
        [tools["promtool"], *arguments], capture_output=True, text=True, timeout=60, check=False
    )
    assert run.returncode == 0, f"promtool {' '.join(arguments)}:\n{run.stdout}\n{run.stderr}"


# -- promtool -------------------------------------------------------------------------------------


def test_the_shipped_config_scrapes_the_service_and_loads_the_rules() -> None:
    config = load_yaml(PROMETHEUS_CONFIG)
    assert config["rule_files"] == [CONTAINER_RULES]
    (job,) = config["scrape_configs"]
    assert job["job_name"] == SCRAPE_JOB
    assert job["metrics_path"] == "/metrics"
    assert job["static_configs"] == [{"targets": ["crisscross:8000"]}]
    interval = config["global"]["scrape_interval"]
    assert interval.endswith("s")
    assert 5 <= int(interval.removesuffix("s")) <= 15
    # Shipped without an Alertmanager (a comment says how to add one).
    assert "alerting" not in config


def test_promtool_checks_the_shipped_config(tmp_path: Path) -> None:
    tools = require_tools("promtool")
    # check config opens the rule files it names, and /etc/prometheus/alerts.yml exists only
    # inside the container (compose mounts deploy/prometheus/ there): the copy names the
    # repository's file instead and is otherwise the shipped text, unchanged.
    shipped = PROMETHEUS_CONFIG.read_text()
    assert shipped.count(CONTAINER_RULES) == 1
    copy = tmp_path / "prometheus.yml"
    copy.write_text(shipped.replace(CONTAINER_RULES, str(ALERT_RULES)))
    promtool(tools, "check", "config", str(copy))


def test_promtool_checks_the_replicas_config(tmp_path: Path) -> None:
    """The replicated layout's config: the shipped one but for its three targets."""
    tools = require_tools("promtool")
    replicas = load_yaml(REPLICAS_CONFIG)
    single = load_yaml(PROMETHEUS_CONFIG)
    (job,) = replicas["scrape_configs"]
    (static,) = job.pop("static_configs")
    assert len(static["targets"]) == 3
    (single_job,) = single["scrape_configs"]
    single_job.pop("static_configs")
    assert job == single_job
    assert {k: v for k, v in replicas.items() if k != "scrape_configs"} == {
        k: v for k, v in single.items() if k != "scrape_configs"
    }
    shipped = REPLICAS_CONFIG.read_text()
    assert shipped.count(CONTAINER_RULES) == 1
    copy = tmp_path / "prometheus.replicas.yml"
    copy.write_text(shipped.replace(CONTAINER_RULES, str(ALERT_RULES)))
    promtool(tools, "check", "config", str(copy))


def test_promtool_checks_the_alert_rules() -> None:
    tools = require_tools("promtool")
    promtool(tools, "check", "rules", str(ALERT_RULES))


def test_every_alert_has_a_for_a_severity_and_annotations() -> None:
    rules = alert_rules()
    names = [rule["alert"] for rule in rules]
    assert len(set(names)) == len(names), names
    expected = {
        "CrisscrossDown",
        "CrisscrossNotReady",
        "CrisscrossLoadFailed",
        "CrisscrossHigh503Rate",
        "CrisscrossHighLatencyP99",
        "CrisscrossConnectionsRefused",
        RELOAD_ALERT,
        *REPLICATION_ALERTS,
    }
    assert set(names) == expected
    for rule in rules:
        assert rule.get("for"), rule["alert"]
        assert rule["labels"]["severity"] in SEVERITIES, rule["alert"]
        assert {"summary", "description"} <= set(rule["annotations"]), rule["alert"]


def test_the_alert_unit_tests_pass() -> None:
    tools = require_tools("promtool")
    promtool(tools, "test", "rules", str(ALERT_TESTS))


def test_the_unit_tests_fire_and_spare_every_alert() -> None:
    """Each alert has an evaluation where it fires and one where it stays quiet."""
    document = load_yaml(ALERT_TESTS)
    assert document["rule_files"] == [ALERT_RULES.name]
    fired: set[str] = set()
    quiet: set[str] = set()
    for case in document["tests"]:
        for check in case.get("alert_rule_test", []):
            (fired if check["exp_alerts"] else quiet).add(check["alertname"])
    names = {rule["alert"] for rule in alert_rules()}
    assert fired == names
    assert quiet == names


# -- A real Prometheus scraping a real service ----------------------------------------------------


@dataclass(frozen=True)
class Stack:
    """A live service (reload enabled, its own bundles) and the Prometheus scraping it."""

    service: LiveService
    prometheus: LivePrometheus
    bundles_root: Path


@pytest.fixture(scope="module")
def stack(
    scenes_roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Stack]:
    tools = require_tools("prometheus")
    root = tmp_path_factory.mktemp("prometheus-stack")
    variants_root, shared_bundles = scenes_roots
    # A copy: the reload test writes a corrupt version into it.
    bundles_root = root / "bundles"
    shutil.copytree(shared_bundles, bundles_root)
    service = start_service(variants_root, bundles_root, root / "service.log", RELOAD_ENV)
    try:
        drive_traffic(service)
        prometheus = start_prometheus(
            tools["prometheus"], live_config(service, [ALERT_RULES]), root / "prometheus"
        )
        try:
            yield Stack(service, prometheus, bundles_root)
        finally:
            stop_prometheus(prometheus)
    finally:
        assert stop_service(service) == 0, service.log()


def active_alerts(prometheus: LivePrometheus) -> dict[str, list[dict[str, Any]]]:
    """The alerts pending or firing now, by name."""
    alerts: dict[str, list[dict[str, Any]]] = {}
    for alert in prometheus.api("alerts")["alerts"]:
        alerts.setdefault(alert["labels"]["alertname"], []).append(alert)
    return alerts


def test_prometheus_scrapes_the_service_and_evaluates_the_rules(stack: Stack) -> None:
    prometheus = stack.prometheus
    target = wait_for_target_up(prometheus)
    assert target["scrapeUrl"] == f"{stack.service.url}/metrics"
    assert target["lastError"] == ""

    (ready,) = wait_for_result(prometheus, "crisscross_ready")
    assert ready["metric"]["job"] == SCRAPE_JOB
    assert float(ready["value"][1]) == 1.0
    (up,) = prometheus.query(f'up{{job="{SCRAPE_JOB}"}}')
    assert float(up["value"][1]) == 1.0
    collections = prometheus.query("crisscross_collection_items")
    assert {series["metric"]["collection"] for series in collections} == {"captions", "images"}
    # rate() needs two scrapes; then the traffic driven before the first one is in the series.
    routes = wait_for_result(
        prometheus, "sum by (route) (rate(crisscross_request_duration_seconds_count[1m]))"
    )
    assert {"/v1/search", "/v1/search/upload"} <= {series["metric"]["route"] for series in routes}

    groups = prometheus.api("rules", type="alert")["groups"]
    loaded = {rule["name"]: rule for group in groups for rule in group["rules"]}
    assert set(loaded) == {rule["alert"] for rule in alert_rules()}

    def evaluated() -> bool | None:
        groups = prometheus.api("rules", type="alert")["groups"]
        return all(group["lastEvaluation"][:4] != "0001" for group in groups) or None

    # Each group has been evaluated at least once, without error, against the real series.
    wait_for(evaluated, "every rule group to be evaluated")
    for group in prometheus.api("rules", type="alert")["groups"]:
        for rule in group["rules"]:
            assert rule["health"] == "ok", rule
            assert rule.get("lastError", "") == "", rule
    for rule in alert_rules():
        prometheus.query(rule["expr"])  # fails unless it evaluates
    # A healthy service: nothing pending or firing (the reload test may have run first).
    assert set(active_alerts(prometheus)) <= {RELOAD_ALERT}


def write_corrupt_version(bundles_root: Path, version: str) -> None:
    """A copy of the served version under ``version`` with one bit of one embedding flipped, so
    its sha256 no longer matches the manifest (CURRENT does not move)."""
    bad = bundles_root / BUNDLE / version
    shutil.copytree(resolve_current(bundles_root / BUNDLE), bad)
    vectors = bad / "captions.vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[-7] ^= 0x01
    vectors.write_bytes(bytes(data))


def test_a_refused_reload_sets_the_reload_alert_pending(stack: Stack) -> None:
    prometheus = stack.prometheus
    wait_for_target_up(prometheus)
    assert RELOAD_ALERT not in active_alerts(prometheus)

    bad_version = "20990202T000000000000Z"
    write_corrupt_version(stack.bundles_root, bad_version)
    refused = httpx.post(
        f"{stack.service.url}/v1/admin/reload",
        json={"bundle": BUNDLE, "version": bad_version},
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
        timeout=HTTP_TIMEOUT_S,
    )
    assert refused.status_code == 409, refused.text
    assert refused.json()["error"]["code"] == "bundle_rejected"

    def pending() -> list[dict[str, Any]] | None:
        return active_alerts(prometheus).get(RELOAD_ALERT)

    (alert,) = wait_for(pending, f"{RELOAD_ALERT} to become active")
    assert alert["state"] == "pending"  # for: 1m, longer than this test waits
    assert alert["labels"]["outcome"] == "rejected"
    assert alert["labels"]["severity"] == "warning"
    assert alert["labels"]["instance"] == stack.service.url.removeprefix("http://")
    # The service itself went on serving: still ready, no other alert.
    (ready,) = prometheus.query("crisscross_ready")
    assert float(ready["value"][1]) == 1.0
    assert set(active_alerts(prometheus)) == {RELOAD_ALERT}


# -- A real Prometheus scraping a real replica set ------------------------------------------------


@dataclass(frozen=True)
class ReplicaStack:
    """A leader and its follower (a write replicated, one refused) and the Prometheus scraping
    both with the shipped rules."""

    members: list[LiveService]
    prometheus: LivePrometheus


@pytest.fixture(scope="module")
def replica_stack(
    scenes_roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReplicaStack]:
    tools = require_tools("prometheus")
    root = tmp_path_factory.mktemp("prometheus-replicas")
    variants_root, bundles_root = scenes_roots
    members = start_replica_set(variants_root, bundles_root, root, 2)
    try:
        leader, follower = members
        drive_replication(leader, [follower])
        prometheus = start_prometheus(
            tools["prometheus"],
            live_config(leader, [ALERT_RULES], also=[follower]),
            root / "prometheus",
        )
        try:
            yield ReplicaStack(members, prometheus)
        finally:
            stop_prometheus(prometheus)
    finally:
        stop_replica_set(members)


def test_the_replication_rules_run_quiet_on_a_healthy_set(replica_stack: ReplicaStack) -> None:
    prometheus = replica_stack.prometheus
    wait_for_targets_up(prometheus, len(replica_stack.members))
    # Two scrapes of each, so that the rates and the fetch traffic are in.
    wait_for_rates(prometheus, len(replica_stack.members))
    roles = wait_for_result(prometheus, "crisscross_replication_role == 1")
    assert sorted(series["metric"]["role"] for series in roles) == ["follower", "leader"]

    def evaluated() -> bool | None:
        groups = prometheus.api("rules", type="alert")["groups"]
        return all(group["lastEvaluation"][:4] != "0001" for group in groups) or None

    wait_for(evaluated, "every rule group to be evaluated")
    for group in prometheus.api("rules", type="alert")["groups"]:
        for rule in group["rules"]:
            assert rule["health"] == "ok", rule
    for rule in alert_rules():
        if rule["alert"] in REPLICATION_ALERTS:
            prometheus.query(rule["expr"])  # fails unless it evaluates
    # The leader is followed by its one follower: a majority of two.
    (followers,) = prometheus.query("crisscross_replication_followers == 1")
    assert followers["metric"]["instance"] == replica_stack.members[0].url.removeprefix("http://")
    assert set(active_alerts(prometheus)) & REPLICATION_ALERTS == set()


def test_a_stopped_leader_sets_the_no_leader_alert_pending(replica_stack: ReplicaStack) -> None:
    prometheus = replica_stack.prometheus
    leader = replica_stack.members[0]
    wait_for_targets_up(prometheus, len(replica_stack.members))
    wait_for_result(prometheus, 'crisscross_replication_role{role="leader"} == 1')
    assert NO_LEADER_ALERT not in active_alerts(prometheus)

    assert stop_service(leader) == 0, leader.log()

    def pending() -> list[dict[str, Any]] | None:
        return active_alerts(prometheus).get(NO_LEADER_ALERT)

    (alert,) = wait_for(pending, f"{NO_LEADER_ALERT} to become active")
    assert alert["state"] == "pending"  # for: 1m, longer than this test waits
    assert alert["labels"]["job"] == SCRAPE_JOB
    assert alert["labels"]["severity"] == "critical"
