"""The fake corpus as real faiss bundles: captions embedded by the fake text encoder, images by
the fake image encoder (:mod:`tests.fakes.fake_encoders`), and the three bundles of the
multimodal deployment."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PIL import Image

from storage.writer import CollectionInput, write_bundle
from tests.fakes.fake_encoders import (
    COLOURS,
    FAKE_DIM,
    FAKE_FINGERPRINT,
    FAKE_VARIANT,
    embed_bag_of_words,
    embed_colour,
)

# Row order matters: duplicates sit at rows 1, 4 and 6 so the tie rule (row ascending) is
# visible, and two images share captions as in COCO.
CAPTIONS: list[str] = [
    "a dog sleeping on a red couch",
    "a man riding a wave on top of a surfboard",
    "two cats playing with a ball of yarn",
    "a bowl of fruit on a wooden table",
    "a man riding a wave on top of a surfboard",
    "a red double decker bus on a city street",
    "a man riding a wave on top of a surfboard",
    "a plate of pasta with tomato sauce",
    "a child flying a kite on the beach",
    "an airplane parked at the airport gate",
    "a cat sleeping on a couch",
    "a train crossing a bridge over a river",
]


def caption_id(row: int) -> str:
    """The CxC caption key of the fake caption at ``row`` (sentid = 1000 + row)."""
    return f"COCO_val2014:sentid:{1000 + row}"


def captions_input(texts: Sequence[str] = CAPTIONS, dim: int = FAKE_DIM) -> CollectionInput:
    """A captions collection embedded with the fake encoder, metadata as the real builder's."""
    return CollectionInput(
        name="captions",
        ids=[caption_id(row) for row in range(len(texts))],
        metadata=[
            {
                "text": text,
                "image_id": 42 + row // 2,
                "filename": f"COCO_val2014_{42 + row // 2:012d}.jpg",
                "sentid": 1000 + row,
            }
            for row, text in enumerate(texts)
        ],
        vectors=np.stack([embed_bag_of_words(text, dim) for text in texts]),
    )


# The fake image corpus: image_id 42 + n has colour IMAGE_COLOURS[n] and the captions at rows
# 2n and 2n + 1 (as captions_input assigns them). Rows 0 and 4 are both red: a tie.
IMAGE_COLOURS: list[str] = ["red", "blue", "green", "yellow", "red", "white"]


def image_id(row: int) -> str:
    """The id (COCO file name) of the fake image at ``row``."""
    return f"COCO_val2014_{42 + row:012d}.jpg"


def colour_files(folder: Path, colours: Sequence[str] = IMAGE_COLOURS) -> list[Path]:
    """One small PNG per colour in ``folder`` (the image files the fake corpus was made from)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for row, colour in enumerate(colours):
        path = folder / f"{row}-{colour}.png"
        if not path.exists():
            Image.new("RGB", (24, 16), colour).save(path)
        paths.append(path)
    return paths


def images_input(
    colours: Sequence[str] = IMAGE_COLOURS, dim: int = FAKE_DIM, files_dir: Path | None = None
) -> CollectionInput:
    """An images collection embedded with the fake image encoder, metadata as the contract's;
    with ``files_dir``, made from PNG files written there (the bundle keeps their thumbnails)."""
    return CollectionInput(
        name="images",
        ids=[image_id(row) for row in range(len(colours))],
        metadata=[
            {
                "image_id": 42 + row,
                "filename": image_id(row),
                "captions": [caption_id(2 * row), caption_id(2 * row + 1)],
            }
            for row in range(len(colours))
        ],
        vectors=np.stack([embed_colour(COLOURS[colour], dim) for colour in colours]),
        image_paths=None if files_dir is None else colour_files(files_dir, colours),
    )


def write_fake_bundle(
    bundles_root: Path,
    name: str = "coco-captions",
    *,
    version: str = "20260101T000000Z",
    variant_name: str = FAKE_VARIANT,
    fingerprint: str = FAKE_FINGERPRINT,
    texts: Sequence[str] = CAPTIONS,
    dim: int = FAKE_DIM,
    captions: bool = True,
    images: bool = False,
) -> Path:
    """Write a real faiss bundle of fake-encoded captions and/or images; returns its version
    folder."""
    collections = [captions_input(texts, dim)] if captions else []
    if images:
        collections.append(images_input(dim=dim, files_dir=bundles_root.parent / "image-files"))
    return write_bundle(
        bundles_root,
        name,
        collections,
        variant_name=variant_name,
        variant_fingerprint=fingerprint,
        version=version,
    )


# A multimodal deployment: "fake-clip" has both towers (bundle coco-clip: captions and images),
# "fake-pixels" only an image tower (bundle coco-pixels: images), "fake-bow" only a text tower
# (bundle coco-captions: captions).
CLIP_VARIANT = "fake-clip"
CLIP_FINGERPRINT = "c1" * 32
PIXELS_VARIANT = "fake-pixels"
PIXELS_FINGERPRINT = "d2" * 32


def write_multimodal_bundles(bundles_root: Path) -> None:
    """The three bundles of the multimodal deployment under ``bundles_root``."""
    write_fake_bundle(bundles_root)
    write_fake_bundle(
        bundles_root,
        "coco-clip",
        variant_name=CLIP_VARIANT,
        fingerprint=CLIP_FINGERPRINT,
        images=True,
    )
    write_fake_bundle(
        bundles_root,
        "coco-pixels",
        variant_name=PIXELS_VARIANT,
        fingerprint=PIXELS_FINGERPRINT,
        captions=False,
        images=True,
    )
