"""Ready in-process apps over the fake encoders and bundles: the readiness wait, the
environment every service test starts from, and the multimodal deployment (three variants, one
of them two-tower) that the image and catalog tests drive."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.engine.collection.catalog import VariantEncoders
from service.http.app import create_app
from service.settings import Settings
from tests.fakes.fake_bundles import (
    CLIP_FINGERPRINT,
    CLIP_VARIANT,
    PIXELS_FINGERPRINT,
    PIXELS_VARIANT,
    write_multimodal_bundles,
)
from tests.fakes.fake_encoders import (
    FAKE_VARIANT,
    FakeImageEncoder,
    FakeTextEncoder,
    factory_by_name,
)

READY_TIMEOUT_S = 10.0

# Small image limits keep the hostile inputs of the tests small.
TEST_IMAGE_LIMITS: Mapping[str, int] = {
    "max_image_bytes": 100_000,
    "max_image_pixels": 250_000,
    "max_images_per_request": 4,
}


def clear_service_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset every ``CRISSCROSS_*`` variable Settings reads: a developer's shell must not change
    test results (each service test folder's conftest calls this for every test)."""
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


@dataclass
class Multimodal:
    """A ready client of the multimodal deployment (``write_multimodal_bundles``) and the fake
    encoders behind it, whose calls the tests inspect."""

    client: TestClient
    clip_text: FakeTextEncoder
    clip_image: FakeImageEncoder
    pixels_image: FakeImageEncoder
    bow_text: FakeTextEncoder
    settings: Settings

    def clear_calls(self) -> None:
        for encoder in (self.clip_text, self.clip_image, self.pixels_image, self.bow_text):
            encoder.calls.clear()


def multimodal_settings_under(root: Path) -> Settings:
    """Write the multimodal deployment under ``root`` (bundles and variant folders) and return
    the settings serving it (:func:`multimodal_settings_at`)."""
    write_multimodal_bundles(root / "mm-bundles")
    for name in (FAKE_VARIANT, CLIP_VARIANT, PIXELS_VARIANT):
        (root / "mm-variants" / name).mkdir(parents=True)
    return multimodal_settings_at(root)


def multimodal_settings_at(root: Path) -> Settings:
    """Settings serving the multimodal deployment already written under ``root``: ``fake-clip``
    the default variant, with :data:`TEST_IMAGE_LIMITS`."""
    return Settings(
        bundles_root=root / "mm-bundles",
        variants_root=root / "mm-variants",
        default_variant=CLIP_VARIANT,
        max_image_bytes=TEST_IMAGE_LIMITS["max_image_bytes"],
        max_image_pixels=TEST_IMAGE_LIMITS["max_image_pixels"],
        max_images_per_request=TEST_IMAGE_LIMITS["max_images_per_request"],
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
