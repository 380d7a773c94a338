"""A tiny dataset in the real files' formats, generated deterministically for tests."""

from __future__ import annotations

import csv
import random
from dataclasses import dataclass
from pathlib import Path

from benchmarks.datasets import Caption, Rating

OBJECTS = ("dog", "cat", "horse", "bird", "car", "train", "boat", "pizza", "clock", "bus")
ADJECTIVES = ("small", "big", "red", "white", "old")
VERBS = ("sits", "stands", "runs", "waits")
PLACES = ("on a street", "in a field", "near a house", "by the water")


@dataclass(frozen=True)
class TinyDataset:
    """Paths and contents of a generated dataset."""

    data_dir: Path
    split: str
    captions: list[Caption]
    sts: list[Rating]


def _captions(rng: random.Random, images: int) -> list[Caption]:
    captions: list[Caption] = []
    sentid = 100
    for image in range(images):
        image_id = 1000 + image
        theme = OBJECTS[image % len(OBJECTS)]
        for _ in range(5):
            sentid += rng.randint(1, 50)
            text = f"a {rng.choice(ADJECTIVES)} {theme} {rng.choice(VERBS)} {rng.choice(PLACES)}"
            captions.append(
                Caption(
                    key=f"COCO_val2014:sentid:{sentid}",
                    sentid=sentid,
                    image_id=image_id,
                    filename=f"COCO_val2014_{image_id:012d}.jpg",
                    text=text,
                    raw=text,
                    row=len(captions),
                )
            )
    # One raw string with a newline and trailing space, as in the real file.
    first = captions[0]
    captions[0] = Caption(
        first.key,
        first.sentid,
        first.image_id,
        first.filename,
        first.text,
        first.text.replace(" ", "\n", 1) + " ",
        first.row,
    )
    return captions


def _ratings(rng: random.Random, captions: list[Caption]) -> list[Rating]:
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


def write_tiny_dataset(data_dir: Path, split: str = "val", images: int = 12) -> TinyDataset:
    """Write ``captions_{split}.csv`` and ``cxc/sts_{split}.csv`` under ``data_dir``."""
    rng = random.Random(7)
    captions = _captions(rng, images)
    ratings = _ratings(rng, captions)
    caption_dir = data_dir / "coco-karpathy-captions"
    caption_dir.mkdir(parents=True, exist_ok=True)
    with (caption_dir / f"captions_{split}.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(
            [
                "sentid",
                "cxc_caption_key",
                "image_id",
                "filename",
                "karpathy_image_index",
                "caption_index",
                "text",
                "raw",
            ]
        )
        for caption in captions:
            writer.writerow(
                [
                    caption.sentid,
                    caption.key,
                    caption.image_id,
                    caption.filename,
                    caption.row // 5,
                    caption.row % 5,
                    caption.text,
                    caption.raw,
                ]
            )
    cxc_dir = data_dir / "cxc"
    cxc_dir.mkdir(parents=True, exist_ok=True)
    with (cxc_dir / f"sts_{split}.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["caption1", "caption2", "agg_score", "sampling_method"])
        for rating in ratings:
            writer.writerow([rating.item1, rating.item2, rating.agg_score, rating.sampling_method])
    return TinyDataset(data_dir=data_dir, split=split, captions=captions, sts=ratings)
