"""The serving settings: bundles and variants found or refused with a clear error, providers
and the faiss device."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from service.settings import Settings, SettingsError
from tests.fakes.fake_bundles import write_fake_bundle


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
