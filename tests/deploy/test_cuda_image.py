"""The CUDA image (``deploy/docker/Dockerfile.cuda``), which cannot be built here (its public base
cannot be pulled, there is no GPU), checked statically: its runtime stage is the CPU image's
(user, entrypoint, command, health check, writable path, settings), it installs exactly the GPU
pins of ``pyproject.toml``, its base's Python is one the project supports, and pip resolves
the project with the ``gpu`` extra for that Python and platform from the package registry.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.deploy.conftest import DEPLOY_ROOT

CPU_FILE = DEPLOY_ROOT / "docker" / "Dockerfile"
CUDA_FILE = DEPLOY_ROOT / "docker" / "Dockerfile.cuda"
PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# The Python of each Ubuntu release an NVIDIA CUDA base image is built on.
UBUNTU_PYTHON = {"ubuntu22.04": "3.10", "ubuntu24.04": "3.12"}
# manylinux tags a glibc 2.39 (Ubuntu 24.04) system installs, newest first.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(39, 16, -1)] + [
    "manylinux2014_x86_64",
    "manylinux2010_x86_64",
    "manylinux1_x86_64",
    "linux_x86_64",
]
_INSTRUCTION = re.compile(r"^(?P<op>[A-Z]+)\s+(?P<args>.*)$")


def stages(path: Path) -> dict[str, list[tuple[str, str]]]:
    """Each ``FROM ... AS name`` stage's instructions, continuation lines joined; the
    instructions before the first FROM are under ""."""
    text = re.sub(r"\\\n\s*", " ", path.read_text(encoding="utf-8"))
    result: dict[str, list[tuple[str, str]]] = {"": []}
    current = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _INSTRUCTION.match(line)
        assert match is not None, line
        op, args = match["op"], match["args"]
        if op == "FROM":
            current = args.split(" AS ")[-1].strip()
            result[current] = []
        result[current].append((op, args))
    return result


def runtime(path: Path, stage: str) -> dict[str, list[str]]:
    by_op: dict[str, list[str]] = {}
    for op, args in stages(path)[stage]:
        by_op.setdefault(op, []).append(args)
    return by_op


def env_of(instructions: list[str]) -> dict[str, str]:
    pairs = re.findall(r"([A-Z_]+)=(\S+)", " ".join(instructions))
    return dict(pairs)


def test_the_cuda_runtime_stage_is_the_cpu_one() -> None:
    cpu, cuda = runtime(CPU_FILE, "cpu"), runtime(CUDA_FILE, "cuda")
    for op in ("USER", "ENTRYPOINT", "CMD", "HEALTHCHECK", "EXPOSE", "VOLUME", "WORKDIR"):
        assert cuda[op] == cpu[op], op
    cpu_env, cuda_env = env_of(cpu["ENV"]), env_of(cuda["ENV"])
    assert {name: cuda_env.get(name) for name in cpu_env} == cpu_env
    assert cuda_env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert any("useradd --system --uid 10001" in run for run in cuda["RUN"])


def test_the_cuda_image_installs_the_gpu_pins_of_the_project() -> None:
    pins = {re.sub(r"\[.*\]", "", pin) for pin in PROJECT["optional-dependencies"]["gpu"]}
    build = " ".join(args for op, args in stages(CUDA_FILE)["build"] if op == "RUN")
    reinstalled = set(re.findall(r'--no-deps ((?:"[^"]+"\s*)+)', build)[0].replace('"', "").split())
    assert reinstalled == pins
    assert '".[gpu]"' in build


def _base() -> str:
    (arg,) = [args for op, args in stages(CUDA_FILE)[""] if op == "ARG"]
    return arg.split("=", 1)[1]


def test_the_base_is_an_nvidia_cuda_image_with_a_supported_python() -> None:
    base = _base()
    assert base.startswith("docker.io/nvidia/cuda:")
    (release,) = [tag for tag in UBUNTU_PYTHON if base.endswith(tag)]
    python = UBUNTU_PYTHON[release]
    low, high = re.findall(r"3\.(\d+)", PROJECT["requires-python"])
    assert int(low) <= int(python.split(".")[1]) < int(high)


def test_the_project_with_the_gpu_extra_resolves_for_the_cuda_image(tmp_path: Path) -> None:
    (release,) = [tag for tag in UBUNTU_PYTHON if _base().endswith(tag)]
    requirements = [*PROJECT["dependencies"], *PROJECT["optional-dependencies"]["gpu"]]
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--ignore-installed"]
    command += ["--only-binary=:all:", "--implementation", "cp"]
    command += ["--python-version", UBUNTU_PYTHON[release], "--target", str(tmp_path / "t")]
    for platform in PLATFORMS:
        command += ["--platform", platform]
    command += ["--report", str(report), *requirements]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    if done.returncode != 0:
        pytest.fail(f"pip could not resolve the CUDA image's packages:\n{done.stderr[-3000:]}")
    installed = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text(encoding="utf-8"))["install"]
    }
    for pin in PROJECT["optional-dependencies"]["gpu"]:
        name, version = re.sub(r"\[.*\]", "", pin).split("==")
        assert installed[name] == version
    assert "torch" not in installed
    assert any(name.startswith("nvidia-cudnn") for name in installed)
