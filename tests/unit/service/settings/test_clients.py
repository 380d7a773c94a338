"""The client limits: deadlines and sizes within their bounds, from the environment."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from service.settings import Settings


def test_defaults_a_deployment_would_use() -> None:
    settings = Settings()
    assert (settings.head_timeout_s, settings.body_timeout_s) == (10.0, 60.0)
    assert (settings.max_header_bytes, settings.max_header_count) == (16384, 100)
    assert (settings.max_connections, settings.keep_alive_timeout_s) == (2048, 5)


def test_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_HEAD_TIMEOUT_S", "2.5")
    monkeypatch.setenv("CRISSCROSS_MAX_CONNECTIONS", "64")
    settings = Settings()
    assert (settings.head_timeout_s, settings.max_connections) == (2.5, 64)


@pytest.mark.parametrize(
    "overrides",
    [
        {"head_timeout_s": 0},
        {"body_timeout_s": -1},
        {"max_header_bytes": 100},
        {"max_header_count": 2},
        {"max_connections": 1},
        {"keep_alive_timeout_s": 0},
        {"max_request_id_chars": 4},
    ],
)
def test_limits_out_of_bounds_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(**overrides)
