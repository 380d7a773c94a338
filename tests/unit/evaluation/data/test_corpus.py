"""One split's data: required captions, optional rating and BISON files, the images folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluation.data.corpus import DATASETS, default_images_dir, load_cxc_data
from formats.cxc import RatingKind
from tests.fakes.tiny_data import TinyDataset


def test_a_split_s_files_are_all_read(tiny: TinyDataset) -> None:
    data = load_cxc_data(tiny.data_dir, tiny.split)
    assert data.captions == tiny.captions
    assert [image.filename for image in data.images] == tiny.filenames
    assert data.ratings[RatingKind.STS] == tiny.sts
    assert data.ratings[RatingKind.SIS] == tiny.sis
    assert data.ratings[RatingKind.SITS] == tiny.sits
    assert data.bison == tiny.bison
    assert data.bison_file == tiny.data_dir / "bison" / "bison_val.csv"
    assert data.missing == {}
    assert data.image_namer()(1000) == tiny.filenames[0]


def test_missing_optional_files_are_named_not_fatal(tiny: TinyDataset) -> None:
    (tiny.data_dir / "cxc" / "sis_val.csv").unlink()
    (tiny.data_dir / "bison" / "bison_val.csv").unlink()
    data = load_cxc_data(tiny.data_dir, tiny.split)
    assert RatingKind.SIS not in data.ratings
    assert data.bison is None
    assert data.missing == {
        "sis": tiny.data_dir / "cxc" / "sis_val.csv",
        "bison": tiny.data_dir / "bison" / "bison_val.csv",
    }
    only = load_cxc_data(tiny.data_dir, tiny.split, kinds=(RatingKind.STS,), with_bison=False)
    assert set(only.ratings) == {RatingKind.STS}
    assert only.missing == {}


def test_refusals(tiny: TinyDataset, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="dataset must be one of"):
        load_cxc_data(tiny.data_dir, tiny.split, dataset="flickr")
    with pytest.raises(FileNotFoundError, match="BISON file"):
        load_cxc_data(tiny.data_dir, tiny.split, bison_file=tmp_path / "nope.csv")
    with pytest.raises(FileNotFoundError):
        load_cxc_data(tmp_path, "val")
    assert DATASETS == ("coco-karpathy", "scenes")


def test_the_default_images_folder_is_used_only_when_it_exists(tiny: TinyDataset) -> None:
    assert default_images_dir(tiny.data_dir, "val") == tiny.images_dir
    assert default_images_dir(tiny.data_dir, "test") is None
