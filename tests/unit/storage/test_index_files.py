"""faiss index files: inner product for every factory, read back mapped or from on-disk lists,
search parameters set and read by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from storage.index_files import (
    build_index,
    read_index,
    search_parameter,
    set_search_parameter,
    trained_empty_index,
    write_index,
)


def unit_rows(n: int, d: int = 8, seed: int = 0) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((n, d)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


@pytest.mark.parametrize("factory", ["Flat", "HNSW8", "IVF4,Flat"])
def test_every_factory_scores_by_inner_product(factory: str) -> None:
    rows = unit_rows(200)
    index = build_index(rows, factory)
    if factory.startswith("IVF"):
        set_search_parameter(index, "nprobe", 4)
    scores, found = index.search(rows[:3], 1)
    assert found[:, 0].tolist() == [0, 1, 2]
    np.testing.assert_allclose(scores[:, 0], 1.0, atol=1e-5)


def test_a_written_flat_index_reads_back_the_same_answers(tmp_path: Path) -> None:
    rows = unit_rows(50)
    write_index(build_index(rows), tmp_path / "c.faiss")
    read = read_index(tmp_path / "c.faiss")
    assert read.ntotal == 50
    assert read.search(rows[:5], 3)[1].tolist() == build_index(rows).search(rows[:5], 3)[1].tolist()


def test_search_parameters_by_name() -> None:
    ivf = build_index(unit_rows(200), "IVF4,Flat")
    set_search_parameter(ivf, "nprobe", 3)
    assert search_parameter(ivf, "nprobe") == 3
    hnsw = build_index(unit_rows(50), "HNSW8")
    set_search_parameter(hnsw, "efSearch", 77)
    assert search_parameter(hnsw, "efSearch") == 77


def test_refusals() -> None:
    with pytest.raises(ValueError, match="cannot build factory string"):
        build_index(unit_rows(10), "NotAFactory")
    with pytest.raises(ValueError, match="non-empty"):
        trained_empty_index("Flat", np.zeros((0, 8), np.float32))
    with pytest.raises(ValueError, match=r"\[n, d\]"):
        build_index(np.zeros(8, np.float32))
