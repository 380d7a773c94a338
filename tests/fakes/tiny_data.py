"""A tiny dataset in the real files' formats, generated deterministically for tests.

Layout (that of ``../shared/data`` plus the scenes corpus's image folder)::

    coco-karpathy-captions/captions_<split>.csv   12 images × 5 captions
    cxc/sts_<split>.csv, sis_<split>.csv, sits_<split>.csv
    bison/bison_<split>.csv
    images/<split>/COCO_val2014_<id:012d>.jpg       8×8 solid-colour JPEGs (+ one not in the split)

Each image has a toy *description* ("a dog photo red tag0") standing in for its pixels: the
fake service scores an image as that text. Image 3 has no SITS caption ≥ 3 (i2t skips it); image 5
has no SIS partner (i2i skips it); BISON has one row whose other image is only in the images
folder (uploadable) and one whose image exists nowhere (skipped).
"""

from __future__ import annotations

import io
import random
from dataclasses import dataclass, replace
from pathlib import Path

from PIL import Image

from formats.bison import BisonRow, write_bison
from formats.cxc import Rating, RatingKind, write_ratings
from formats.karpathy import CaptionRecord, write_captions
from formats.layout import bison_path, captions_path, images_dir

OBJECTS = ("dog", "cat", "horse", "bird", "car", "train", "boat", "pizza", "clock", "bus")
ADJECTIVES = ("small", "big", "red", "white", "old")
VERBS = ("sits", "stands", "runs", "waits")
PLACES = ("on a street", "in a field", "near a house", "by the water")


COLOURS = ("red", "green", "blue", "yellow", "grey", "pink")
NO_SITS_POSITIVE = 3  # image index without a SITS caption ≥ 3
NO_SIS_PARTNER = 5  # image index without an SIS partner ≥ 2.5
EXTRA_IMAGE_ID = 5000  # in the images folder, not in the split
MISSING_IMAGE_ID = 6000  # nowhere


@dataclass(frozen=True)
class TinyDataset:
    """Paths and contents of a generated dataset.

    Attributes:
        descriptions: image file name → the toy text standing in for its pixels (every file
            in the images folder, including the one outside the split).
        image_bytes: image file name → the file's bytes.
    """

    data_dir: Path
    split: str
    captions: list[CaptionRecord]
    sts: list[Rating]
    sis: list[Rating]
    sits: list[Rating]
    bison: list[BisonRow]
    descriptions: dict[str, str]
    image_bytes: dict[str, bytes]

    @property
    def images_dir(self) -> Path:
        """``<data>/images/<split>``."""
        return images_dir(self.data_dir, self.split)

    @property
    def filenames(self) -> list[str]:
        """The split's image file names in row order."""
        return list(dict.fromkeys(caption.filename for caption in self.captions))


def _captions(rng: random.Random, images: int) -> list[CaptionRecord]:
    captions: list[CaptionRecord] = []
    sentid = 100
    for image in range(images):
        image_id = 1000 + image
        theme = OBJECTS[image % len(OBJECTS)]
        for _ in range(5):
            sentid += rng.randint(1, 50)
            text = f"a {rng.choice(ADJECTIVES)} {theme} {rng.choice(VERBS)} {rng.choice(PLACES)}"
            captions.append(
                CaptionRecord(
                    sentid=sentid,
                    key=f"COCO_val2014:sentid:{sentid}",
                    image_id=image_id,
                    filename=f"COCO_val2014_{image_id:012d}.jpg",
                    image_index=len(captions) // 5,
                    caption_index=len(captions) % 5,
                    text=text,
                    raw=text,
                    row=len(captions),
                )
            )
    # One raw string with a newline and trailing space, as in the real file.
    first = captions[0]
    captions[0] = replace(first, raw=first.text.replace(" ", "\n", 1) + " ")
    return captions


def _ratings(rng: random.Random, captions: list[CaptionRecord]) -> list[Rating]:
    ratings: list[Rating] = []
    seen: set[frozenset[str]] = set()
    for start in range(0, len(captions), 5):
        group = captions[start : start + 5]
        for index, caption in enumerate(group):
            partner = group[(index + 1) % 5]
            score = rng.choice((2.0, 2.99, 3.0, 3.5, 4.2, 5.0))
            ratings.append(Rating(caption.key, partner.key, score, "c2c_cocaption"))
            seen.add(frozenset((caption.key, partner.key)))
    while len(ratings) < len(captions) + 25:
        left, right = rng.sample(captions, 2)
        pair = frozenset((left.key, right.key))
        if left.image_id == right.image_id or pair in seen:
            continue
        seen.add(pair)
        score = round(rng.uniform(0.0, 5.0), 2)
        ratings.append(Rating(left.key, right.key, score, "c2c_isim"))
    return ratings


def _filename(image_id: int) -> str:
    return f"COCO_val2014_{image_id:012d}.jpg"


def _description(image_id: int) -> str:
    index = image_id - 1000
    tags = " ".join(f"tag{number}" for number in range(index % 5))
    return f"a {OBJECTS[index % len(OBJECTS)]} photo {COLOURS[index % len(COLOURS)]} {tags}"


def _jpeg(image_id: int) -> bytes:
    buffer = io.BytesIO()
    colour = ((image_id * 12) % 256, (image_id * 37) % 256, (image_id * 91) % 256)
    Image.new("RGB", (8, 8), colour).save(buffer, "JPEG")
    return buffer.getvalue()


def _sits(rng: random.Random, captions: list[CaptionRecord]) -> list[Rating]:
    ratings: list[Rating] = []
    no_positive = _filename(1000 + NO_SITS_POSITIVE)
    for caption in captions:
        choices = (1.5, 2.99) if caption.filename == no_positive else (2.0, 2.99, 3.0, 3.5, 5.0)
        ratings.append(Rating(caption.key, caption.filename, rng.choice(choices), "c2i_original"))
    seen = {(rating.item1, rating.item2) for rating in ratings}
    filenames = sorted({caption.filename for caption in captions} - {no_positive})
    while len(ratings) < len(captions) + 30:
        caption = rng.choice(captions)
        filename = rng.choice(filenames)
        if (caption.key, filename) in seen:
            continue
        seen.add((caption.key, filename))
        score = rng.choice((0.0, 1.2, 2.99, 3.0, 4.1))
        ratings.append(Rating(caption.key, filename, score, "c2i_intrasim"))
    return ratings


def _sis(rng: random.Random, images: int) -> list[Rating]:
    indices = [index for index in range(images) if index != NO_SIS_PARTNER]
    ratings: list[Rating] = []
    seen: set[frozenset[int]] = set()
    while len(ratings) < 2 * images:
        left, right = rng.sample(indices, 2)
        if frozenset((left, right)) in seen:
            continue
        seen.add(frozenset((left, right)))
        score = rng.choice((0.4, 1.0, 1.7, 2.2, 2.49, 2.5, 3.0, 3.6, 4.0))
        ratings.append(Rating(_filename(1000 + left), _filename(1000 + right), score, "i2i_csim"))
    # The partnerless image is still rated, below the threshold.
    ratings.append(Rating(_filename(1000 + NO_SIS_PARTNER), _filename(1000), 2.49, "i2i_csim"))
    return ratings


def _bison(rng: random.Random, captions: list[CaptionRecord], images: int) -> list[BisonRow]:
    rows: list[BisonRow] = []
    for index in range(images):
        caption = captions[5 * index + rng.randrange(5)]
        other = 1000 + (index + 1 + rng.randrange(images - 1)) % images
        pair = [caption.image_id, other]
        rng.shuffle(pair)
        rows.append(
            BisonRow(
                len(rows),
                caption.text,
                pair[0],
                pair[1],
                caption.image_id,
                "val",
                caption.sentid,
                "karpathy-val",
            )
        )
    first = captions[0]
    for other in (EXTRA_IMAGE_ID, MISSING_IMAGE_ID):
        rows.append(
            BisonRow(len(rows), first.text, other, first.image_id, first.image_id, "val", None, "")
        )
    return rows


def write_tiny_dataset(data_dir: Path, split: str = "val", images: int = 12) -> TinyDataset:
    """Write the captions, STS/SIS/SITS, BISON and image files of a split under ``data_dir``."""
    rng = random.Random(7)
    captions = _captions(rng, images)
    ratings = _ratings(rng, captions)
    sits = _sits(rng, captions)
    sis = _sis(rng, images)
    bison = _bison(rng, captions, images)
    image_ids = [1000 + index for index in range(images)] + [EXTRA_IMAGE_ID]
    descriptions = {_filename(image_id): _description(image_id) for image_id in image_ids}
    image_bytes = {_filename(image_id): _jpeg(image_id) for image_id in image_ids}
    folder = images_dir(data_dir, split)
    folder.mkdir(parents=True, exist_ok=True)
    for filename, content in image_bytes.items():
        (folder / filename).write_bytes(content)
    write_captions(captions_path(data_dir, split), captions)
    for kind, rows in ((RatingKind.STS, ratings), (RatingKind.SIS, sis), (RatingKind.SITS, sits)):
        write_ratings(kind.path(data_dir, split), kind, rows)
    write_bison(bison_path(data_dir, split), bison)
    return TinyDataset(
        data_dir=data_dir,
        split=split,
        captions=captions,
        sts=ratings,
        sis=sis,
        sits=sits,
        bison=bison,
        descriptions=descriptions,
        image_bytes=image_bytes,
    )
