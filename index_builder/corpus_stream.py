"""A corpus read in two passes, for builds that must not hold every item (the distributed
build's driver, ``cluster.build``): the same items and bad items as
:func:`index_builder.readers.read_collection`, in the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from formats.field_types import FieldType, FieldValue
from formats.tables import TableRow, open_table
from index_builder.corpus import Corpus, ImageFolderCorpus, KarpathyCaptions, TextTable
from index_builder.field_schema import CorpusError, FieldSchema, RawRecord
from index_builder.items import BadItem, ImageItem, ItemOrigin, TextItem
from index_builder.preconditions import CollectionPlan
from index_builder.readers import (
    TEXT_FIELD,
    image_item,
    image_table_record,
    read_collection,
    text_item,
    text_record,
)
from index_builder.record_typing import FieldNames, PendingRecord, item_schema, type_record
from index_builder.sidecar import PATH_FIELD
from index_builder.table_rows import limited_rows, require_columns, row_origin


@dataclass
class CorpusStream:
    """A corpus read without holding its items: the same items and bad items as
    :func:`~index_builder.readers.read_collection`, in the same order.

    ``schema`` and ``read`` are known up front (a first pass over the table types every field
    and counts the records); :meth:`items` streams the items in a second pass, adding the bad
    items only typing finds (``wrong_type``, ``duplicate_id``) to ``bad`` as it meets them. Once
    :meth:`items` is exhausted, ``read == items yielded + len(bad)``. A folder of images and
    Karpathy captions are read whole (their listing, their records are in memory anyway) and
    streamed from there.
    """

    schema: FieldSchema | None
    read: int
    bad: list[BadItem]
    notes: dict[str, object]
    _items: Callable[[], Iterator[TextItem | ImageItem]]

    def items(self) -> Iterator[TextItem | ImageItem]:
        """The items in corpus order (reads the table again: call once)."""
        return self._items()


def stream_collection(
    corpus: Corpus,
    plan: CollectionPlan,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusStream:
    """Read ``plan``'s collection of ``corpus`` as a :class:`CorpusStream` (see there). Raises
    as :func:`~index_builder.readers.read_collection`."""
    declared = dict(declared or {})
    if isinstance(corpus, ImageFolderCorpus | KarpathyCaptions):
        found = read_collection(corpus, plan, declared=declared, limit=limit, progress=progress)
        listed: list[TextItem | ImageItem] = list(found.items)
        return CorpusStream(found.schema, found.read, found.bad, found.notes, lambda: iter(listed))
    if isinstance(corpus, TextTable):
        return _stream_table(
            corpus.path,
            own_columns=(corpus.id_column, corpus.text_column),
            reserved=TEXT_FIELD,
            payload_column=corpus.text_column,
            record_of=lambda row: text_record(row, corpus),
            item_of=text_item,
            declared=declared,
            limit=limit,
            progress=progress,
        )
    base = corpus.path.parent
    return _stream_table(
        corpus.path,
        own_columns=(corpus.path_column, corpus.id_column),
        reserved=PATH_FIELD,
        payload_column=corpus.path_column,
        record_of=lambda row: image_table_record(row, corpus),
        item_of=lambda record, typed: image_item(record, typed, base),
        declared=declared,
        limit=limit,
        progress=progress,
    )


def _stream_table(
    path: Path,
    *,
    own_columns: tuple[str | None, ...],
    reserved: str,
    payload_column: str,
    record_of: Callable[[TableRow], PendingRecord | BadItem],
    item_of: Callable[[PendingRecord, dict[str, FieldValue]], TextItem | ImageItem],
    declared: Mapping[str, FieldType],
    limit: int | None,
    progress: bool,
) -> CorpusStream:
    bad: list[BadItem] = []
    names = FieldNames(path)
    read = 0

    with open_table(path) as table:
        require_columns(table, [name for name in own_columns if name is not None])
        names.add_header(table, own_columns)
        names.check(reserved, payload_column, declared if table.columns else {})

        def survivors() -> Iterator[RawRecord]:
            nonlocal read
            for row in limited_rows(table, limit, progress):
                read += 1
                record = record_of(row)
                if isinstance(record, BadItem):
                    bad.append(record)
                    continue
                names.add(record.metadata, row_origin(row))
                yield RawRecord(record.metadata, record.text_values)

        schema = item_schema(survivors(), declared, reserved)
    names.check(reserved, payload_column, declared)

    def items() -> Iterator[TextItem | ImageItem]:
        first_of: dict[str, ItemOrigin] = {}
        count = 0
        with open_table(path) as table:
            for row in limited_rows(table, limit, progress=False):
                count += 1
                record = record_of(row)
                if isinstance(record, BadItem):
                    continue  # listed by the first pass
                typed = type_record(record, schema, first_of)
                if isinstance(typed, BadItem):
                    bad.append(typed)
                    continue
                yield item_of(record, typed)
        if count != read:
            raise CorpusError(f"{path} changed while it was read ({read} records, then {count})")

    return CorpusStream(schema, read, bad, {}, items)
