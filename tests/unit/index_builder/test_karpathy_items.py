"""Karpathy captions as items: a caption's and an image's id and metadata (the demo bundles'),
the images in order of first appearance, and the checks of records made in memory."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from formats.errors import FormatError
from formats.karpathy import images_of_captions, read_captions
from formats.layout import captions_path, images_dir
from index_builder.corpus import KarpathyCaptions
from index_builder.field_schema import CorpusError
from index_builder.items import Problem
from index_builder.karpathy_items import (
    caption_metadata,
    caption_origin,
    image_metadata,
    read_caption_images,
    read_caption_items,
)


@pytest.fixture
def corpus(tiny_corpus: Path) -> KarpathyCaptions:
    source = captions_path(tiny_corpus, "val")
    return KarpathyCaptions(read_captions(source), source, images_dir(tiny_corpus, "val"))


def test_metadata_of_a_caption_and_an_image(corpus: KarpathyCaptions) -> None:
    records = corpus.records
    assert list(caption_metadata(records[1]).items()) == [
        ("text", "a dog number 0 caption 1"),
        ("image_id", 0),
        ("filename", "img_000000000000.png"),
        ("sentid", 1),
    ]
    assert list(image_metadata(images_of_captions(records)[2]).items()) == [
        ("image_id", 2),
        ("filename", "img_000000000002.png"),
        ("captions", ["tiny:sentid:20", "tiny:sentid:21"]),
    ]
    assert caption_origin(corpus, records[1]).location == f"{corpus.source}:row 2"


def test_caption_items(corpus: KarpathyCaptions) -> None:
    read = read_caption_items(corpus)
    assert (read.read, read.bad, read.schema) == (6, [], None)
    item = read.items[3]
    assert (item.item_id, item.text) == ("tiny:sentid:11", "a dog number 1 caption 1")
    assert item.metadata == caption_metadata(corpus.records[3])
    assert read_caption_items(corpus, limit=2).read == 2


def test_image_items_in_order_of_first_appearance(corpus: KarpathyCaptions) -> None:
    records = list(corpus.records)
    corpus = replace(corpus, records=[records[4], *records[:4], records[5]])
    read = read_caption_images(corpus)
    assert [item.item_id for item in read.items] == [f"img_{i:012d}.png" for i in (2, 0, 1)]
    assert read.items[0].file == corpus.images_dir / "img_000000000002.png"  # type: ignore[operator]
    assert read.items[0].origin.location == f"{corpus.images_dir}/img_000000000002.png"
    assert read.items[0].metadata["captions"] == ["tiny:sentid:20", "tiny:sentid:21"]
    assert read_caption_images(corpus, limit=1).read == 1


def test_records_made_in_memory_are_checked(corpus: KarpathyCaptions) -> None:
    records = list(corpus.records)
    records[1] = replace(records[1], key=" ")
    records[2] = replace(records[2], key=records[0].key)
    records[3] = replace(records[3], text="")
    records[5] = replace(records[5], filename="../x.png", image_id=99)
    read = read_caption_items(replace(corpus, records=records))
    assert [item.item_id for item in read.items] == [
        "tiny:sentid:0",
        "tiny:sentid:20",
        "tiny:sentid:21",
    ]
    assert [(bad.origin.row, bad.problem) for bad in read.bad] == [
        (2, Problem.MISSING_ID),
        (3, Problem.DUPLICATE_ID),
        (4, Problem.EMPTY_TEXT),
    ]
    images = read_caption_images(replace(corpus, records=records))
    assert [bad.problem for bad in images.bad] == [Problem.MISSING_IMAGE]
    assert images.read == len(images.items) + len(images.bad) == 4


def test_images_need_their_folder_and_consistent_records(corpus: KarpathyCaptions) -> None:
    with pytest.raises(CorpusError, match="needs the captions' images folder"):
        read_caption_images(replace(corpus, images_dir=None))
    records = list(corpus.records)
    records[1] = replace(records[1], image_id=7)
    with pytest.raises(FormatError, match="disagrees with an earlier row"):
        read_caption_images(replace(corpus, records=records))
