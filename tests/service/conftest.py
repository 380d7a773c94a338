"""Fixtures of the service tests: fake encoders, small real bundles, ready TestClients."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from service.store import VariantEncoders
from tests.service.fakes import (
    CLIP_FINGERPRINT,
    CLIP_VARIANT,
    FAKE_VARIANT,
    PIXELS_FINGERPRINT,
    PIXELS_VARIANT,
    TEST_IMAGE_LIMITS,
    FakeImageEncoder,
    FakeTextEncoder,
    factory_by_name,
    fake_factory,
    write_fake_bundle,
    write_multimodal_bundles,
)

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


@dataclass
class Multimodal:
    """A ready client of the multimodal deployment (fakes.write_multimodal_bundles) and the
    fake encoders behind it, whose calls the tests inspect."""

    client: TestClient
    clip_text: FakeTextEncoder
    clip_image: FakeImageEncoder
    pixels_image: FakeImageEncoder
    bow_text: FakeTextEncoder
    settings: Settings

    def clear_calls(self) -> None:
        for encoder in (self.clip_text, self.clip_image, self.pixels_image, self.bow_text):
            encoder.calls.clear()


@pytest.fixture
def multimodal_settings(tmp_path: Path) -> Settings:
    root = tmp_path / "mm-bundles"
    write_multimodal_bundles(root)
    variants = tmp_path / "mm-variants"
    for name in (FAKE_VARIANT, CLIP_VARIANT, PIXELS_VARIANT):
        (variants / name).mkdir(parents=True)
    return Settings(
        bundles_root=root,
        variants_root=variants,
        default_variant=CLIP_VARIANT,
        **TEST_IMAGE_LIMITS,
    )


@contextmanager
def open_multimodal(settings: Settings) -> Iterator[Multimodal]:
    """Serve the multimodal deployment under ``settings`` with fresh fakes, loaded and ready;
    ``fake-clip``'s image tower reports CUDA first to tell the towers' providers apart."""
    clip_text = FakeTextEncoder(name=CLIP_VARIANT, fingerprint=CLIP_FINGERPRINT)
    clip_image = FakeImageEncoder(
        name=CLIP_VARIANT,
        fingerprint=CLIP_FINGERPRINT,
        providers=["CUDAExecutionProvider", "CPUExecutionProvider"],
        input_size=(224, 224),
    )
    pixels_image = FakeImageEncoder(name=PIXELS_VARIANT, fingerprint=PIXELS_FINGERPRINT)
    bow_text = FakeTextEncoder()
    factory = factory_by_name(
        {
            CLIP_VARIANT: VariantEncoders(text=clip_text, image=clip_image),
            PIXELS_VARIANT: VariantEncoders(image=pixels_image),
            FAKE_VARIANT: VariantEncoders(text=bow_text),
        }
    )
    with TestClient(create_app(settings, encoder_factory=factory)) as test_client:
        wait_ready(test_client)
        deployment = Multimodal(
            test_client, clip_text, clip_image, pixels_image, bow_text, settings
        )
        deployment.clear_calls()
        yield deployment


@pytest.fixture
def multimodal(multimodal_settings: Settings) -> Iterator[Multimodal]:
    """The multimodal deployment, loaded; ``fake-clip`` is the default variant."""
    with open_multimodal(multimodal_settings) as deployment:
        yield deployment
