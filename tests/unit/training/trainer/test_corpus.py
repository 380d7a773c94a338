"""Reading one split for training: through the shared captions reader, with training's own
requirements (a non-empty split, each image's captions contiguous) on top."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from encoders.variant import ImageTower
from formats.errors import FormatError
from formats.karpathy import CAPTION_COLUMNS
from formats.layout import captions_path, images_dir
from training.trainer.corpus import (
    CorpusError,
    data_fingerprint,
    load_images,
    load_pixels,
    read_split,
)

HEADER = ",".join(CAPTION_COLUMNS)


def _row(sentid: int, image: int, text: str) -> str:
    return f"{sentid},k:{sentid},{image},img{image}.png,{image},{sentid % 10},{text},{text}"


def _write(data: Path, *rows: str, split: str = "train") -> Path:
    path = captions_path(data, split)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([HEADER, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_split_groups_captions_by_image(tmp_path: Path) -> None:
    _write(tmp_path, _row(10, 1, "a"), _row(11, 1, "b"), _row(20, 2, "c"))
    split = read_split(tmp_path, "train")
    assert split.filenames == ("img1.png", "img2.png")
    assert split.captions == (("a", "b"), ("c",))
    assert split.caption_keys == ("k:10", "k:11", "k:20")
    assert split.caption_image.tolist() == [0, 0, 1]
    assert split.caption_offsets().tolist() == [0, 2, 3]
    head = split.head(1)
    assert (head.filenames, head.caption_texts) == (("img1.png",), ("a", "b"))


def test_captions_of_an_image_must_be_contiguous(tmp_path: Path) -> None:
    _write(tmp_path, _row(10, 1, "a"), _row(20, 2, "c"), _row(11, 1, "b"))
    with pytest.raises(CorpusError, match=r"captions of img1\.png are not contiguous"):
        read_split(tmp_path, "train")


def test_a_missing_or_empty_split_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no captions file for split 'val'"):
        read_split(tmp_path, "val")
    _write(tmp_path)
    with pytest.raises(CorpusError, match="holds no captions"):
        read_split(tmp_path, "train")


def test_a_malformed_row_is_a_format_error_with_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, _row(10, 1, "a"), "11,k:11,1,../img1.png,1,1,b,b")
    with pytest.raises(FormatError, match="not a plain name") as error:
        read_split(tmp_path, "train")
    assert (error.value.path, error.value.line) == (path, 3)


def test_images_decode_and_preprocess_as_serving_does(tmp_path: Path) -> None:
    folder = images_dir(tmp_path, "train")
    folder.mkdir(parents=True)
    Image.new("RGB", (20, 10), (255, 0, 0)).save(folder / "img1.png")
    assert load_images(tmp_path, "train", ["img1.png"])[0].size == (20, 10)
    tower = ImageTower(
        height=8, width=8, resize="exact", resize_to=8, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0)
    )
    pixels = load_pixels(tmp_path, "train", ["img1.png"], tower)
    assert pixels.shape == (1, 3, 8, 8)
    np.testing.assert_allclose(pixels[0, 0], 1.0)
    with pytest.raises(CorpusError, match="cannot read image"):
        load_images(tmp_path, "train", ["absent.png"])
    (folder / "bad.png").write_bytes(b"not an image")
    with pytest.raises(CorpusError, match="cannot decode image"):
        load_images(tmp_path, "train", ["bad.png"])


def test_the_data_is_named_by_content(tmp_path: Path) -> None:
    _write(tmp_path, _row(10, 1, "a"))
    by_captions = data_fingerprint(tmp_path, "train")
    assert by_captions.startswith("captions_train.csv sha256 ")
    (tmp_path / "manifest.json").write_text("{}", encoding="utf-8")
    assert data_fingerprint(tmp_path, "train").startswith("manifest.json sha256 ")
