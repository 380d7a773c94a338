"""The request limits: the upload and JSON image limits that follow from the others."""

from __future__ import annotations

import pytest

from service.settings import MIB, UPLOAD_OVERHEAD_BYTES, Settings


def test_upload_body_limit_follows_max_image_bytes_unless_set() -> None:
    assert Settings().upload_body_limit == 10 * MIB + UPLOAD_OVERHEAD_BYTES
    assert Settings(max_image_bytes=MIB).upload_body_limit == MIB + UPLOAD_OVERHEAD_BYTES
    assert Settings(max_upload_body_bytes=64 * MIB).upload_body_limit == 64 * MIB


def test_json_images_are_capped_by_the_json_body_limit() -> None:
    # The JSON routes keep max_body_bytes; bigger images are documented to use the upload route.
    settings = Settings()
    assert settings.max_json_image_bytes == (MIB - 1024) * 3 // 4
    assert Settings(max_image_bytes=1000).max_json_image_bytes == 1000
    assert "/v1/search/upload" in (Settings.model_fields["max_body_bytes"].description or "")


def test_image_limits_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_MAX_IMAGE_BYTES", "2000000")
    monkeypatch.setenv("CRISSCROSS_MAX_IMAGE_PIXELS", "1000000")
    monkeypatch.setenv("CRISSCROSS_MAX_IMAGES_PER_REQUEST", "8")
    settings = Settings()
    assert (
        settings.max_image_bytes,
        settings.max_image_pixels,
        settings.max_images_per_request,
    ) == (2_000_000, 1_000_000, 8)
