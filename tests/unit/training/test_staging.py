"""staged_directory publishes a whole folder or nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.staging import staged_directory


def leftovers(parent: Path) -> list[str]:
    return sorted(path.name for path in parent.iterdir() if path.name.startswith("."))


def test_publishes_the_folder_on_success(tmp_path: Path) -> None:
    target = tmp_path / "nested" / "variant"
    with staged_directory(target) as staging:
        assert staging.parent == target.parent
        assert not target.exists()
        (staging / "file.txt").write_text("content", encoding="utf-8")
    assert (target / "file.txt").read_text(encoding="utf-8") == "content"
    assert target.stat().st_mode & 0o777 == 0o755
    assert leftovers(target.parent) == []


def test_a_failure_leaves_nothing_behind(tmp_path: Path) -> None:
    target = tmp_path / "variant"

    def write_half_then_fail() -> None:
        with staged_directory(target) as staging:
            (staging / "half.txt").write_text("half", encoding="utf-8")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        write_half_then_fail()
    assert not target.exists()
    assert leftovers(tmp_path) == []


def test_an_existing_target_is_kept_unless_overwrite(tmp_path: Path) -> None:
    target = tmp_path / "variant"
    target.mkdir()
    (target / "old.txt").write_text("old", encoding="utf-8")
    with pytest.raises(FileExistsError, match="--force"), staged_directory(target):
        pytest.fail("must not be reached")
    assert (target / "old.txt").exists()
    assert leftovers(tmp_path) == []


def test_overwrite_replaces_the_old_folder_whole(tmp_path: Path) -> None:
    target = tmp_path / "variant"
    target.mkdir()
    (target / "old.txt").write_text("old", encoding="utf-8")
    with staged_directory(target, overwrite=True) as staging:
        (staging / "new.txt").write_text("new", encoding="utf-8")
    assert sorted(path.name for path in target.iterdir()) == ["new.txt"]
    assert leftovers(tmp_path) == []


def test_a_failed_overwrite_keeps_the_old_folder(tmp_path: Path) -> None:
    target = tmp_path / "variant"
    target.mkdir()
    (target / "old.txt").write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), staged_directory(target, overwrite=True):
        raise RuntimeError("export failed")
    assert sorted(path.name for path in target.iterdir()) == ["old.txt"]
    assert leftovers(tmp_path) == []
