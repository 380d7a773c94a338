"""A real uvicorn process serving a bundle built by the real exported MiniLM from real captions."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from encoders.text_encoder import OnnxTextEncoder
from formats.karpathy import CaptionRecord, read_captions
from index_builder.__main__ import main as index_main
from scenes.generate import GenerationConfig, generate_scenes
from tests.conftest import REPO_ROOT
from tests.unit.index_builder.captions_bundle import build_captions_bundle

E2E_CAPTIONS = 2_000
SCENES_MODEL = REPO_ROOT / "models" / "scenes-dual-encoder"
READY_TIMEOUT_S = 120.0
# What each server process logs once it serves (service/http/app.py).
WORKER_READY_LINE = "ready: serving "
SHUTDOWN_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class LiveService:
    """A running service: its base URL, process and log file."""

    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def real_captions(data_dir: Path) -> list[CaptionRecord]:
    """The first 2,000 Karpathy val captions (400 images, 5 captions each)."""
    return read_captions(data_dir / "coco-karpathy-captions" / "captions_val.csv")[:E2E_CAPTIONS]


@pytest.fixture(scope="session")
def served_roots(
    tmp_path_factory: pytest.TempPathFactory,
    minilm_variant_dir: Path,
    real_captions: list[CaptionRecord],
    data_dir: Path,
) -> tuple[Path, Path]:
    """(variants_root, bundles_root) holding the exported MiniLM and a real-captions bundle."""
    root = tmp_path_factory.mktemp("served")
    variants_root = root / "variants"
    variants_root.mkdir()
    encoder = OnnxTextEncoder(minilm_variant_dir, providers="cpu")
    (variants_root / encoder.name).symlink_to(minilm_variant_dir.resolve())
    bundles_root = root / "bundles"
    source = data_dir / "coco-karpathy-captions" / "captions_val.csv"
    build_captions_bundle(
        encoder, real_captions, source=source, bundles_root=bundles_root, name="coco-captions"
    )
    return variants_root, bundles_root


def build_scenes_roots(root: Path, scenes: int = 12) -> tuple[Path, Path]:
    """(variants_root, bundles_root) under ``root``: the committed two-tower scenes model and a
    bundle ``scenes`` of ``scenes`` generated scenes (captions and pixels) it embedded."""
    corpus = root / "scenes-corpus"
    generate_scenes(
        GenerationConfig(
            out=corpus,
            seed=3,
            sizes={"train": 0, "val": scenes, "test": 0},
            workers=1,
            judgment_splits=("val",),
            progress=False,
        )
    )
    variants_root, bundles_root = root / "variants", root / "bundles"
    variants_root.mkdir()
    variant_dir = variants_root / SCENES_MODEL.name
    shutil.copytree(SCENES_MODEL, variant_dir)
    build = ["build", "--variant", str(variant_dir), "--name", "scenes"]
    build += ["--captions", str(corpus / "coco-karpathy-captions" / "captions_val.csv")]
    build += ["--images-dir", str(corpus / "images" / "val"), "--bundles-root", str(bundles_root)]
    assert index_main([*build, "--providers", "cpu", "--no-progress"]) == 0
    return variants_root, bundles_root


def start_service(
    variants_root: Path,
    bundles_root: Path,
    log_path: Path,
    extra_env: Mapping[str, str] | None = None,
) -> LiveService:
    """Start ``python -m service serve`` on a free loopback port and wait until it is ready;
    ``extra_env`` adds or overrides ``CRISSCROSS_*`` settings."""
    port = free_port()
    env = {
        **os.environ,
        "CRISSCROSS_VARIANTS_ROOT": str(variants_root),
        "CRISSCROSS_BUNDLES_ROOT": str(bundles_root),
        "CRISSCROSS_PROVIDERS": "cpu",
        "CRISSCROSS_GRACEFUL_SHUTDOWN_S": "10",
        # One process unless a test asks for a layout: the same on a machine of any size.
        "CRISSCROSS_WORKERS": "1",
        **(extra_env or {}),
    }
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "service", "serve", "--host", "127.0.0.1", "--port", str(port)],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    service = LiveService(f"http://127.0.0.1:{port}", process, log_path)
    # With several workers /readyz answers for whichever took the connection: the others may
    # still be loading (and would then load whatever CURRENT names by the time they read it), so
    # every worker's "ready" log line is awaited too.
    workers = int(env["CRISSCROSS_WORKERS"])
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"service exited with {process.returncode}:\n{service.log()}")
        try:
            ready = httpx.get(f"{service.url}/readyz", timeout=2.0).status_code == 200
        except httpx.TransportError:
            ready = False
        if ready and (workers == 1 or service.log().count(WORKER_READY_LINE) >= workers):
            return service
        time.sleep(0.2)
    stop_service(service)
    pytest.fail(f"service not ready after {READY_TIMEOUT_S} s:\n{service.log()}")


def stop_service(service: LiveService) -> int:
    """SIGTERM, then wait; returns the exit code (kills and fails on a hang)."""
    if service.process.poll() is None:
        service.process.send_signal(signal.SIGTERM)
    try:
        return service.process.wait(timeout=SHUTDOWN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        service.process.kill()
        service.process.wait()
        pytest.fail(f"service ignored SIGTERM for {SHUTDOWN_TIMEOUT_S} s:\n{service.log()}")


@pytest.fixture(scope="module")
def live_service(
    served_roots: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveService]:
    """A uvicorn process on a free loopback port, stopped with SIGTERM afterwards."""
    variants_root, bundles_root = served_roots
    log_path = tmp_path_factory.mktemp("service-log") / "service.log"
    service = start_service(variants_root, bundles_root, log_path)
    yield service
    assert stop_service(service) == 0, service.log()


@pytest.fixture
def private_roots(served_roots: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    """(variants_root, bundles_root) with this test's own copy of the served bundles: a test
    that writes versions, moves CURRENT or corrupts files disturbs no other test's service."""
    variants_root, bundles_root = served_roots
    copy = tmp_path / "bundles"
    shutil.copytree(bundles_root, copy)
    return variants_root, copy
