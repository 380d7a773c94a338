"""Containers of the project's images, run with podman the way these machines allow
(``deploy/scripts/podman.sh``: runc, cgroupfs, host network), for the deploy tests."""

from __future__ import annotations

import subprocess
import time
import tomllib
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from tests.conftest import REPO_ROOT, require_tools
from tests.deploy.conftest import DEPLOY_ROOT

PODMAN = DEPLOY_ROOT / "scripts" / "podman.sh"
BUILD = DEPLOY_ROOT / "scripts" / "build-image.sh"
VERSION = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
    "version"
]
CPU_IMAGE = f"localhost/crisscross:{VERSION}-cpu"
READY_TIMEOUT_S = 120.0


def podman(
    *args: str, check: bool = True, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PODMAN), *args], capture_output=True, text=True, timeout=timeout, check=check
    )


def build_cpu_image() -> str:
    """The CPU image, built from this checkout (podman reuses unchanged layers); prints the
    build's last line (time and size) into the test log."""
    require_tools("podman", "runc", "debootstrap")
    built = subprocess.run(
        [str(BUILD), "cpu", CPU_IMAGE],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-4000:] + built.stderr[-4000:]
    print(built.stdout.strip().splitlines()[-1])
    return CPU_IMAGE


class Container:
    """A detached container serving on ``url`` (the host network)."""

    def __init__(self, name: str, url: str) -> None:
        self.name = name
        self.url = url

    def logs(self) -> str:
        done = podman("logs", self.name, check=False)
        return done.stdout + done.stderr

    def wait_ready(self, headers: Mapping[str, str] | None = None) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            state = podman("inspect", self.name, "--format", "{{.State.Status}}").stdout.strip()
            assert state == "running", f"container {state}:\n{self.logs()}"
            try:
                if httpx.get(f"{self.url}/readyz", headers=headers, timeout=2.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        pytest.fail(f"not ready after {READY_TIMEOUT_S} s:\n{self.logs()}")

    def stop(self, signal: str, timeout_s: float) -> str:
        """Send ``signal``, wait for the exit; its status (as podman prints it)."""
        podman("kill", "--signal", signal, self.name)
        return podman("wait", self.name, timeout=timeout_s).stdout.strip()


@contextmanager
def running(
    image: str,
    port: int,
    env: Mapping[str, str],
    *,
    volumes: Sequence[str] = (),
    options: Sequence[str] = (),
) -> Iterator[Container]:
    """``image`` in a detached container listening on ``port`` (``CRISSCROSS_PORT``), removed
    afterwards; ``options`` are more ``podman run`` flags."""
    container = Container(f"crisscross-test-{uuid.uuid4().hex[:8]}", f"http://127.0.0.1:{port}")
    args = ["run", "--detach", "--name", container.name, "--network=host", *options]
    for volume in volumes:
        args += ["--volume", volume]
    for name, value in {**env, "CRISSCROSS_PORT": str(port)}.items():
        args += ["--env", f"{name}={value}"]
    podman(*args, image)
    try:
        yield container
    finally:
        podman("rm", "--force", "--time", "0", container.name, check=False)


def data_volumes(roots: tuple[Path, Path]) -> list[str]:
    """Read-only mounts of (variants_root, bundles_root) where the image looks for them."""
    variants_root, bundles_root = roots
    return [f"{bundles_root}:/data/bundles:ro", f"{variants_root}:/data/variants:ro"]
