"""The CPU image (``deploy/docker/Dockerfile``, target ``cpu``), built here with podman and run
for real: a bundle mounted read-only, the root filesystem read-only, a non-root user; the
service answers a text search and an image upload, its health check passes, and SIGTERM (through
tini, and with two workers through the supervisor) drains it to a clean exit.

The build uses the local Debian base (``deploy/scripts/local-base.sh``): no registry is reachable
here. Neither the public base nor the CUDA image can be built here (see the README, "Deploy").
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from tests.deploy.containers import Container, build_cpu_image, data_volumes, podman, running
from tests.e2e.conftest import free_port

UID = "10001"
# Listening on every interface, the service refuses to start without keys (or an explicit
# CRISSCROSS_ALLOW_UNAUTHENTICATED_PUBLIC=true): the container is run with a read key.
READ_KEY = "deploy-test-read-key-0123456789"
KEYED = {"Authorization": f"Bearer {READ_KEY}"}
# The drain bound (graceful_shutdown_s) and a margin.
GRACEFUL_S = 10
STOP_TIMEOUT_S = GRACEFUL_S + 20
# Packages the serving image must not carry (export, benchmark and Parquet extras; httpx is a
# serving dependency since a follower calls its leader with it).
NOT_SERVING = ("torch", "transformers", "scipy", "matplotlib", "pyarrow")


@pytest.fixture(scope="module")
def image() -> str:
    return build_cpu_image()


@pytest.fixture(params=[1, 2], ids=["1-worker", "2-workers"])
def container(
    request: pytest.FixtureRequest, image: str, scenes_roots: tuple[Path, Path]
) -> Iterator[tuple[Container, int]]:
    """(the image serving the scenes bundle, its workers): data volumes read-only, root
    filesystem read-only with a tmpfs on /tmp (the one writable path the image declares)."""
    env = {
        "CRISSCROSS_PROVIDERS": "cpu",
        "CRISSCROSS_WORKERS": str(request.param),
        "CRISSCROSS_GRACEFUL_SHUTDOWN_S": str(GRACEFUL_S),
        "CRISSCROSS_READ_KEYS": READ_KEY,
    }
    options = ["--read-only", "--tmpfs", "/tmp:rw,size=64m,mode=1777"]
    volumes = data_volumes(scenes_roots)
    with running(image, free_port(), env, volumes=volumes, options=options) as served:
        yield served, request.param


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 32), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_the_image_carries_the_serving_dependencies_only(image: str) -> None:
    probe = "import importlib.util as u, json; print(json.dumps([m for m in %r if u.find_spec(m)]))"
    done = podman(
        "run", "--rm", "--network=host", "--entrypoint", "python3", image,
        "-c", probe % (NOT_SERVING,),
    )  # fmt: skip
    assert json.loads(done.stdout) == []
    (inspected,) = json.loads(podman("image", "inspect", image).stdout)
    config = inspected["Config"]
    assert config["User"] == f"{UID}:{UID}"
    assert config["Entrypoint"] == ["tini", "--"]
    assert "/tmp" in config["Volumes"]
    assert inspected["Healthcheck"]["Test"][0] == "CMD"  # kept: built in docker format


def test_the_container_serves_read_only_as_non_root_and_drains_on_sigterm(
    container: tuple[Container, int],
) -> None:
    served, workers = container
    served.wait_ready()
    # Non-root, and nothing outside /tmp can be written.
    assert podman("exec", served.name, "id", "-u").stdout.strip() == UID
    written = podman("exec", served.name, "touch", "/opt/crisscross/x", check=False)
    assert written.returncode != 0
    assert "Read-only file system" in written.stderr
    assert podman("exec", served.name, "touch", "/tmp/x").returncode == 0
    # The image's own health check (what compose and `podman healthcheck` run) passes.
    assert podman("healthcheck", "run", served.name, check=False).returncode == 0

    with httpx.Client(base_url=served.url, headers=KEYED, timeout=30.0) as client:
        text = client.post(
            "/v1/search", json={"query": {"text": "a red circle"}, "collection": "images", "k": 3}
        )
        assert text.status_code == 200, text.text
        assert len(text.json()["results"]) == 3
        upload = client.post(
            "/v1/search/upload",
            files={"file": ("query.png", _png((200, 30, 30)), "image/png")},
            data={"collection": "captions", "k": "3"},
        )
        assert upload.status_code == 200, upload.text
        assert len(upload.json()["results"]) == 3
        assert client.get("/metrics").status_code == 200
    refused = httpx.post(f"{served.url}/v1/search", json={"query": {"text": "x"}, "k": 1})
    assert refused.status_code == 401

    status = served.stop("TERM", STOP_TIMEOUT_S)
    logs = served.logs()
    assert status == "0", logs
    # tini passed the signal on: each server process drained (with two workers, through the
    # supervisor, which forwards it to each).
    assert logs.count("Shutting down") == workers, logs
    if workers > 1:
        assert "supervisor: SIGTERM, stopping the workers" in logs, logs
        assert "supervisor: stopped (status 0)" in logs, logs
