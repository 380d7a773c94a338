"""The load settings: the request deadline in seconds, and the batching left unset to follow
the device."""

from __future__ import annotations

from service.settings import Settings


def test_the_deadline_in_seconds() -> None:
    assert Settings(request_timeout_ms=2500).request_timeout_s == 2.5


def test_batching_follows_the_device_unless_set() -> None:
    settings = Settings()
    assert settings.max_batch_size is None
    assert settings.max_wait_ms is None
    assert settings.overload_concurrent_requests is None
    assert Settings(max_batch_size=8).max_batch_size == 8
