"""Durable publication: the file's bytes, then the rename, then its folder, each fsynced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from storage import durability
from storage.durability import fsync_path, replace_durably


def test_fsync_takes_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    fsync_path(tmp_path / "f")
    fsync_path(tmp_path)
    with pytest.raises(FileNotFoundError):
        fsync_path(tmp_path / "missing")


def test_a_replace_syncs_the_source_then_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = tmp_path / ".new.tmp", tmp_path / "CURRENT"
    source.write_text("v2\n")
    target.write_text("v1\n")
    synced: list[tuple[str, bool]] = []
    real = durability.fsync_path

    def recording(path: Path) -> None:
        synced.append((path.name, target.read_text() == "v2\n"))
        real(path)

    monkeypatch.setattr(durability, "fsync_path", recording)
    replace_durably(source, target)
    # The source's bytes before the rename; the folder after it.
    assert synced == [(".new.tmp", False), (tmp_path.name, True)]
    assert target.read_text() == "v2\n"
    assert not source.exists()
    assert os.listdir(tmp_path) == ["CURRENT"]
