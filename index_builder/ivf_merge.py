"""IVF indexes built from parts and merged into on-disk inverted lists (``<name>.ivfdata``).

The steps, each usable on its own so that the parts can be added by separate processes (the
distributed build adds them on Ray workers):

1. :func:`~storage.index_files.trained_empty_index` — train the quantizer once, on a
   sample of all rows;
2. :func:`add_part` / :func:`write_part` — add one part's vectors, with their global row
   numbers as ids, to a copy of the empty trained index (and write it to a file);
3. :func:`merge_part_files` — merge the parts' inverted lists into one
   ``faiss.OnDiskInvertedLists`` file, ``<name>.ivfdata``, and write ``<name>.faiss`` beside it.

:func:`write_ivf_from_parts` does 2 and 3 for parts given as arrays, in one process.

The merge is faiss's (``faiss.contrib.ondisk.merge_ondisk``: ``OnDiskInvertedLists``'s
``merge_from_multiple``), written out here so that the parts' memory-mapped lists are released
after the merge (the contrib helper leaves them owned by nobody, holding each part file open).

The ``.faiss`` file names its ``.ivfdata`` by the path it was written at; a bundle is written
under a temporary folder name and renamed, so it is read with ``faiss.IO_FLAG_ONDISK_SAME_DIR``
(the ``.ivfdata`` beside the ``.faiss``), as :func:`storage.index_files.read_on_disk_index` does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np


class IvfMergeError(ValueError):
    """Parts that cannot be merged: not IVF, not trained, wrong shape, or not in row order."""


@dataclass(frozen=True)
class OnDiskIvf:
    """A merged IVF index: ``index`` (searchable, its lists in ``ivfdata_file``), the file names
    written in the folder and the number of rows."""

    index: Any
    index_file: str
    ivfdata_file: str
    count: int


def _ivf_of(index: Any) -> Any:
    try:
        return faiss.extract_index_ivf(index)
    except RuntimeError as exc:
        raise IvfMergeError(f"not an IVF index: {exc}") from exc


def add_part(trained: Any, vectors: np.ndarray, first_row: int) -> Any:
    """A copy of the empty ``trained`` IVF index holding ``vectors`` as rows ``first_row`` … .

    ``vectors`` is float32 ``[n, d]`` with L2-normalised rows; their ids in the index are their
    global row numbers, so the merged index answers with the bundle's row numbers.
    """
    ivf = _ivf_of(trained)
    if not trained.is_trained or trained.ntotal != 0:
        raise IvfMergeError("parts are added to a trained, empty IVF index")
    data = np.ascontiguousarray(vectors, dtype=np.float32)
    if data.ndim != 2 or data.shape[1] != trained.d:
        raise IvfMergeError(f"a part must be [n, {trained.d}] vectors, got shape {data.shape}")
    if first_row < 0:
        raise IvfMergeError(f"first row {first_row} is negative")
    del ivf
    part = faiss.clone_index(trained)
    if len(data):
        part.add_with_ids(data, np.arange(first_row, first_row + len(data), dtype=np.int64))
    return part


def write_part(trained: Any, vectors: np.ndarray, first_row: int, path: Path) -> int:
    """:func:`add_part`, written to ``path`` (for a merge in another process); returns n."""
    part = add_part(trained, vectors, first_row)
    faiss.write_index(part, str(path))
    return int(part.ntotal)


def merge_part_files(
    trained: Any, part_files: Sequence[Path], folder: Path, name: str
) -> OnDiskIvf:
    """Merge part index files (from :func:`write_part`, rows in order without gaps) into
    ``folder/<name>.ivfdata`` and write ``folder/<name>.faiss``.

    ``trained`` is the empty trained index the parts were copied from (it is not changed).
    Raises :class:`IvfMergeError` when the parts' rows do not follow each other from 0.
    """
    if not part_files:
        raise IvfMergeError("no parts to merge")
    target = faiss.clone_index(trained)
    target_ivf = _ivf_of(target)
    if not target.is_trained or target.ntotal != 0:
        raise IvfMergeError("parts are merged into a trained, empty IVF index")
    parts = []
    expected = 0
    for path in part_files:
        part = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
        part_ivf = _ivf_of(part)
        if part_ivf.nlist != target_ivf.nlist or part_ivf.code_size != target_ivf.code_size:
            raise IvfMergeError(f"{path.name}: its lists do not match the trained index's")
        if part.ntotal:
            ids = _part_ids(part_ivf)
            if ids.min() != expected or ids.max() != expected + part.ntotal - 1:
                raise IvfMergeError(
                    f"{path.name}: holds rows {ids.min()}..{ids.max()}, expected rows from "
                    f"{expected} (parts must follow each other in row order)"
                )
        expected += int(part.ntotal)
        parts.append((part, part_ivf))
    ivfdata_file = f"{name}.ivfdata"
    index_file = f"{name}.faiss"
    lists = faiss.OnDiskInvertedLists(
        target_ivf.nlist, target_ivf.code_size, str(folder / ivfdata_file)
    )
    sources = faiss.InvertedListsPtrVector()  # type: ignore[attr-defined]
    for _, part_ivf in parts:
        sources.push_back(part_ivf.invlists)
    total = lists.merge_from_multiple(sources.data(), sources.size(), False)
    del sources, parts  # the parts' memory-mapped lists are freed with their indexes
    target.ntotal = target_ivf.ntotal = total
    target_ivf.replace_invlists(lists, True)
    lists.this.disown()  # type: ignore[attr-defined]  # owned by the index now
    faiss.write_index(target, str(folder / index_file))
    return OnDiskIvf(target, index_file, ivfdata_file, int(total))


def _part_ids(part_ivf: Any) -> np.ndarray:
    lists = part_ivf.invlists
    found = []
    for number in range(part_ivf.nlist):
        size = lists.list_size(number)
        if size:
            ids = faiss.rev_swig_ptr(lists.get_ids(number), size)
            found.append(np.array(ids, dtype=np.int64))
    return np.concatenate(found)


def write_ivf_from_parts(
    folder: Path, name: str, trained: Any, parts: Iterable[np.ndarray]
) -> OnDiskIvf:
    """Write ``folder/<name>.faiss`` and ``folder/<name>.ivfdata`` from vector parts.

    Contract:

    - ``trained`` is an empty, trained IVF index with the inner-product metric (train it once on
      a sample of all rows: :func:`storage.index_files.trained_empty_index`);
    - ``parts`` yields float32 ``[n_i, d]`` arrays, L2-normalised rows, **in row order**: the
      rows of part 0, then part 1, ...; concatenated they are the collection's rows, in the
      order of its ids file and ``vectors.npy`` (the caller keeps ids and vectors aligned; an
      empty part is allowed);
    - each part is added to a copy of ``trained`` with its global row numbers as ids, written to
      a scratch file under ``folder`` (removed before returning), and the parts are merged
      into one on-disk inverted-lists file; only one part is in memory at a time.

    ``folder`` is normally a bundle's staging folder: the ``.ivfdata`` must be hashed in the
    manifest and read back with ``IO_FLAG_ONDISK_SAME_DIR``
    (:func:`storage.index_files.read_on_disk_index`).
    """
    with tempfile.TemporaryDirectory(prefix=".ivf-parts-", dir=folder) as scratch:
        part_files = []
        first_row = 0
        for number, vectors in enumerate(parts):
            path = Path(scratch) / f"part-{number:05d}.faiss"
            first_row += write_part(trained, vectors, first_row, path)
            part_files.append(path)
        return merge_part_files(trained, part_files, folder, name)
