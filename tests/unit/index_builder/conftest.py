"""A tiny Karpathy-format corpus (captions CSV + PNGs) for the index_builder tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image

from formats.karpathy import CaptionRecord, write_captions
from formats.layout import captions_path, images_dir

IMAGES = 3
CAPTIONS_PER_IMAGE = 2


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """``<data>/coco-karpathy-captions/captions_val.csv`` (3 images x 2 captions, one ``raw``
    with a newline) and ``<data>/images/val/*.png``."""
    data = tmp_path / "data"
    folder = images_dir(data, "val")
    folder.mkdir(parents=True)
    records = []
    for image in range(IMAGES):
        filename = f"img_{image:012d}.png"
        Image.new("RGB", (12, 10), (40 * image, 100, 200)).save(folder / filename)
        for caption in range(CAPTIONS_PER_IMAGE):
            sentid = image * 10 + caption
            text = f"a dog number {image} caption {caption}"
            records.append(
                CaptionRecord(
                    sentid=sentid,
                    key=f"tiny:sentid:{sentid}",
                    image_id=image,
                    filename=filename,
                    image_index=image,
                    caption_index=caption,
                    text=text,
                    raw=text + ("\n" if caption == 0 else ""),
                    row=len(records),
                )
            )
    write_captions(captions_path(data, "val"), records)
    return data
