"""The sidecar table of a folder of images: metadata rows joined to the images by a ``path``
column, the image's path relative to the folder (``./`` allowed).

A row joins at most one image and an image at most one row; a row naming no image of the folder
(a path outside it, a file that is not there), a second row for one image, a row without a
path or a malformed row is a bad item of its own. An image without a row has only ``path``.
"""

from __future__ import annotations

from collections.abc import Mapping

from formats.field_types import FieldType
from formats.image_folder import relative_image_path
from formats.tables import open_table
from index_builder.corpus import ImageFolderCorpus
from index_builder.items import BadItem, ItemOrigin, Problem
from index_builder.record_typing import FieldNames, PendingRecord
from index_builder.table_rows import limited_rows, path_of, require_columns, row_origin

PATH_FIELD = "path"
"""The sidecar's join column, and the images' own metadata field."""


def sidecar_rows(
    corpus: ImageFolderCorpus,
    known: set[str],
    declared: Mapping[str, FieldType],
    bad: list[BadItem],
    progress: bool,
) -> dict[str, PendingRecord]:
    """The sidecar's rows by the relative path of the image they join (one of ``known``);
    rows that join none go to ``bad``. Empty without a sidecar."""
    sidecar = corpus.metadata
    rows: dict[str, PendingRecord] = {}
    if sidecar is None:
        return rows
    names = FieldNames(sidecar)
    with open_table(sidecar) as table:
        require_columns(table, [PATH_FIELD])
        names.add_header(table, (PATH_FIELD,))
        names.check(PATH_FIELD, PATH_FIELD, declared if table.columns else {})
        for row in limited_rows(table, None, progress):
            origin = row_origin(row)
            if row.error is not None:
                bad.append(BadItem(origin, Problem.MALFORMED_RECORD, row.error))
                continue
            written, problem = path_of(row.values.get(PATH_FIELD), PATH_FIELD)
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
            rows[relative] = PendingRecord(origin, relative, relative, metadata, row.text_values)
    names.check(PATH_FIELD, PATH_FIELD, declared)
    return rows
