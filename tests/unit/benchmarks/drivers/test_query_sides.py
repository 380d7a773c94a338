"""How query and pair sides are written: text, item references, uploads read when sent."""

from __future__ import annotations

import base64

from benchmarks.drivers.query_sides import (
    ImageFile,
    ImageSides,
    item_ref,
    resolve_side,
    text_query,
    upload_file,
)
from tests.fakes.tiny_data import TinyDataset


def test_text_and_item_sides() -> None:
    assert text_query("a dog") == {"text": "a dog"}
    assert item_ref("images", "x.jpg") == {"item": {"collection": "images", "id": "x.jpg"}}
    assert resolve_side({"text": "t"}) == {"text": "t"}


def test_an_upload_is_the_base64_of_the_file(tiny: TinyDataset) -> None:
    name = tiny.filenames[0]
    side = upload_file(tiny.images_dir / name)
    assert base64.b64decode(side["image"]) == tiny.image_bytes[name]
    assert ImageFile(tiny.images_dir / name, 10).encoded_size == 16


def test_image_sides_prefer_items_then_uploads(tiny: TinyDataset) -> None:
    served, other = tiny.filenames[0], "COCO_val2014_000000005000.jpg"
    sides = ImageSides("images", {served}, tiny.images_dir, can_upload=True)
    assert sides.side(served) == item_ref("images", served)
    upload = sides.side(other)
    assert isinstance(upload, ImageFile)
    assert upload.size == len(tiny.image_bytes[other])
    assert upload.encoded_size == len(base64.b64encode(tiny.image_bytes[other]))
    assert base64.b64decode(resolve_side(upload)["image"]) == tiny.image_bytes[other]
    assert sides.side("COCO_val2014_000000006000.jpg") is None  # no such file
    no_tower = ImageSides("images", {served}, tiny.images_dir, can_upload=False)
    assert no_tower.side(other) is None
    assert ImageSides("images", (), None, can_upload=True).side(other) is None
