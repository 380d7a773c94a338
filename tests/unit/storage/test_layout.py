"""The bundle layout's names: version names sort by time, file names per collection."""

from __future__ import annotations

from datetime import UTC, datetime

from storage.layout import (
    COLLECTION_PATTERN,
    VERSION_PATTERN,
    columns_file,
    ids_file,
    index_file,
    new_version_name,
    thumbnail_files,
    vectors_file,
)


def test_version_names_are_valid_and_sort_by_time() -> None:
    early = new_version_name(datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC))
    late = new_version_name(datetime(2026, 11, 27, 0, 0, 0, tzinfo=UTC))
    assert early == "20260102T030405000006Z"
    assert early < late
    assert VERSION_PATTERN.match(new_version_name())


def test_a_collection_s_files() -> None:
    assert index_file("captions") == "captions.faiss"
    assert ids_file("captions") == "captions.ids.jsonl"
    assert vectors_file("captions") == "captions.vectors.npy"
    assert columns_file("captions") == "captions.columns.npz"
    assert thumbnail_files("images") == ("images.thumbnails.bin", "images.thumbnails.npy")


def test_names_that_cannot_be_folders_or_collections() -> None:
    for bad in ("", ".hidden", "a/b", "x" * 129):
        assert not VERSION_PATTERN.match(bad)
    for bad in ("Captions", "1st", "with-dash", "a" * 65):
        assert not COLLECTION_PATTERN.match(bad)
    assert COLLECTION_PATTERN.match("my_products_v2")
