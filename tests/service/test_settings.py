"""Settings: contract defaults, environment overrides, refusal of bad values and paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from service.settings import MIB, UPLOAD_OVERHEAD_BYTES, Settings, SettingsError
from tests.service.fakes import write_fake_bundle


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
