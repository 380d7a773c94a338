"""Where each data file lies under a data folder."""

from __future__ import annotations

from pathlib import Path

from formats.layout import (
    bison_path,
    captions_path,
    cxc_path,
    default_bison_path,
    images_dir,
    manifest_path,
)


def test_paths_under_a_data_folder() -> None:
    data = Path("data")
    assert captions_path(data, "val") == Path("data/coco-karpathy-captions/captions_val.csv")
    assert images_dir(data, "test") == Path("data/images/test")
    assert cxc_path(data, "sits", "val") == Path("data/cxc/sits_val.csv")
    assert bison_path(data, "val") == Path("data/bison/bison_val.csv")
    assert manifest_path(data) == Path("data/manifest.json")


def test_default_bison_file_prefers_the_split_file(tmp_path: Path) -> None:
    assert default_bison_path(tmp_path, "val") is None
    (tmp_path / "bison").mkdir()
    shared = tmp_path / "bison" / "bison_shared.csv"
    shared.write_text("", encoding="utf-8")
    assert default_bison_path(tmp_path, "val") == shared
    own = bison_path(tmp_path, "val")
    own.write_text("", encoding="utf-8")
    assert default_bison_path(tmp_path, "val") == own
