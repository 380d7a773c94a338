"""Settings: contract defaults, environment overrides, refusal of bad values and paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from service.__main__ import settings_document
from service.settings import MIB, UPLOAD_OVERHEAD_BYTES, Settings, SettingsError
from tests.conftest import REPO_ROOT
from tests.fakes.fake_bundles import write_fake_bundle


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
    assert settings.max_embed_inputs == 256
    assert settings.max_exclude == 1000
    assert settings.max_request_id_chars == 64
    assert settings.graceful_shutdown_s > 0
    assert settings.max_image_bytes == 10 * MIB
    assert settings.max_image_pixels == 40_000_000
    assert settings.max_images_per_request == 32
    assert settings.max_upload_body_bytes is None


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


def test_missing_bundles_root_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(bundles_root=tmp_path / "nowhere", variants_root=tmp_path)
    with pytest.raises(SettingsError, match=r"bundles_root .*nowhere.* is not a folder"):
        settings.check_serving_paths()


def test_bundles_root_without_bundles_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(bundles_root=tmp_path, variants_root=tmp_path)
    with pytest.raises(SettingsError, match="no bundle with a CURRENT pointer"):
        settings.check_serving_paths()


def test_named_bundle_must_exist(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    settings = Settings(
        bundles_root=tmp_path / "bundles", variants_root=tmp_path, bundles=["coco-captions", "nope"]
    )
    with pytest.raises(SettingsError, match=r"\['nope'\] have no CURRENT"):
        settings.check_serving_paths()


def test_missing_variants_root_is_a_clear_error(tmp_path: Path) -> None:
    write_fake_bundle(tmp_path / "bundles")
    settings = Settings(bundles_root=tmp_path / "bundles", variants_root=tmp_path / "none")
    with pytest.raises(SettingsError, match="variants_root"):
        settings.check_serving_paths()


def test_all_bundles_with_current_are_served_by_default(tmp_path: Path) -> None:
    root = tmp_path / "bundles"
    write_fake_bundle(root, "b-second")
    write_fake_bundle(root, "a-first")
    (root / "no-pointer").mkdir()
    settings = Settings(bundles_root=root, variants_root=tmp_path)
    assert [path.name for path in settings.bundle_dirs()] == ["a-first", "b-second"]
    assert [
        p.name for p in settings.model_copy(update={"bundles": ["b-second"]}).bundle_dirs()
    ] == ["b-second"]


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


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ("auto", "auto"),
        ("CUDA", "cuda"),
        (" tensorrt ", "tensorrt"),
        (
            "CUDAExecutionProvider, CPUExecutionProvider",
            ("CUDAExecutionProvider", "CPUExecutionProvider"),
        ),
        ("TensorrtExecutionProvider", ("TensorrtExecutionProvider",)),
    ],
)
def test_providers_take_a_keyword_or_a_forced_list_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, environment: str, expected: object
) -> None:
    monkeypatch.setenv("CRISSCROSS_PROVIDERS", environment)
    assert Settings().providers == expected


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ("gpu", "neither keywords"),
        ("CUDAExecutionProvider,cuda", "neither keywords"),
        ("CPUExecutionProvider,CPUExecutionProvider", "repeat"),
        (",", "must be one of"),
    ],
)
def test_bad_provider_settings_are_refused(
    monkeypatch: pytest.MonkeyPatch, environment: str, message: str
) -> None:
    monkeypatch.setenv("CRISSCROSS_PROVIDERS", environment)
    with pytest.raises(ValidationError, match=message):
        Settings()


def test_faiss_device_defaults_to_auto_and_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert Settings().faiss_device == "auto"
    monkeypatch.setenv("CRISSCROSS_FAISS_DEVICE", "cpu")
    assert Settings().faiss_device == "cpu"
    monkeypatch.setenv("CRISSCROSS_FAISS_DEVICE", "tpu")
    with pytest.raises(ValidationError, match="faiss_device"):
        Settings()


def test_committed_settings_doc_matches_the_settings_class() -> None:
    committed = (REPO_ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    assert committed == settings_document(), (
        "docs/settings.md is stale: .venv/bin/python -m service settings-doc --out docs/settings.md"
    )
    for name in Settings.model_fields:
        assert f"| `{name}` |" in committed
