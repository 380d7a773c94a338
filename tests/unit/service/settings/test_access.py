"""The access settings: keys and origins, and the combinations refused as unsafe."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from service.settings import Settings

GOOD_KEY = "k" * 16


def test_serving_settings_have_safe_defaults() -> None:
    settings = Settings()
    # Unset: chosen by where each encoder runs (tests/unit/service/test_batch_defaults.py).
    assert settings.max_batch_size is None
    assert settings.max_wait_ms is None
    assert settings.overload_concurrent_requests is None
    assert settings.intra_op_threads == 1
    assert settings.max_queue_depth == 64
    assert settings.request_timeout_ms == 10_000
    assert settings.overload_retry_after_s == 1
    assert settings.faiss_threads == 1
    assert settings.shutdown_delay_s == 0.0
    assert settings.read_keys == []
    assert settings.admin_keys == []
    assert settings.admin_reload is False
    assert settings.allow_unauthenticated_public is False
    assert settings.cors_origins == []
    assert settings.cors_allow_credentials is False
    assert settings.request_timeout_s == 10.0


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"host": "localhost"}, id="localhost"),
        pytest.param({"host": "127.0.0.2"}, id="127/8"),
        pytest.param({"host": "::1"}, id="IPv6 loopback"),
        pytest.param({"host": "0.0.0.0", "read_keys": [GOOD_KEY]}, id="public with keys"),
        pytest.param(
            {"host": "0.0.0.0", "allow_unauthenticated_public": True}, id="public when told so"
        ),
        pytest.param({"admin_reload": True, "admin_keys": [GOOD_KEY]}, id="reload with keys"),
        pytest.param({"cors_origins": ["*"]}, id="CORS * without credentials"),
        pytest.param(
            {"cors_origins": ["https://a.example:8443"], "cors_allow_credentials": True},
            id="CORS credentials for a listed origin",
        ),
    ],
)
def test_safe_combinations_are_accepted(overrides: dict[str, Any]) -> None:
    Settings(**overrides)


def test_keys_and_origins_come_comma_separated_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CRISSCROSS_READ_KEYS", f" {GOOD_KEY}a, {GOOD_KEY}b ,")
    monkeypatch.setenv("CRISSCROSS_ADMIN_KEYS", f"{GOOD_KEY}c")
    monkeypatch.setenv("CRISSCROSS_CORS_ORIGINS", "https://a.example,http://localhost:3000")
    monkeypatch.setenv("CRISSCROSS_HOST", "0.0.0.0")
    settings = Settings()
    assert [key.get_secret_value() for key in settings.read_keys] == [
        f"{GOOD_KEY}a",
        f"{GOOD_KEY}b",
    ]
    assert [key.get_secret_value() for key in settings.admin_keys] == [f"{GOOD_KEY}c"]
    assert settings.cors_origins == ["https://a.example", "http://localhost:3000"]


def test_a_refused_key_is_never_quoted_in_the_error() -> None:
    secret = "tooshort-secret"
    with pytest.raises(ValidationError) as refused:
        Settings(read_keys=["long-enough-secret-0001", secret])
    text = str(refused.value)
    assert "key #1 is shorter than 16" in text
    assert secret not in text
    assert "long-enough-secret-0001" not in text


def test_unsafe_combinations_say_how_to_fix_them() -> None:
    with pytest.raises(ValidationError, match="CRISSCROSS_READ_KEYS"):
        Settings(host="0.0.0.0")
    with pytest.raises(ValidationError, match="CRISSCROSS_ADMIN_KEYS"):
        Settings(admin_reload=True)
    with pytest.raises(ValidationError, match="list the origins"):
        Settings(cors_origins=["*"], cors_allow_credentials=True)
