"""``deploy/compose``: the files fit together (every mounted path exists, Prometheus scrapes the
service by its compose name and port, Grafana's data source is that Prometheus, the GPU file
overrides what it should), every ``CRISSCROSS_*`` variable is a real setting, and the service's
part runs: its environment, user, read-only root and tmpfs, applied to the CPU image, serve and
stop cleanly within the compose stop grace period.

The replicated layout (``compose.replicas.yaml``): three members with the single service's
image, user, read-only root, tmpfs and grace period, each with its own collections volume
(handed to the members' user by a one-shot), the same keys and set size, URLs by compose name,
the followers following the leader, each member running the image's own command as the single
service does; Prometheus scrapes the three (``prometheus.replicas.yml``). The members' settings,
run as three real processes (their compose URLs replaced by loopback ones), form a replica set:
the followers follow, a write with acks=majority is answered and read on a follower, a write
sent to a follower is refused 421 naming the leader. The leader is started there with
``CRISSCROSS_FOLLOW`` naming its own URL (as every pod of the Kubernetes StatefulSet is given
pod 0's) and leads: the server itself reads its own URL as "lead".

Not run here: ``docker compose up`` itself (no compose engine, and the Prometheus and Grafana
images cannot be pulled; the scrape config runs in a real Prometheus in ``test_prometheus.py``),
the GPU file (no GPU), and the replicated members in containers (compose's network names, the
volume ownership one-shot).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from service.settings import Settings
from tests.deploy.conftest import DEPLOY_ROOT
from tests.deploy.containers import VERSION, build_cpu_image, data_volumes, running
from tests.deploy.replicas import (
    ADMIN,
    ADMIN_KEY,
    replication,
    start_replica_set,
    stop_replica_set,
)
from tests.e2e.conftest import LiveService, free_port

COMPOSE = DEPLOY_ROOT / "compose"
READ_KEY = "compose-test-read-key-0123456789"
MEMBERS = ("leader", "follower-1", "follower-2")
CONTAINER_PORT = 8000
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


# -- The replicated layout ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def replicas() -> dict[str, Any]:
    return interpolate(
        load("compose.replicas.yaml"),
        {"CRISSCROSS_READ_KEYS": READ_KEY, "CRISSCROSS_ADMIN_KEYS": ADMIN_KEY},
    )


def member_settings(environment: dict[str, Any]) -> Settings:
    """The Settings a member's environment builds in the image (host and port are the image's;
    the data paths are the image's too)."""
    fields = {
        name.removeprefix("CRISSCROSS_").lower(): value for name, value in environment.items()
    }
    return Settings(
        host="0.0.0.0",
        port=CONTAINER_PORT,
        bundles_root=Path("/"),
        variants_root=Path("/"),
        providers="cpu",
        **fields,
    )


def test_the_replicated_layout_needs_both_kinds_of_keys() -> None:
    for missing in ("CRISSCROSS_READ_KEYS", "CRISSCROSS_ADMIN_KEYS"):
        env = {"CRISSCROSS_READ_KEYS": READ_KEY, "CRISSCROSS_ADMIN_KEYS": ADMIN_KEY}
        del env[missing]
        with pytest.raises(pytest.fail.Exception, match=missing):
            interpolate(load("compose.replicas.yaml"), env)


def test_the_members_are_the_single_service_with_a_volume_each(
    replicas: dict[str, Any], compose: dict[str, Any]
) -> None:
    services = replicas["services"]
    single = compose["services"]["crisscross"]
    assert {"leader", "follower-1", "follower-2"} <= set(services)
    host_ports = []
    for name in MEMBERS:
        member = services[name]
        for key in ("image", "user", "read_only", "tmpfs", "stop_grace_period", "restart"):
            assert member[key] == single[key], (name, key)
        # The image's entrypoint and command (crisscross-serve serve), as the single service.
        for key in ("entrypoint", "command"):
            assert key not in member, (name, key)
            assert key not in single, key
        (port,) = member["ports"]
        host, container = port.split(":")
        assert int(container) == CONTAINER_PORT
        host_ports.append(host)
        assert member["depends_on"] == {
            "collections-owner": {"condition": "service_completed_successfully"}
        }
    assert len(set(host_ports)) == len(MEMBERS)

    # Each member's collections_dir is a named volume of its own, handed to the members' user.
    owner = services["collections-owner"]
    assert owner["image"] == single["image"]
    chown, owned_by, *owned_paths = owner["entrypoint"]
    assert chown == "chown"
    assert owned_by == single["user"]
    owned = dict(volume.split(":") for volume in owner["volumes"])
    volumes = []
    for name in MEMBERS:
        member = services[name]
        collections_dir = member["environment"]["CRISSCROSS_COLLECTIONS_DIR"]
        # Its collections volume is the only thing mounted.
        (mount,) = member["volumes"]
        volume, mount_path = mount.split(":")
        assert mount_path == collections_dir, name
        assert volume in replicas["volumes"]
        assert owned[volume] in owned_paths
        volumes.append(volume)
    assert len(set(volumes)) == len(MEMBERS)
    assert sorted(owned_paths) == sorted(owned.values())


def test_the_members_settings_make_one_replica_set(replicas: dict[str, Any]) -> None:
    services = replicas["services"]
    environments = {name: services[name]["environment"] for name in MEMBERS}
    for name, environment in environments.items():
        unknown = [
            variable
            for variable in environment
            if not variable.startswith("CRISSCROSS_")
            or variable.removeprefix("CRISSCROSS_").lower() not in Settings.model_fields
        ]
        assert unknown == [], name
    settings = {name: member_settings(environment) for name, environment in environments.items()}
    leader = settings["leader"]
    assert leader.follow is None
    for name, member in settings.items():
        # Reached by its compose name on the compose network.
        assert member.own_url == f"http://{name}:{CONTAINER_PORT}"
        assert member.replica_set_size == len(MEMBERS)
        assert member.read_keys == leader.read_keys
        assert member.admin_keys == leader.admin_keys
        assert member.admin_keys, "replication calls carry the first admin key"
        assert member.collections_dir == leader.collections_dir
        assert member.default_acks == "majority"
        if name != "leader":
            assert member.follow == leader.own_url


def test_prometheus_scrapes_every_member(replicas: dict[str, Any]) -> None:
    prometheus = replicas["services"]["prometheus"]
    (config_mount,) = [v for v in prometheus["volumes"] if v.endswith(":/etc/prometheus:ro")]
    folder = _mount_source(config_mount)
    assert folder == DEPLOY_ROOT / "prometheus"
    (config_flag,) = [flag for flag in prometheus["command"] if flag.startswith("--config.file=")]
    config_path = Path(config_flag.removeprefix("--config.file="))
    config = yaml.safe_load(
        (folder / config_path.relative_to("/etc/prometheus")).read_text(encoding="utf-8")
    )
    for rule_file in config["rule_files"]:
        assert (folder / Path(rule_file).relative_to("/etc/prometheus")).is_file()
    (job,) = config["scrape_configs"]
    assert job["job_name"] == "crisscross", "the alert rules and the dashboard filter on it"
    (static,) = job["static_configs"]
    assert sorted(static["targets"]) == sorted(f"{name}:{CONTAINER_PORT}" for name in MEMBERS)
    grafana = replicas["services"]["grafana"]
    assert grafana["volumes"][:2] == load("compose.yaml")["services"]["grafana"]["volumes"][:2]


@pytest.fixture(scope="module")
def replica_processes(
    replicas: dict[str, Any],
    scenes_roots: tuple[Path, Path],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[list[LiveService]]:
    """The three members' settings as three processes on loopback: each member's environment as
    compose gives it, less what only the image and its network decide (the advertised compose
    URL, which defaults to the process's own; the followers' leader, replaced by the leader's
    real URL; the collections folder, one per process here). The leader is also given the
    followers' ``CRISSCROSS_FOLLOW``, its own URL: it is started with that naming its own real
    URL, which it advertises."""
    variants_root, bundles_root = scenes_roots
    services_of = replicas["services"]
    first_leader = services_of["follower-1"]["environment"]["CRISSCROSS_FOLLOW"]
    assert first_leader == services_of["leader"]["environment"]["CRISSCROSS_ADVERTISE_URL"]
    environments = []
    for name in MEMBERS:
        environment = dict(services_of[name]["environment"])
        environment.pop("CRISSCROSS_ADVERTISE_URL")
        environment["CRISSCROSS_FOLLOW"] = first_leader
        environment["CRISSCROSS_ADMIN_KEYS"] = ADMIN_KEY  # the first is the follow key
        environments.append(environment)
    services = start_replica_set(
        variants_root,
        bundles_root,
        tmp_path_factory.mktemp("compose-replicas"),
        len(MEMBERS),
        environments,
    )
    yield services
    stop_replica_set(services)


def test_a_member_told_to_follow_itself_leads(replica_processes: list[LiveService]) -> None:
    """The leader was started with ``CRISSCROSS_FOLLOW`` equal to its own advertised URL: it
    takes that as "lead" (term 0, no leader of its own) and its followers follow it."""
    leader, *followers = replica_processes
    status = replication(leader)
    assert status["url"] == leader.url
    assert status["role"] == "leader"
    assert status["term"] == 0
    followed_by = status["followers"]
    assert isinstance(followed_by, list)
    assert sorted(str(follower["url"]) for follower in followed_by) == sorted(
        follower.url for follower in followers
    )


def test_the_members_settings_run_as_a_replica_set(replica_processes: list[LiveService]) -> None:
    leader, *followers = replica_processes
    status = replication(leader)
    assert status["role"] == "leader"
    assert status["replica_set_size"] == len(MEMBERS)
    members = status["members"]
    assert isinstance(members, list)
    assert sorted(members) == sorted(service.url for service in replica_processes)
    headers = {**ADMIN, "content-type": "application/json"}
    created = httpx.post(
        f"{leader.url}/v1/collections",
        json={"name": "docs", "dim": 4},
        headers=headers,
        timeout=10.0,
    )
    assert created.status_code == 201, created.text
    # acks=majority (the layout's default): answered once a follower holds it too.
    written = httpx.post(
        f"{leader.url}/v1/collections/docs/items",
        json={"items": [{"id": "a", "vector": [1.0, 0.0, 0.0, 0.0]}]},
        headers={**headers, "Idempotency-Key": "compose-replicas-1"},
        timeout=10.0,
    )
    assert written.status_code == 200, written.text
    seq = written.json()["seq"]
    for follower in followers:
        assert replication(follower)["role"] == "follower"
        got = httpx.post(
            f"{follower.url}/v1/collections/docs/items/get",
            json={"ids": ["a"]},
            headers={**headers, "X-Min-Seq": str(seq)},
            timeout=10.0,
        )
        assert got.status_code == 200, got.text
        assert [item["id"] for item in got.json()["items"]] == ["a"]
        refused = httpx.post(
            f"{follower.url}/v1/collections/docs/items",
            json={"items": [{"id": "b", "vector": [0.0, 1.0, 0.0, 0.0]}]},
            headers=headers,
            timeout=10.0,
        )
        assert refused.status_code == 421, refused.text
        assert refused.json()["error"]["code"] == "not_leader"
        assert refused.headers["x-leader"] == leader.url
