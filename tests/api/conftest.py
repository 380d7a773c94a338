"""Fixtures of the API tests: small real bundles, fake encoders, ready TestClients."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import write_fake_bundle
from tests.fakes.fake_encoders import FAKE_VARIANT, FakeTextEncoder, fake_factory
from tests.fakes.service_app import (
    Multimodal,
    clear_service_env,
    multimodal_settings_at,
    multimodal_settings_under,
    open_multimodal,
    wait_ready,
)


@pytest.fixture(autouse=True)
def _no_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read CRISSCROSS_* variables; a developer's shell must not change test results."""
    clear_service_env(monkeypatch)


@pytest.fixture(scope="session")
def _fake_bundle_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fake captions bundle, written (embedded, indexed, hashed, fsynced) once a session."""
    root = tmp_path_factory.mktemp("template") / "bundles"
    write_fake_bundle(root)
    return root


@pytest.fixture
def bundles_root(tmp_path: Path, _fake_bundle_template: Path) -> Path:
    """A bundles root of this test's own holding the fake captions bundle (a copy: tests may
    add versions, move CURRENT or corrupt files)."""
    root = tmp_path / "bundles"
    shutil.copytree(_fake_bundle_template, root)
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
    """A TestClient whose lifespan has run and whose catalog is loaded."""
    app = create_app(settings, encoder_factory=fake_factory(encoder))
    with TestClient(app) as test_client:
        wait_ready(test_client)
        encoder.calls.clear()
        yield test_client


@pytest.fixture(scope="session")
def _multimodal_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The multimodal deployment's folders, written once a session."""
    root = tmp_path_factory.mktemp("mm-template")
    multimodal_settings_under(root)
    return root


@pytest.fixture
def multimodal_settings(tmp_path: Path, _multimodal_template: Path) -> Settings:
    """Settings of a copy of the multimodal deployment of this test's own."""
    shutil.copytree(_multimodal_template, tmp_path, dirs_exist_ok=True)
    return multimodal_settings_at(tmp_path)


@pytest.fixture
def multimodal(multimodal_settings: Settings) -> Iterator[Multimodal]:
    """The multimodal deployment, loaded; ``fake-clip`` is the default variant."""
    with open_multimodal(multimodal_settings) as deployment:
        yield deployment
