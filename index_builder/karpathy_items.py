"""Karpathy captions as items: the ``captions`` collection (one text item per caption) and the
``images`` collection (one image item per image file the captions name).

The ids, the metadata (its keys in this order) and the item order are those of the bundles the
demo serves: a caption's id is its CxC key and its metadata ``text``, ``image_id``,
``filename``, ``sentid``; an image's id is its file name, its metadata ``image_id``,
``filename`` and ``captions`` (its caption keys), in order of first appearance among the
records (``formats.karpathy.images_of_captions``). The kind declares no field types: the stored
values type them (:class:`~index_builder.items.CorpusItems`).

Records ``formats.karpathy.read_captions`` returned are all good; records made otherwise are
checked as any text record is (an id, no id twice, a text that is not blank), and an image file
name must be a plain name inside the images folder. Whether each image file is usable is
checked later, as for every image corpus (:mod:`index_builder.image_checks`).
"""

from __future__ import annotations

from formats.field_types import FieldValue
from formats.karpathy import CaptionRecord, ImageEntry, images_of_captions, is_plain_filename
from index_builder.corpus import KarpathyCaptions
from index_builder.field_schema import CorpusError
from index_builder.items import BadItem, CorpusItems, ImageItem, ItemOrigin, Problem, TextItem


def caption_metadata(record: CaptionRecord) -> dict[str, FieldValue]:
    """The metadata stored beside a caption's id in a bundle."""
    return {
        "text": record.text,
        "image_id": record.image_id,
        "filename": record.filename,
        "sentid": record.sentid,
    }


def image_metadata(image: ImageEntry) -> dict[str, FieldValue]:
    """The metadata stored beside an image's id in a bundle."""
    return {
        "image_id": image.image_id,
        "filename": image.filename,
        "captions": list(image.captions),
    }


def caption_origin(corpus: KarpathyCaptions, record: CaptionRecord) -> ItemOrigin:
    """Where a caption was read: its row of the captions CSV, counted from 1."""
    return ItemOrigin(str(corpus.source), row=record.row + 1)


def read_caption_items(
    corpus: KarpathyCaptions, *, limit: int | None = None
) -> CorpusItems[TextItem]:
    """The ``captions`` collection's items: one per record (the first ``limit``)."""
    records = list(corpus.records if limit is None else corpus.records[:limit])
    items: list[TextItem] = []
    bad: list[BadItem] = []
    first_of: dict[str, ItemOrigin] = {}
    for record in records:
        origin = caption_origin(corpus, record)
        first = first_of.get(record.key)
        if not record.key.strip():
            bad.append(BadItem(origin, Problem.MISSING_ID, "no caption key (cxc_caption_key)"))
        elif first is not None:
            reason = f"duplicate id (first at {first.location})"
            bad.append(BadItem(origin, Problem.DUPLICATE_ID, reason, record.key))
        elif not record.text.strip():
            reason = "empty text (column 'text' is blank)"
            bad.append(BadItem(origin, Problem.EMPTY_TEXT, reason, record.key))
        else:
            first_of[record.key] = origin
            items.append(TextItem(record.key, record.text, origin, caption_metadata(record)))
    return CorpusItems(items=items, bad=bad, schema=None, read=len(records))


def read_caption_images(
    corpus: KarpathyCaptions, *, limit: int | None = None
) -> CorpusItems[ImageItem]:
    """The ``images`` collection's items: one per image the records (the first ``limit``)
    name, its file under the images folder. Raises :class:`CorpusError` without an images
    folder and ``formats.errors.FormatError`` when records disagree on an image's id."""
    folder = corpus.images_dir
    if folder is None:
        raise CorpusError("the images collection needs the captions' images folder (--images-dir)")
    records = corpus.records if limit is None else corpus.records[:limit]
    images = images_of_captions(records)
    items: list[ImageItem] = []
    bad: list[BadItem] = []
    for image in images:
        origin = ItemOrigin(str(folder), path=image.filename)
        if not is_plain_filename(image.filename):
            reason = f"file name {image.filename!r} is not a plain name inside {folder}"
            bad.append(BadItem(origin, Problem.MISSING_IMAGE, reason, image.filename))
            continue
        file = folder / image.filename
        items.append(ImageItem(image.filename, file, origin, image_metadata(image)))
    return CorpusItems(items=items, bad=bad, schema=None, read=len(images))
