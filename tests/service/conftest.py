"""Fixtures of the service tests: fake encoder, small real bundles, a ready TestClient."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.service.fakes import FAKE_VARIANT, FakeTextEncoder, fake_factory, write_fake_bundle

READY_TIMEOUT_S = 10.0


@pytest.fixture(autouse=True)
def _no_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read CRISSCROSS_* variables; a developer's shell must not change test results."""
    for name in Settings.model_fields:
        monkeypatch.delenv(f"CRISSCROSS_{name.upper()}", raising=False)


def wait_ready(client: TestClient, timeout_s: float = READY_TIMEOUT_S) -> None:
    """Poll /readyz until 200; fail with the last answer after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = client.get("/readyz")
        if response.status_code == 200:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"service not ready after {timeout_s} s: {response.text}")
        time.sleep(0.01)


@pytest.fixture
def bundles_root(tmp_path: Path) -> Path:
    root = tmp_path / "bundles"
    write_fake_bundle(root)
    return root


@pytest.fixture
def variants_root(tmp_path: Path) -> Path:
    root = tmp_path / "variants"
    (root / FAKE_VARIANT).mkdir(parents=True)
    return root


@pytest.fixture
def settings(bundles_root: Path, variants_root: Path) -> Settings:
    return Settings(bundles_root=bundles_root, variants_root=variants_root)


@pytest.fixture
def encoder() -> FakeTextEncoder:
    return FakeTextEncoder()


@pytest.fixture
def client(settings: Settings, encoder: FakeTextEncoder) -> Iterator[TestClient]:
    """A TestClient whose lifespan has run and whose store is loaded."""
    app = create_app(settings, encoder_factory=fake_factory(encoder))
    with TestClient(app) as test_client:
        wait_ready(test_client)
        encoder.calls.clear()
        yield test_client
