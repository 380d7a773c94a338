"""IVF parts merged into on-disk inverted lists answer as one in-memory IVF index does."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np
import pytest

from index_builder.ivf_merge import (
    IvfMergeError,
    merge_part_files,
    write_ivf_from_parts,
    write_part,
)
from storage.index_files import read_on_disk_index, trained_empty_index
from tests.unit.index_builder.hard_vectors import hard_vectors

ROWS = 3000


def test_three_parts_merged_on_disk_answer_like_one_index_and_survive_a_rename(
    tmp_path: Path,
) -> None:
    vectors = hard_vectors(ROWS, d=32, seed=3)
    trained = trained_empty_index("IVF32,Flat", vectors[::2])
    whole = faiss.clone_index(trained)  # the same trained quantizer
    whole.add(vectors)
    staging = tmp_path / ".tmp-v1"
    staging.mkdir()
    parts = [vectors[:1000], vectors[1000:1001], vectors[1001:]]
    merged = write_ivf_from_parts(staging, "items", trained, iter(parts))
    assert merged.count == ROWS
    assert sorted(path.name for path in staging.iterdir()) == ["items.faiss", "items.ivfdata"]
    assert trained.ntotal == 0, "the trained index is left empty for the next build"
    queries = hard_vectors(50, d=32, seed=4)
    for nprobe in (1, 4, 32):
        faiss.extract_index_ivf(whole).nprobe = nprobe
        faiss.extract_index_ivf(merged.index).nprobe = nprobe
        expected = whole.search(queries, 10)
        found = merged.index.search(queries, 10)
        np.testing.assert_array_equal(found[1], expected[1])
        np.testing.assert_array_equal(found[0], expected[0])
    del merged
    final = tmp_path / "v1"
    staging.rename(final)
    reread = read_on_disk_index(final / "items.faiss")
    faiss.extract_index_ivf(reread).nprobe = 4
    faiss.extract_index_ivf(whole).nprobe = 4
    np.testing.assert_array_equal(reread.search(queries, 10)[1], whole.search(queries, 10)[1])


def test_parts_out_of_row_order_are_refused(tmp_path: Path) -> None:
    vectors = hard_vectors(400, d=32, seed=5)
    trained = trained_empty_index("IVF4,Flat", vectors)
    write_part(trained, vectors[:200], 0, tmp_path / "a.faiss")
    write_part(trained, vectors[200:], 300, tmp_path / "b.faiss")
    with pytest.raises(IvfMergeError, match="expected rows from 200"):
        merge_part_files(trained, [tmp_path / "a.faiss", tmp_path / "b.faiss"], tmp_path, "x")


def test_only_an_empty_trained_ivf_index_takes_parts(tmp_path: Path) -> None:
    vectors = hard_vectors(400, d=32, seed=5)
    with pytest.raises(IvfMergeError, match="not an IVF index"):
        write_ivf_from_parts(tmp_path, "x", trained_empty_index("Flat", vectors), [vectors])
    filled = trained_empty_index("IVF4,Flat", vectors)
    filled.add(vectors)
    with pytest.raises(IvfMergeError, match="trained, empty"):
        write_ivf_from_parts(tmp_path, "x", filled, [vectors])
    with pytest.raises(IvfMergeError, match=r"\[n, 32\]"):
        write_ivf_from_parts(
            tmp_path, "x", trained_empty_index("IVF4,Flat", vectors), [vectors[:, :16]]
        )
