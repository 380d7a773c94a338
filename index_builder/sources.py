"""Reading a user corpus into typed items: a table of texts, a folder of images (with optional
sidecar metadata), or a table of image paths.

Each reader checks every record it can without embedding anything — ids present and unique,
texts present and not blank, metadata values of their field's type, image paths naming files —
and returns the good records as items and every other as a :class:`BadItem`. Problems with the
inputs as a whole (a missing column, a column name that cannot be a field) raise
:class:`CorpusError`. Image files themselves are checked later (:mod:`index_builder.image_checks`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from tqdm import tqdm

from formats.field_types import FieldType, FieldValue
from formats.hashing import sha256_file
from formats.image_folder import relative_image_path, walk_image_folder
from formats.tables import Table, TableRow, open_table
from index_builder.field_schema import (
    CorpusError,
    FieldSchema,
    RawRecord,
    check_field_names,
    infer_schema,
)
from index_builder.items import BadItem, ImageItem, ItemOrigin, Problem, TextItem

TEXT_FIELD = "text"
PATH_FIELD = "path"

_Item = TypeVar("_Item", TextItem, ImageItem)


@dataclass(frozen=True)
class TextTable:
    """A table of text items: ``id_column`` and ``text_column``, every other column metadata."""

    path: Path
    id_column: str = "id"
    text_column: str = "text"


@dataclass(frozen=True)
class ImageFolderCorpus:
    """A folder of images; ``metadata``: an optional sidecar table keyed by a ``path`` column
    (the image's path relative to the folder)."""

    folder: Path
    metadata: Path | None = None


@dataclass(frozen=True)
class ImageTable:
    """A table of images: ``path_column`` (relative to the table's folder, or absolute), the id
    in ``id_column`` (default: the path as written), every other column metadata."""

    path: Path
    path_column: str = "path"
    id_column: str | None = None


Corpus = TextTable | ImageFolderCorpus | ImageTable
"""Any user corpus."""


def corpus_kind(corpus: Corpus) -> str:
    """The input option ``corpus`` came from: ``texts``, ``images`` or ``image_table``."""
    if isinstance(corpus, TextTable):
        return "texts"
    return "image_table" if isinstance(corpus, ImageTable) else "images"


def corpus_inputs(corpus: Corpus) -> dict[str, object]:
    """What a build read, for its report and its manifest (tables with their sha256)."""
    if isinstance(corpus, TextTable):
        return {
            "texts": str(corpus.path),
            "sha256": sha256_file(corpus.path),
            "id_column": corpus.id_column,
            "text_column": corpus.text_column,
        }
    if isinstance(corpus, ImageTable):
        return {
            "image_table": str(corpus.path),
            "sha256": sha256_file(corpus.path),
            "path_column": corpus.path_column,
            "id_column": corpus.id_column,
        }
    found: dict[str, object] = {"images": str(corpus.folder)}
    if corpus.metadata is not None:
        found["metadata"] = str(corpus.metadata)
        found["metadata_sha256"] = sha256_file(corpus.metadata)
    return found


@dataclass
class CorpusItems(Generic[_Item]):
    """What a reader made of a corpus.

    ``read`` counts the records read (an image file once; a sidecar row naming no image on its
    own), and ``read == len(items) + len(bad)``. ``schema`` types every metadata field.
    """

    items: list[_Item]
    bad: list[BadItem]
    schema: FieldSchema
    read: int
    notes: dict[str, object] = field(default_factory=dict)


@dataclass
class _Pending:
    """A record that passed the per-record checks, waiting for its metadata to be typed."""

    origin: ItemOrigin
    item_id: str
    payload: str  # the text, or the image path as written
    metadata: dict[str, object]
    text_values: bool
    file: Path | None = None


def read_corpus(
    corpus: Corpus,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusItems[TextItem] | CorpusItems[ImageItem]:
    """Read any corpus (see the readers below)."""
    if isinstance(corpus, TextTable):
        return read_text_table(corpus, declared=declared, limit=limit, progress=progress)
    if isinstance(corpus, ImageFolderCorpus):
        return read_image_folder(corpus, declared=declared, limit=limit, progress=progress)
    return read_image_table(corpus, declared=declared, limit=limit, progress=progress)


def _origin(row: TableRow) -> ItemOrigin:
    if row.line is not None:
        return ItemOrigin(source=str(row.path), line=row.line)
    return ItemOrigin(source=str(row.path), row=row.number)


def _rows(table: Table, limit: int | None, progress: bool) -> Iterator[TableRow]:
    rows = tqdm(
        table.rows(),
        total=table.row_count if limit is None else limit,
        desc=f"reading {table.path.name}",
        unit="row",
        disable=not progress,
    )
    for count, row in enumerate(rows):
        if limit is not None and count >= limit:
            rows.close()
            return
        yield row


def _require_columns(table: Table, required: list[str]) -> None:
    if table.columns is None:
        return
    missing = [name for name in required if name not in table.columns]
    if missing:
        raise CorpusError(
            f"{table.path}: missing column(s) {missing}; the columns are {list(table.columns)}"
        )


def _item_id(value: object, column: str, text_values: bool) -> tuple[str | None, BadReason]:
    """The id in ``value`` (a string, or an integer of a typed table), else why not."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, (Problem.MISSING_ID, f"no id (column {column!r} is missing or empty)")
    if isinstance(value, str):
        return value, None
    if isinstance(value, int) and not isinstance(value, bool) and not text_values:
        return str(value), None
    return None, (
        Problem.WRONG_TYPE,
        f"id column {column!r} holds a {type(value).__name__}, not a string or an integer",
    )


BadReason = tuple[Problem, str] | None


def _text_of(value: object, column: str) -> tuple[str | None, BadReason]:
    if value is None:
        return None, (Problem.MISSING_TEXT, f"no text (column {column!r} is missing or null)")
    if not isinstance(value, str):
        return None, (
            Problem.WRONG_TYPE,
            f"text column {column!r} holds a {type(value).__name__}, not a string",
        )
    if not value.strip():
        return None, (Problem.EMPTY_TEXT, f"empty text (column {column!r} is blank)")
    return value, None


def _path_of(value: object, column: str) -> tuple[str | None, BadReason]:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None, (
            Problem.MISSING_PATH,
            f"no image path (column {column!r} is missing or empty)",
        )
    if not isinstance(value, str):
        return None, (
            Problem.WRONG_TYPE,
            f"path column {column!r} holds a {type(value).__name__}, not a string",
        )
    return value, None


class _FieldNames:
    """Metadata field names met while reading, checked once at the end (JSONL rows may each
    bring new keys); the first record naming each is kept for the error message."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.first_seen: dict[str, str] = {}

    def add(self, names: Mapping[str, object], origin: ItemOrigin) -> None:
        for name in names:
            self.first_seen.setdefault(name, origin.location)

    def check(self, reserved: str, payload_column: str, declared: Mapping[str, FieldType]) -> None:
        if reserved in self.first_seen and payload_column != reserved:
            raise CorpusError(
                f"{self.first_seen[reserved]}: a column {reserved!r} would clash with the items' "
                f"own {reserved!r} field (taken from column {payload_column!r}); rename one"
            )
        check_field_names(self.first_seen, str(self.source))
        for name in declared:
            if name not in self.first_seen and name != reserved:
                raise CorpusError(f"{self.source}: --field {name}: no record has that field")
        if reserved in declared and declared[reserved] is not FieldType.STRING:
            raise CorpusError(f"--field {reserved}: the items' {reserved} is always a string")


def _typed(
    pending: list[_Pending],
    bad: list[BadItem],
    declared: Mapping[str, FieldType],
    reserved: str,
) -> tuple[FieldSchema, list[tuple[_Pending, dict[str, FieldValue]]]]:
    """Type every pending record's metadata and drop duplicate ids (the first record wins)."""
    schema = _item_schema(
        (RawRecord(record.metadata, record.text_values) for record in pending), declared, reserved
    )
    first_of: dict[str, ItemOrigin] = {}
    kept: list[tuple[_Pending, dict[str, FieldValue]]] = []
    for record in pending:
        typed = _type_record(record, schema, first_of)
        if isinstance(typed, BadItem):
            bad.append(typed)
        else:
            kept.append((record, typed))
    return schema, kept


def _item_schema(
    records: Iterable[RawRecord], declared: Mapping[str, FieldType], reserved: str
) -> FieldSchema:
    """The schema of the records' metadata, with the items' own ``reserved`` field first."""
    schema = infer_schema(
        records, {name: kind for name, kind in declared.items() if name != reserved}
    )
    return FieldSchema(
        types={reserved: FieldType.STRING, **schema.types},
        declared=schema.declared | ({reserved} if reserved in declared else set()),
    )


def _type_record(
    record: _Pending, schema: FieldSchema, first_of: dict[str, ItemOrigin]
) -> dict[str, FieldValue] | BadItem:
    """A record's typed metadata, or why it is bad: a value of the wrong type, or an id that an
    earlier good record holds (``first_of``, updated here: the first good record wins)."""
    typed, wrong = schema.type_values(record.metadata, text_values=record.text_values)
    if wrong:
        return BadItem(record.origin, Problem.WRONG_TYPE, "; ".join(wrong), record.item_id)
    first = first_of.get(record.item_id)
    if first is not None:
        return BadItem(
            record.origin,
            Problem.DUPLICATE_ID,
            f"duplicate id (first at {first.location})",
            record.item_id,
        )
    first_of[record.item_id] = record.origin
    return typed


def _header_names(table: Table, names: _FieldNames, exclude: tuple[str | None, ...]) -> None:
    """Record the metadata columns a CSV header or Parquet schema names, before any row."""
    if table.columns is None:
        return
    where = ItemOrigin(str(table.path), line=1 if table.format.value == "csv" else None)
    names.add({name: None for name in table.columns if name not in exclude}, where)


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
    pending: list[_Pending] = []
    names = _FieldNames(corpus.path)
    own_columns = (corpus.id_column, corpus.text_column)
    read = 0
    with open_table(corpus.path) as table:
        _require_columns(table, list(own_columns))
        _header_names(table, names, own_columns)
        names.check(TEXT_FIELD, corpus.text_column, declared if table.columns else {})
        for row in _rows(table, limit, progress):
            read += 1
            record = _text_record(row, corpus)
            if isinstance(record, BadItem):
                bad.append(record)
                continue
            names.add(record.metadata, record.origin)
            pending.append(record)
    names.check(TEXT_FIELD, corpus.text_column, declared)
    schema, kept = _typed(pending, bad, declared, TEXT_FIELD)
    items = [_text_item(record, typed) for record, typed in kept]
    return CorpusItems(items=items, bad=bad, schema=schema, read=read)


def _text_record(row: TableRow, corpus: TextTable) -> _Pending | BadItem:
    """The per-record checks of a text table row: a pending record, or why it is bad."""
    origin = _origin(row)
    if row.error is not None:
        return BadItem(origin, Problem.MALFORMED_RECORD, row.error)
    values = row.values
    item_id, problem = _item_id(values.get(corpus.id_column), corpus.id_column, row.text_values)
    text: str | None = None
    if item_id is not None:
        text, problem = _text_of(values.get(corpus.text_column), corpus.text_column)
    if problem is not None or item_id is None or text is None:
        kind, reason = problem or (Problem.MALFORMED_RECORD, "unreadable record")
        return BadItem(origin, kind, reason, item_id)
    own_columns = (corpus.id_column, corpus.text_column)
    metadata = {name: value for name, value in values.items() if name not in own_columns}
    return _Pending(origin, item_id, text, metadata, row.text_values)


def _text_item(record: _Pending, typed: dict[str, FieldValue]) -> TextItem:
    return TextItem(
        item_id=record.item_id,
        text=record.payload,
        origin=record.origin,
        metadata={TEXT_FIELD: record.payload, **typed},
    )


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
    pending: list[_Pending] = []
    names = _FieldNames(corpus.path)
    own_columns = (corpus.path_column, corpus.id_column)
    base = corpus.path.parent
    read = 0
    with open_table(corpus.path) as table:
        _require_columns(table, [name for name in own_columns if name is not None])
        _header_names(table, names, own_columns)
        names.check(PATH_FIELD, corpus.path_column, declared if table.columns else {})
        for row in _rows(table, limit, progress):
            read += 1
            record = _image_table_record(row, corpus)
            if isinstance(record, BadItem):
                bad.append(record)
                continue
            names.add(record.metadata, _origin(row))
            pending.append(record)
    names.check(PATH_FIELD, corpus.path_column, declared)
    schema, kept = _typed(pending, bad, declared, PATH_FIELD)
    items = [_image_item(record, typed, base) for record, typed in kept]
    return CorpusItems(items=items, bad=bad, schema=schema, read=read)


def _image_table_record(row: TableRow, corpus: ImageTable) -> _Pending | BadItem:
    """The per-record checks of an image table row: a pending record, or why it is bad."""
    origin = _origin(row)
    if row.error is not None:
        return BadItem(origin, Problem.MALFORMED_RECORD, row.error)
    values = row.values
    written, problem = _path_of(values.get(corpus.path_column), corpus.path_column)
    item_id = written
    if written is not None and corpus.id_column is not None:
        item_id, problem = _item_id(values.get(corpus.id_column), corpus.id_column, row.text_values)
    if problem is not None or written is None or item_id is None:
        kind, reason = problem or (Problem.MALFORMED_RECORD, "unreadable record")
        return BadItem(origin, kind, reason, item_id)
    own_columns = (corpus.path_column, corpus.id_column)
    metadata = {name: value for name, value in values.items() if name not in own_columns}
    origin = ItemOrigin(origin.source, line=origin.line, row=origin.row, path=written)
    base = corpus.path.parent
    file = Path(written) if Path(written).is_absolute() else base / written
    return _Pending(origin, item_id, written, metadata, row.text_values, file)


def _image_item(record: _Pending, typed: dict[str, FieldValue], base: Path) -> ImageItem:
    return ImageItem(
        item_id=record.item_id,
        file=record.file or base / record.payload,
        origin=record.origin,
        metadata={PATH_FIELD: record.payload, **typed},
    )


def _sidecar_rows(
    corpus: ImageFolderCorpus,
    known: set[str],
    declared: Mapping[str, FieldType],
    bad: list[BadItem],
    progress: bool,
) -> dict[str, _Pending]:
    """The sidecar's rows by relative path; rows that name no image go to ``bad``."""
    sidecar = corpus.metadata
    rows: dict[str, _Pending] = {}
    if sidecar is None:
        return rows
    names = _FieldNames(sidecar)
    with open_table(sidecar) as table:
        _require_columns(table, [PATH_FIELD])
        _header_names(table, names, (PATH_FIELD,))
        names.check(PATH_FIELD, PATH_FIELD, declared if table.columns else {})
        for row in _rows(table, None, progress):
            origin = _origin(row)
            if row.error is not None:
                bad.append(BadItem(origin, Problem.MALFORMED_RECORD, row.error))
                continue
            written, problem = _path_of(row.values.get(PATH_FIELD), PATH_FIELD)
            relative = None if written is None else relative_image_path(written)
            if problem is None and relative is None:
                problem = (
                    Problem.MISSING_IMAGE,
                    f"path {written!r} is not a relative path inside {corpus.folder}",
                )
            elif problem is None and relative not in known:
                problem = (Problem.MISSING_IMAGE, f"no image {relative} in {corpus.folder}")
            elif relative is not None and relative in rows:
                problem = (
                    Problem.DUPLICATE_ID,
                    f"a second row for {relative} (first at {rows[relative].origin.location})",
                )
            if problem is not None or relative is None:
                kind, reason = problem or (Problem.MALFORMED_RECORD, "unreadable record")
                bad.append(BadItem(origin, kind, reason, relative or written))
                continue
            metadata = {name: value for name, value in row.values.items() if name != PATH_FIELD}
            names.add(metadata, origin)
            origin = ItemOrigin(origin.source, line=origin.line, row=origin.row, path=relative)
            rows[relative] = _Pending(origin, relative, relative, metadata, row.text_values)
    names.check(PATH_FIELD, PATH_FIELD, declared)
    return rows


def read_image_folder(
    corpus: ImageFolderCorpus,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusItems[ImageItem]:
    """Image items of a folder (ids and metadata ``path``: the relative paths), with the
    sidecar's metadata where it has a row. Sidecar rows that name no image are bad items; an
    image without a row has only ``path``."""
    declared = dict(declared or {})
    listing = walk_image_folder(corpus.folder)
    images = listing.images if limit is None else listing.images[:limit]
    known = {image.relative for image in listing.images}
    bad: list[BadItem] = []
    sidecar = _sidecar_rows(corpus, known, declared, bad, progress)
    # Read: each image once, plus each sidecar row that matched no image (bad by now).
    read = len(images) + len(bad)
    pending = [
        sidecar.get(image.relative)
        or _Pending(
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
    schema, kept = _typed(pending, bad, declared, PATH_FIELD)
    items = [
        ImageItem(
            item_id=record.item_id,
            file=record.file or corpus.folder / record.payload,
            origin=record.origin,
            metadata={PATH_FIELD: record.payload, **typed},
        )
        for record, typed in kept
    ]
    notes: dict[str, object] = {"other_files": listing.other_files}
    if limit is not None:
        notes["images_beyond_limit"] = len(listing.images) - len(images)
    return CorpusItems(items=items, bad=bad, schema=schema, read=read, notes=notes)


# --- streaming: a corpus read in two passes, for builds that must not hold every item --------


@dataclass
class CorpusStream:
    """A corpus read without holding its items: the same items and bad items as
    :func:`read_corpus`, in the same order.

    ``schema`` and ``read`` are known up front (a first pass over the table types every field
    and counts the records); :meth:`items` streams the items in a second pass, adding the bad
    items only typing finds (``wrong_type``, ``duplicate_id``) to ``bad`` as it meets them. Once
    :meth:`items` is exhausted, ``read == items yielded + len(bad)``. A folder of images is
    listed whole (its listing is in memory anyway) and streamed from that listing.
    """

    schema: FieldSchema
    read: int
    bad: list[BadItem]
    notes: dict[str, object]
    _items: Callable[[], Iterator[TextItem | ImageItem]]

    def items(self) -> Iterator[TextItem | ImageItem]:
        """The items in corpus order (reads the table again: call once)."""
        return self._items()


def stream_corpus(
    corpus: Corpus,
    *,
    declared: Mapping[str, FieldType] | None = None,
    limit: int | None = None,
    progress: bool = False,
) -> CorpusStream:
    """Read ``corpus`` as a :class:`CorpusStream` (see there). Raises as :func:`read_corpus`."""
    declared = dict(declared or {})
    if isinstance(corpus, ImageFolderCorpus):
        found = read_image_folder(corpus, declared=declared, limit=limit, progress=progress)
        listed: list[TextItem | ImageItem] = list(found.items)
        return CorpusStream(found.schema, found.read, found.bad, found.notes, lambda: iter(listed))
    if isinstance(corpus, TextTable):
        return _stream_table(
            corpus.path,
            own_columns=(corpus.id_column, corpus.text_column),
            reserved=TEXT_FIELD,
            payload_column=corpus.text_column,
            record_of=lambda row: _text_record(row, corpus),
            item_of=_text_item,
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
        record_of=lambda row: _image_table_record(row, corpus),
        item_of=lambda record, typed: _image_item(record, typed, base),
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
    record_of: Callable[[TableRow], _Pending | BadItem],
    item_of: Callable[[_Pending, dict[str, FieldValue]], TextItem | ImageItem],
    declared: Mapping[str, FieldType],
    limit: int | None,
    progress: bool,
) -> CorpusStream:
    bad: list[BadItem] = []
    names = _FieldNames(path)
    read = 0

    with open_table(path) as table:
        _require_columns(table, [name for name in own_columns if name is not None])
        _header_names(table, names, own_columns)
        names.check(reserved, payload_column, declared if table.columns else {})

        def survivors() -> Iterator[RawRecord]:
            nonlocal read
            for row in _rows(table, limit, progress):
                read += 1
                record = record_of(row)
                if isinstance(record, BadItem):
                    bad.append(record)
                    continue
                names.add(record.metadata, _origin(row))
                yield RawRecord(record.metadata, record.text_values)

        schema = _item_schema(survivors(), declared, reserved)
    names.check(reserved, payload_column, declared)

    def items() -> Iterator[TextItem | ImageItem]:
        first_of: dict[str, ItemOrigin] = {}
        count = 0
        with open_table(path) as table:
            for row in _rows(table, limit, progress=False):
                count += 1
                record = record_of(row)
                if isinstance(record, BadItem):
                    continue  # listed by the first pass
                typed = _type_record(record, schema, first_of)
                if isinstance(typed, BadItem):
                    bad.append(typed)
                    continue
                yield item_of(record, typed)
        if count != read:
            raise CorpusError(f"{path} changed while it was read ({read} records, then {count})")

    return CorpusStream(schema, read, bad, {}, items)
