"""Rows in chunks."""

from __future__ import annotations

from studies.scale_simulation.dataset import CHUNK_ROWS, row_chunks


def test_row_chunks_cover_the_rows_once() -> None:
    assert list(row_chunks(5, 2)) == [(0, 2), (2, 4), (4, 5)]
    assert list(row_chunks(4, 2)) == [(0, 2), (2, 4)]
    assert list(row_chunks(0, 2)) == []
    assert list(row_chunks(CHUNK_ROWS + 1)) == [(0, CHUNK_ROWS), (CHUNK_ROWS, CHUNK_ROWS + 1)]
