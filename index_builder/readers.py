"""Reading a corpus into typed items: a table of texts, a folder of images (with optional
sidecar metadata), a table of image paths, Karpathy captions.

Each reader checks every record it can without embedding anything — ids present and unique,
texts present and not blank, metadata values of their field's type, image paths naming files —
and returns the good records as items and every other as a :class:`BadItem`. Problems with the
inputs as a whole (a missing column, a column name that cannot be a field) raise
:class:`~index_builder.field_schema.CorpusError`. Image files themselves are checked later
(:mod:`index_builder.image_checks`). :func:`read_collection` reads any corpus for one of the
collections it yields (:mod:`index_builder.preconditions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from formats.field_types import FieldType, FieldValue
from formats.image_folder import walk_image_folder
from formats.tables import TableRow, open_table
from index_builder.corpus import (
    Corpus,
    ImageFolderCorpus,
    ImageTable,
    KarpathyCaptions,
    TextTable,
    UserCorpus,
)
from index_builder.items import BadItem, CorpusItems, ImageItem, ItemOrigin, Problem, TextItem
from index_builder.karpathy_items import read_caption_images, read_caption_items
from index_builder.preconditions import CollectionPlan
from index_builder.record_typing import FieldNames, PendingRecord, type_records
from index_builder.sidecar import PATH_FIELD, sidecar_rows
from index_builder.table_rows import (
    item_id_of,
    limited_rows,
    path_of,
    require_columns,
    row_origin,
    text_of,
)

TEXT_FIELD = "text"
"""A text item's own metadata field: its text."""


def read_collection(
    corpus: Corpus,
    plan: CollectionPlan,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusItems[TextItem] | CorpusItems[ImageItem]:
    """The items of ``plan``'s collection of ``corpus``: Karpathy captions give their captions
    (text tower) or their images (image tower); any other corpus its one collection."""
    if isinstance(corpus, KarpathyCaptions):
        if plan.tower == "text":
            return read_caption_items(corpus, limit=limit)
        return read_caption_images(corpus, limit=limit)
    return read_corpus(corpus, declared=declared, limit=limit, progress=progress)


def read_corpus(
    corpus: UserCorpus,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusItems[TextItem] | CorpusItems[ImageItem]:
    """Read a table of texts, a folder or a table of images (see the readers below)."""
    if isinstance(corpus, TextTable):
        return read_text_table(corpus, declared=declared, limit=limit, progress=progress)
    if isinstance(corpus, ImageFolderCorpus):
        return read_image_folder(corpus, declared=declared, limit=limit, progress=progress)
    return read_image_table(corpus, declared=declared, limit=limit, progress=progress)


# --- a table of texts ----------------------------------------------------------------------------


def read_text_table(
    corpus: TextTable,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusItems[TextItem]:
    """Text items of a JSONL / CSV / Parquet table (metadata ``text`` holds the text)."""
    declared = dict(declared or {})
    bad: list[BadItem] = []
    pending: list[PendingRecord] = []
    names = FieldNames(corpus.path)
    own_columns = (corpus.id_column, corpus.text_column)
    read = 0
    with open_table(corpus.path) as table:
        require_columns(table, list(own_columns))
        names.add_header(table, own_columns)
        names.check(TEXT_FIELD, corpus.text_column, declared if table.columns else {})
        for row in limited_rows(table, limit, progress):
            read += 1
            record = text_record(row, corpus)
            if isinstance(record, BadItem):
                bad.append(record)
                continue
            names.add(record.metadata, record.origin)
            pending.append(record)
    names.check(TEXT_FIELD, corpus.text_column, declared)
    schema, kept = type_records(pending, bad, declared, TEXT_FIELD)
    items = [text_item(record, typed) for record, typed in kept]
    return CorpusItems(items=items, bad=bad, schema=schema, read=read)


def text_record(row: TableRow, corpus: TextTable) -> PendingRecord | BadItem:
    """The per-record checks of a text table row: a pending record, or why it is bad."""
    origin = row_origin(row)
    if row.error is not None:
        return BadItem(origin, Problem.MALFORMED_RECORD, row.error)
    values = row.values
    item_id, problem = item_id_of(values.get(corpus.id_column), corpus.id_column, row.text_values)
    text: str | None = None
    if item_id is not None:
        text, problem = text_of(values.get(corpus.text_column), corpus.text_column)
    if problem is not None or item_id is None or text is None:
        kind, reason = problem or (Problem.MALFORMED_RECORD, "unreadable record")
        return BadItem(origin, kind, reason, item_id)
    own_columns = (corpus.id_column, corpus.text_column)
    metadata = {name: value for name, value in values.items() if name not in own_columns}
    return PendingRecord(origin, item_id, text, metadata, row.text_values)


def text_item(record: PendingRecord, typed: dict[str, FieldValue]) -> TextItem:
    """The text item of a typed record."""
    return TextItem(
        item_id=record.item_id,
        text=record.payload,
        origin=record.origin,
        metadata={TEXT_FIELD: record.payload, **typed},
    )


# --- a table of images ---------------------------------------------------------------------------


def read_image_table(
    corpus: ImageTable,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusItems[ImageItem]:
    """Image items of a table of paths (metadata ``path`` holds the path as written)."""
    declared = dict(declared or {})
    bad: list[BadItem] = []
    pending: list[PendingRecord] = []
    names = FieldNames(corpus.path)
    own_columns = (corpus.path_column, corpus.id_column)
    base = corpus.path.parent
    read = 0
    with open_table(corpus.path) as table:
        require_columns(table, [name for name in own_columns if name is not None])
        names.add_header(table, own_columns)
        names.check(PATH_FIELD, corpus.path_column, declared if table.columns else {})
        for row in limited_rows(table, limit, progress):
            read += 1
            record = image_table_record(row, corpus)
            if isinstance(record, BadItem):
                bad.append(record)
                continue
            names.add(record.metadata, row_origin(row))
            pending.append(record)
    names.check(PATH_FIELD, corpus.path_column, declared)
    schema, kept = type_records(pending, bad, declared, PATH_FIELD)
    items = [image_item(record, typed, base) for record, typed in kept]
    return CorpusItems(items=items, bad=bad, schema=schema, read=read)


def image_table_record(row: TableRow, corpus: ImageTable) -> PendingRecord | BadItem:
    """The per-record checks of an image table row: a pending record, or why it is bad."""
    origin = row_origin(row)
    if row.error is not None:
        return BadItem(origin, Problem.MALFORMED_RECORD, row.error)
    values = row.values
    written, problem = path_of(values.get(corpus.path_column), corpus.path_column)
    item_id = written
    if written is not None and corpus.id_column is not None:
        item_id, problem = item_id_of(
            values.get(corpus.id_column), corpus.id_column, row.text_values
        )
    if problem is not None or written is None or item_id is None:
        kind, reason = problem or (Problem.MALFORMED_RECORD, "unreadable record")
        return BadItem(origin, kind, reason, item_id)
    own_columns = (corpus.path_column, corpus.id_column)
    metadata = {name: value for name, value in values.items() if name not in own_columns}
    origin = ItemOrigin(origin.source, line=origin.line, row=origin.row, path=written)
    base = corpus.path.parent
    file = Path(written) if Path(written).is_absolute() else base / written
    return PendingRecord(origin, item_id, written, metadata, row.text_values, file)


def image_item(record: PendingRecord, typed: dict[str, FieldValue], base: Path) -> ImageItem:
    """The image item of a typed record (its file, else ``base`` / the path as written)."""
    return ImageItem(
        item_id=record.item_id,
        file=record.file or base / record.payload,
        origin=record.origin,
        metadata={PATH_FIELD: record.payload, **typed},
    )


# --- a folder of images --------------------------------------------------------------------------


def read_image_folder(
    corpus: ImageFolderCorpus,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusItems[ImageItem]:
    """Image items of a folder (ids and metadata ``path``: the relative paths), with the
    sidecar's metadata where it has a row (:mod:`index_builder.sidecar`). Sidecar rows that
    name no image are bad items; an image without a row has only ``path``."""
    declared = dict(declared or {})
    listing = walk_image_folder(corpus.folder)
    images = listing.images if limit is None else listing.images[:limit]
    known = {image.relative for image in listing.images}
    bad: list[BadItem] = []
    sidecar = sidecar_rows(corpus, known, declared, bad, progress)
    # Read: each image once, plus each sidecar row that matched no image (bad by now).
    read = len(images) + len(bad)
    pending = [
        sidecar.get(image.relative)
        or PendingRecord(
            ItemOrigin(str(corpus.folder), path=image.relative),
            image.relative,
            image.relative,
            {},
            False,
        )
        for image in images
    ]
    for record, image in zip(pending, images, strict=True):
        record.file = image.path
    schema, kept = type_records(pending, bad, declared, PATH_FIELD)
    items = [image_item(record, typed, corpus.folder) for record, typed in kept]
    notes: dict[str, object] = {"other_files": listing.other_files}
    if limit is not None:
        notes["images_beyond_limit"] = len(listing.images) - len(images)
    return CorpusItems(items=items, bad=bad, schema=schema, read=read, notes=notes)
