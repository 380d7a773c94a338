"""Helpers of the monitoring tests (``test_prometheus.py``, ``test_grafana_dashboard.py``,
``tests/unit/service/test_metrics.py``): drive a live service so that every metric family has
samples, read the metric names it exports, find the metric names a PromQL expression uses, read
the queries of the Grafana dashboard and of the alert rules, and run a real Prometheus that scrapes
the service with a configuration derived from ``deploy/prometheus/prometheus.yml``.
"""

from __future__ import annotations

import base64
import copy
import io
import json
import re
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx
import pytest
import yaml
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.conftest import DEPLOY_ROOT
from tests.e2e.conftest import LiveService, free_port

PROMETHEUS_DIR = DEPLOY_ROOT / "prometheus"
PROMETHEUS_CONFIG = PROMETHEUS_DIR / "prometheus.yml"
ALERT_RULES = PROMETHEUS_DIR / "alerts.yml"
ALERT_TESTS = PROMETHEUS_DIR / "alerts.test.yml"
GRAFANA_DIR = DEPLOY_ROOT / "grafana"
DASHBOARD = GRAFANA_DIR / "dashboards" / "crisscross.json"
DATASOURCES = GRAFANA_DIR / "provisioning" / "datasources" / "prometheus.yml"
DASHBOARD_PROVIDERS = GRAFANA_DIR / "provisioning" / "dashboards" / "crisscross.yml"

# The job the shipped scrape configuration names; the dashboard and the alert rules filter `up`
# on it.
SCRAPE_JOB = "crisscross"
# Prometheus synthesises `up` for every target; the service does not export it.
PROMETHEUS_SERIES = frozenset({"up"})
# Scrape and rule evaluation every second in the tests (10 s in the shipped file), so that a
# rate has its two samples and a rule its evaluation within a couple of seconds.
TEST_INTERVAL = "1s"
PROMETHEUS_READY_TIMEOUT_S = 30.0
POLL_TIMEOUT_S = 30.0
POLL_PERIOD_S = 0.2
HTTP_TIMEOUT_S = 10.0

T = TypeVar("T")


def load_yaml(path: Path) -> Any:
    """The parsed YAML document at ``path``."""
    return yaml.safe_load(path.read_text())


def wait_for(probe: Callable[[], T | None], what: str, timeout_s: float = POLL_TIMEOUT_S) -> T:
    """Poll ``probe`` until it returns something other than None; fails naming ``what``."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = probe()
        if found is not None:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(POLL_PERIOD_S)


# -- The live service -----------------------------------------------------------------------------


def png_bytes(color: tuple[int, int, int] = (220, 30, 30)) -> bytes:
    """A small solid-colour PNG."""
    buffer = io.BytesIO()
    Image.new("RGB", (48, 48), color).save(buffer, format="PNG")
    return buffer.getvalue()


def drive_traffic(service: LiveService) -> None:
    """A text search, a base64 image search, an upload and a search of an unknown collection (a
    404), so that the request, encoder (both towers), search and image decode series exist."""
    image = png_bytes()
    with httpx.Client(base_url=service.url, timeout=HTTP_TIMEOUT_S) as client:
        text = client.post(
            "/v1/search", json={"query": {"text": "a red circle"}, "collection": "images", "k": 3}
        )
        assert text.status_code == 200, text.text
        encoded = base64.b64encode(image).decode("ascii")
        by_image = client.post(
            "/v1/search", json={"query": {"image": encoded}, "collection": "captions", "k": 3}
        )
        assert by_image.status_code == 200, by_image.text
        upload = client.post(
            "/v1/search/upload",
            files={"file": ("red.png", image, "image/png")},
            data={"collection": "images", "k": "3"},
        )
        assert upload.status_code == 200, upload.text
        unknown = client.post(
            "/v1/search", json={"query": {"text": "a dog"}, "collection": "nowhere", "k": 3}
        )
        assert unknown.status_code == 404, unknown.text


def drive_writes(service: LiveService) -> None:
    """A live collection created, written, deleted from and compacted (the service needs
    collections_dir), so that the write, fsync, size and compaction series exist."""
    with httpx.Client(base_url=service.url, timeout=HTTP_TIMEOUT_S) as client:
        created = client.post("/v1/collections", json={"name": "monitored", "dim": 4})
        assert created.status_code == 201, created.text
        items = [{"id": f"i{n}", "vector": [1.0, float(n), 0.5, -1.0]} for n in range(3)]
        written = client.post("/v1/collections/monitored/items", json={"items": items})
        assert written.status_code == 200, written.text
        deleted = client.post("/v1/collections/monitored/items/delete", json={"ids": ["i0"]})
        assert deleted.status_code == 200, deleted.text
        compacted = client.post("/v1/collections/monitored/compact")
        assert compacted.status_code == 200, compacted.text


def exported_metric_names(exposition: str) -> tuple[set[str], set[str]]:
    """(every series name a query may use, the names with at least one sample) of a ``/metrics``
    text. A counter family ``x`` (``# TYPE x_total counter``) is queried as ``x_total``, a
    histogram ``x`` as ``x_bucket``, ``x_sum`` and ``x_count``; a labelled family exists (its
    ``# TYPE`` line) before its first sample."""
    declared: set[str] = set()
    sampled: set[str] = set()
    for family in text_string_to_metric_families(exposition):
        if family.type == "counter":
            declared |= {f"{family.name}_total", f"{family.name}_created"}
        elif family.type == "histogram":
            declared |= {f"{family.name}_{suffix}" for suffix in ("bucket", "sum", "count")}
            declared.add(f"{family.name}_created")
        else:
            declared.add(family.name)
        sampled |= {sample.name for sample in family.samples}
    return declared | sampled, sampled


def live_metric_names(service: LiveService) -> tuple[set[str], set[str]]:
    """:func:`exported_metric_names` of the service's ``/metrics``."""
    answer = httpx.get(f"{service.url}/metrics", timeout=HTTP_TIMEOUT_S)
    assert answer.status_code == 200, answer.text
    return exported_metric_names(answer.text)


# -- PromQL ---------------------------------------------------------------------------------------

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_GROUPINGS = re.compile(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
# An identifier not inside a number (1e3, 15m): what follows tells a call from a series.
_IDENTIFIER = re.compile(r"(?<![\w.$])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "offset", "bool", "by", "without", "on", "ignoring", "atan2"}
    | {"group_left", "group_right", "inf", "nan"}
)
_FAMILY_SUFFIX = re.compile(r"_(total|bucket|sum|count)$")
_LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(?P<selector>.+?)\s*,\s*(?P<label>\w+)\s*\)\s*$")


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects: identifiers left once string literals,
    label matchers, ranges and grouping label lists are removed, less function calls (an
    identifier followed by ``(``) and keywords."""
    text = _STRINGS.sub('""', expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    text = _GROUPINGS.sub(" ", text)
    return {
        match.group(1)
        for match in _IDENTIFIER.finditer(text)
        if match.group(2) is None and match.group(1).lower() not in _KEYWORDS
    }


def label_values_query(query: str) -> tuple[str, str]:
    """(series selector, label) of a Grafana ``label_values(selector, label)`` variable query."""
    match = _LABEL_VALUES.match(query)
    assert match is not None, f"not a label_values(selector, label) query: {query!r}"
    return match.group("selector"), match.group("label")


def metric_family(series: str) -> str:
    """The family a series name belongs to: ``x`` for ``x_total``, ``x_bucket``, ``x_sum`` and
    ``x_count``, the name itself else."""
    return _FAMILY_SUFFIX.sub("", series)


# -- The dashboard and the alert rules ------------------------------------------------------------


def dashboard() -> dict[str, Any]:
    """The parsed Crisscross dashboard (``deploy/grafana/dashboards/crisscross.json``)."""
    document: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return document


def query_panels() -> list[dict[str, Any]]:
    """The panels that query (rows left out), nested rows' panels included."""
    found: list[dict[str, Any]] = []
    for panel in dashboard()["panels"]:
        if panel["type"] == "row":
            found += panel.get("panels", [])
        else:
            found.append(panel)
    return found


def variable_queries() -> dict[str, str]:
    """Each templating variable's ``label_values(...)`` query, by name."""
    queries = {}
    for variable in dashboard()["templating"]["list"]:
        query = variable["query"]
        queries[variable["name"]] = query["query"] if isinstance(query, dict) else query
    return queries


def panel_exprs() -> list[tuple[str, str]]:
    """(panel title, expr) of every panel target."""
    return [
        (panel["title"], target["expr"]) for panel in query_panels() for target in panel["targets"]
    ]


def panel_metric_names() -> set[str]:
    """The series names the panels query."""
    return set().union(*(metric_names(expr) for _, expr in panel_exprs()))


def dashboard_metric_names() -> set[str]:
    """The series names the panels and the variables query."""
    names = panel_metric_names()
    for query in variable_queries().values():
        selector, _ = label_values_query(query)
        names |= metric_names(selector)
    return names


def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of ``deploy/prometheus/alerts.yml``."""
    document = load_yaml(ALERT_RULES)
    return [rule for group in document["groups"] for rule in group["rules"] if "alert" in rule]


# -- A real Prometheus ----------------------------------------------------------------------------


@dataclass(frozen=True)
class LivePrometheus:
    """A running Prometheus: its base URL, process and log file."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def api(self, path: str, **params: str) -> Any:
        """The ``data`` of a successful ``/api/v1/<path>`` answer; fails on any other."""
        answer = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=HTTP_TIMEOUT_S)
        document = answer.json()
        assert answer.status_code == 200, f"{path} {params}: {answer.text}"
        assert document["status"] == "success", f"{path} {params}: {answer.text}"
        return document["data"]

    def query(self, expr: str) -> list[dict[str, Any]]:
        """The instant vector ``expr`` evaluates to now."""
        data = self.api("query", query=expr)
        assert data["resultType"] == "vector", f"{expr}: {data}"
        result: list[dict[str, Any]] = data["result"]
        return result


def live_config(
    service: LiveService, rule_files: list[Path], also: Sequence[LiveService] = ()
) -> dict[str, Any]:
    """The shipped ``prometheus.yml`` with only what a test must change: the target (the live
    service's host:port instead of ``crisscross:8000``, and those of ``also``: the other members
    of a replica set), the rule files (the repository's, not the ``/etc/prometheus`` of the
    container) and the intervals (1 s; the timeout may not exceed the interval). Job name,
    metrics path, scheme and everything else stay as shipped."""
    config: dict[str, Any] = copy.deepcopy(load_yaml(PROMETHEUS_CONFIG))
    for setting in ("scrape_interval", "scrape_timeout", "evaluation_interval"):
        config["global"][setting] = TEST_INTERVAL
    config["rule_files"] = [str(path) for path in rule_files]
    (job,) = [job for job in config["scrape_configs"] if job["job_name"] == SCRAPE_JOB]
    (static,) = job["static_configs"]
    static["targets"] = [urlsplit(member.url).netloc for member in (service, *also)]
    return config


def start_prometheus(binary: str, config: dict[str, Any], root: Path) -> LivePrometheus:
    """Start ``prometheus`` with ``config`` on a free loopback port, its data under ``root``, and
    wait until it is ready."""
    root.mkdir(parents=True, exist_ok=True)
    config_path = root / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    port = free_port()
    command = [
        binary,
        f"--config.file={config_path}",
        f"--storage.tsdb.path={root / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log_path = root / "prometheus.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    prometheus = LivePrometheus(f"http://127.0.0.1:{port}", process, log_path)

    def ready() -> bool | None:
        if process.poll() is not None:
            pytest.fail(f"prometheus exited with {process.returncode}:\n{prometheus.log()}")
        try:
            return httpx.get(f"{prometheus.url}/-/ready", timeout=2.0).status_code == 200 or None
        except httpx.TransportError:
            return None

    try:
        wait_for(ready, "prometheus to be ready", PROMETHEUS_READY_TIMEOUT_S)
    except BaseException:
        stop_prometheus(prometheus)
        raise
    return prometheus


def stop_prometheus(prometheus: LivePrometheus) -> None:
    """SIGTERM, then wait (SIGKILL after 30 s)."""
    if prometheus.process.poll() is None:
        prometheus.process.send_signal(signal.SIGTERM)
    try:
        prometheus.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        prometheus.process.kill()
        prometheus.process.wait()


def wait_for_target_up(prometheus: LivePrometheus) -> dict[str, Any]:
    """The scrape target of the ``crisscross`` job once a scrape of it has succeeded."""

    def up() -> dict[str, Any] | None:
        targets = prometheus.api("targets", state="active")["activeTargets"]
        ours = [target for target in targets if target["labels"]["job"] == SCRAPE_JOB]
        assert len(ours) <= 1, targets  # none until service discovery has run once
        return ours[0] if ours and ours[0]["health"] == "up" else None

    return wait_for(up, f"the {SCRAPE_JOB} target to be up")


def wait_for_targets_up(prometheus: LivePrometheus, count: int) -> list[dict[str, Any]]:
    """The ``count`` scrape targets of the ``crisscross`` job once a scrape of each has
    succeeded."""

    def up() -> list[dict[str, Any]] | None:
        targets = prometheus.api("targets", state="active")["activeTargets"]
        ours = [target for target in targets if target["labels"]["job"] == SCRAPE_JOB]
        assert len(ours) <= count, targets
        healthy = [target for target in ours if target["health"] == "up"]
        return healthy if len(healthy) == count else None

    return wait_for(up, f"{count} {SCRAPE_JOB} targets to be up")


def wait_for_rates(prometheus: LivePrometheus, count: int) -> None:
    """Wait until each of the ``count`` targets has been scraped twice since it had its first
    requests: a rate over what happened before the first scrape has its two samples."""

    def rated() -> bool | None:
        found = prometheus.query("count by (instance) (rate(crisscross_requests_total[1m]))")
        return len(found) == count or None

    wait_for(rated, f"rates of {count} targets")


def wait_for_result(prometheus: LivePrometheus, expr: str) -> list[dict[str, Any]]:
    """The result of ``expr`` once it is not empty (the series it needs have been scraped)."""
    return wait_for(lambda: prometheus.query(expr) or None, f"{expr} to return data")
