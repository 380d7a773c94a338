"""``deploy/compose``: the files fit together (every mounted path exists, Prometheus scrapes the
service by its compose name and port, Grafana's data source is that Prometheus, the GPU file
overrides what it should), every ``CRISSCROSS_*`` variable is a real setting, and the service's
part runs: its environment, user, read-only root and tmpfs, applied to the CPU image, serve and
stop cleanly within the compose stop grace period.

Not run here: ``docker compose up`` itself (no compose engine, and the Prometheus and Grafana
images cannot be pulled; the scrape config runs in a real Prometheus in ``test_prometheus.py``),
and the GPU file (no GPU).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.settings import Settings
from tests.deploy.conftest import DEPLOY_ROOT
from tests.deploy.containers import VERSION, build_cpu_image, data_volumes, running
from tests.e2e.conftest import free_port

COMPOSE = DEPLOY_ROOT / "compose"
READ_KEY = "compose-test-read-key-0123456789"
_INTERPOLATION = re.compile(r"\$\{(?P<name>[A-Z_]+)(?:(?P<op>:-|:\?)(?P<arg>[^}]*))?\}")


def interpolate(value: Any, env: Mapping[str, str]) -> Any:
    """``value`` with compose's ``${NAME}``, ``${NAME:-default}`` and ``${NAME:?error}``
    resolved from ``env`` (a missing required one fails the test with its message)."""
    if isinstance(value, dict):
        return {key: interpolate(item, env) for key, item in value.items()}
    if isinstance(value, list):
        return [interpolate(item, env) for item in value]
    if not isinstance(value, str):
        return value

    def resolve(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"], match["arg"]
        if env.get(name):
            return env[name]
        if op == ":?":
            pytest.fail(f"compose requires {name}: {arg}")
        return arg if op == ":-" else ""

    return _INTERPOLATION.sub(resolve, value)


def load(name: str) -> dict[str, Any]:
    document = yaml.safe_load((COMPOSE / name).read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return interpolate(load("compose.yaml"), {"CRISSCROSS_READ_KEYS": READ_KEY})


def _mount_source(volume: str) -> Path:
    return (COMPOSE / volume.split(":")[0]).resolve()


def test_every_setting_named_is_a_setting_and_the_values_are_accepted(
    compose: dict[str, Any],
) -> None:
    gpu = interpolate(load("compose.gpu.yaml"), {"CRISSCROSS_DATA": "/srv/crisscross"})
    for service in (compose["services"]["crisscross"], gpu["services"]["crisscross"]):
        env = service["environment"]
        unknown = [
            name
            for name in env
            if not name.startswith("CRISSCROSS_")
            or name.removeprefix("CRISSCROSS_").lower() not in Settings.model_fields
        ]
        assert unknown == []
    merged = {**compose["services"]["crisscross"]["environment"]}
    merged.update(gpu["services"]["crisscross"]["environment"])
    # The merged environment builds valid settings (paths aside: they are the image's).
    fields = {name.removeprefix("CRISSCROSS_").lower(): value for name, value in merged.items()}
    fields["providers"] = "cpu"  # cuda refuses without a GPU; its value is checked below
    settings = Settings(host="0.0.0.0", bundles_root=Path("/"), variants_root=Path("/"), **fields)
    assert settings.read_keys
    assert merged["CRISSCROSS_PROVIDERS"] == "cuda"
    grace = float(compose["services"]["crisscross"]["stop_grace_period"].removesuffix("s"))
    # The drain (delay + graceful shutdown + the encoder queues' drain, another graceful
    # shutdown at most) ends before compose kills the container.
    assert grace > settings.shutdown_delay_s + 2 * settings.graceful_shutdown_s


def test_the_images_are_the_ones_make_builds(compose: dict[str, Any]) -> None:
    assert compose["services"]["crisscross"]["image"] == f"localhost/crisscross:{VERSION}-demo"
    gpu = interpolate(load("compose.gpu.yaml"), {"CRISSCROSS_DATA": "/srv"})["services"]
    assert gpu["crisscross"]["image"] == f"localhost/crisscross:{VERSION}-cuda"
    devices = gpu["crisscross"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": 1, "capabilities": ["gpu"]}]


def test_prometheus_scrapes_the_service_by_its_compose_name(compose: dict[str, Any]) -> None:
    prometheus = compose["services"]["prometheus"]
    (config_mount,) = [v for v in prometheus["volumes"] if v.endswith(":/etc/prometheus:ro")]
    folder = _mount_source(config_mount)
    assert folder == DEPLOY_ROOT / "prometheus"
    config = yaml.safe_load((folder / "prometheus.yml").read_text(encoding="utf-8"))
    for rule_file in config["rule_files"]:
        assert (folder / Path(rule_file).relative_to("/etc/prometheus")).is_file()
    (port,) = compose["services"]["crisscross"]["ports"]
    container_port = port.split(":")[-1]
    targets = [
        target
        for job in config["scrape_configs"]
        for static in job.get("static_configs", [])
        for target in static["targets"]
    ]
    assert f"crisscross:{container_port}" in targets


def test_grafana_is_provisioned_from_the_shipped_files(compose: dict[str, Any]) -> None:
    grafana = compose["services"]["grafana"]
    mounts = {volume.split(":")[1]: _mount_source(volume) for volume in grafana["volumes"]}
    provisioning = mounts["/etc/grafana/provisioning"]
    dashboards = mounts["/var/lib/grafana/dashboards"]
    assert (provisioning / "datasources").is_dir()
    assert (provisioning / "dashboards").is_dir()
    assert (dashboards / "crisscross.json").is_file()
    home = grafana["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert home == "/var/lib/grafana/dashboards/crisscross.json"
    (source,) = yaml.safe_load(
        next((provisioning / "datasources").glob("*.yml")).read_text(encoding="utf-8")
    )["datasources"]
    assert source["url"] == "http://prometheus:9090"
    assert "9090:9090" in compose["services"]["prometheus"]["ports"]


@pytest.fixture
def compose_service(
    compose: dict[str, Any], scenes_roots: tuple[Path, Path]
) -> Iterator[tuple[Any, float]]:
    """The compose service's user, read-only root, tmpfs and environment on the CPU image
    (the demo image's data replaced by the test bundle mounted where it would be)."""
    service = compose["services"]["crisscross"]
    image = build_cpu_image()
    options = ["--user", service["user"], "--tmpfs", service["tmpfs"][0]]
    if service["read_only"]:
        options.append("--read-only")
    env = {**service["environment"], "CRISSCROSS_PROVIDERS": "cpu"}
    grace = float(service["stop_grace_period"].removesuffix("s"))
    volumes = data_volumes(scenes_roots)
    with running(image, free_port(), env, volumes=volumes, options=options) as container:
        yield container, grace


def test_the_compose_service_serves_and_stops_within_its_grace_period(
    compose_service: tuple[Any, float],
) -> None:
    container, grace = compose_service
    container.wait_ready()
    status = container.stop("TERM", grace)
    assert status == "0", container.logs()
