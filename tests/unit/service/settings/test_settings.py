"""The composed settings: contract defaults, environment overrides, refusal of bad values and of
combinations across groups, and the settings document."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from service.__main__ import settings_document
from service.settings import MIB, Settings
from tests.conftest import REPO_ROOT


def test_defaults_match_the_contract() -> None:
    settings = Settings()
    assert (settings.host, settings.port) == ("127.0.0.1", 8000)
    assert settings.bundles_root == Path("artifacts/bundles")
    assert settings.variants_root == Path("artifacts/variants")
    assert settings.bundles is None
    assert settings.default_variant is None
    assert settings.providers == "auto"
    assert settings.max_k == 1000
    assert settings.max_text_chars == 2000
    assert settings.max_body_bytes == 1 * MIB
    assert settings.max_score_pairs == 1024
    assert settings.max_embed_inputs == 2048
    assert settings.max_exclude == 1000
    assert settings.max_request_id_chars == 64
    assert settings.graceful_shutdown_s > 0
    assert settings.max_image_bytes == 10 * MIB
    assert settings.max_image_pixels == 40_000_000
    assert settings.max_images_per_request == 32
    assert settings.max_upload_body_bytes is None


def test_every_setting_documents_itself() -> None:
    undocumented = [name for name, f in Settings.model_fields.items() if not f.description]
    assert undocumented == []


def test_environment_overrides_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_MAX_K", "50")
    monkeypatch.setenv("CRISSCROSS_PORT", "9001")
    monkeypatch.setenv("CRISSCROSS_BUNDLES", "coco-captions, scenes")
    monkeypatch.setenv("CRISSCROSS_LOG_LEVEL", "DEBUG")
    settings = Settings()
    assert settings.max_k == 50
    assert settings.port == 9001
    assert settings.bundles == ["coco-captions", "scenes"]
    assert settings.log_level == "debug"


def test_keyword_arguments_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CRISSCROSS_MAX_K", "50")
    assert Settings(max_k=7).max_k == 7


def test_unrelated_crisscross_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    # tests/conftest.py reads CRISSCROSS_DATA_DIR; it is not a service setting.
    monkeypatch.setenv("CRISSCROSS_DATA_DIR", "/somewhere")
    assert Settings().max_k == 1000


@pytest.mark.parametrize(
    "overrides",
    [
        pytest.param({"max_k": 0}, id="max_k<1"),
        pytest.param({"port": 0}, id="port=0"),
        pytest.param({"port": 65536}, id="port>65535"),
        pytest.param({"max_text_chars": 0}, id="max_text_chars=0"),
        pytest.param({"max_score_pairs": 0}, id="max_score_pairs=0"),
        pytest.param({"max_embed_inputs": 0}, id="max_embed_inputs=0"),
        pytest.param({"max_exclude": -1}, id="max_exclude<0"),
        pytest.param({"max_body_bytes": 2000}, id="body cannot hold one max text"),
        pytest.param({"max_text_chars": 10 * MIB}, id="max text over body limit"),
        pytest.param({"graceful_shutdown_s": 0}, id="graceful_shutdown_s=0"),
        pytest.param({"max_image_bytes": 0}, id="max_image_bytes=0"),
        pytest.param({"max_image_pixels": 0}, id="max_image_pixels=0"),
        pytest.param({"max_images_per_request": 0}, id="max_images_per_request=0"),
        pytest.param({"max_upload_body_bytes": 10 * MIB}, id="upload body cannot hold one image"),
        pytest.param(
            {"max_image_bytes": 100 * MIB, "max_upload_body_bytes": 64 * MIB},
            id="image limit over upload body limit",
        ),
        pytest.param({"intra_op_threads": -1}, id="threads<0"),
        pytest.param({"providers": "gpu"}, id="unknown provider"),
        pytest.param({"log_level": "loud"}, id="unknown log level"),
        pytest.param({"bundles": []}, id="empty bundle list"),
        pytest.param({"bundles": ["../etc"]}, id="bundle name with a path"),
        pytest.param({"bundles": ["a", "a"]}, id="repeated bundle name"),
        pytest.param({"max_k": "many"}, id="max_k not a number"),
        pytest.param({"no_such_setting": 1}, id="unknown setting"),
        pytest.param({"max_batch_size": 0}, id="max_batch_size=0"),
        pytest.param({"max_wait_ms": -1}, id="max_wait_ms<0"),
        pytest.param({"overload_concurrent_requests": 0}, id="overload_concurrent_requests=0"),
        pytest.param({"max_wait_ms": 5000}, id="max_wait_ms>1s"),
        pytest.param({"max_queue_depth": 0}, id="max_queue_depth=0"),
        pytest.param({"request_timeout_ms": 0}, id="request_timeout_ms=0"),
        pytest.param({"overload_retry_after_s": 0}, id="overload_retry_after_s=0"),
        pytest.param({"faiss_threads": -1}, id="faiss_threads<0"),
        pytest.param({"shutdown_delay_s": -1}, id="shutdown_delay_s<0"),
        pytest.param({"host": "0.0.0.0"}, id="public host without read keys"),
        pytest.param({"host": "::"}, id="public IPv6 host without read keys"),
        pytest.param({"host": "api.example.com"}, id="public name without read keys"),
        pytest.param({"admin_reload": True}, id="reload without admin keys"),
        pytest.param(
            {"cors_origins": ["*"], "cors_allow_credentials": True}, id="CORS * with credentials"
        ),
        pytest.param({"cors_origins": ["https://a.example/path"]}, id="CORS origin with a path"),
        pytest.param({"cors_origins": ["a.example"]}, id="CORS origin without a scheme"),
        pytest.param({"read_keys": ["short"]}, id="short read key"),
        pytest.param({"admin_keys": ["x" * 15]}, id="admin key of 15 characters"),
        pytest.param({"read_keys": ["has space in it 0123"]}, id="key with a space"),
        pytest.param({"read_keys": ["ünïcödé-key-0123456789"]}, id="non-ASCII key"),
    ],
)
def test_bad_settings_are_refused(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Settings(**overrides)


def test_committed_settings_doc_matches_the_settings_class() -> None:
    committed = (REPO_ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert committed == settings_document(), (
        "docs/settings.md is stale: .venv/bin/python -m service settings-doc --out docs/settings.md"
    )
    for name in Settings.model_fields:
        assert f"| `{name}` |" in committed
