"""A folder's sidecar table joined to its images by relative path: one row per image, rows that
join none are bad items of their own."""

from __future__ import annotations

from pathlib import Path

import pytest

from index_builder.corpus import ImageFolderCorpus
from index_builder.field_schema import CorpusError
from index_builder.items import BadItem, Problem
from index_builder.readers import read_image_folder
from index_builder.sidecar import sidecar_rows
from tests.fakes.user_corpora import write_csv, write_image, write_jsonl


def test_sidecar_rows_are_matched_by_relative_path(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    write_image(folder / "a.png", "red", "PNG")
    write_image(folder / "sub" / "b.png", "blue", "PNG")
    write_image(folder / "c.png", "green", "PNG")
    sidecar = write_jsonl(
        tmp_path / "meta.jsonl",
        [
            {"path": "a.png", "label": "x"},
            {"path": "./sub/b.png", "label": "y", "n": 2},
            {"path": "a.png", "label": "again"},
            {"path": "/etc/passwd"},
            {"path": "../photos/a.png"},
            {"label": "no path"},
            {"path": "missing.png"},
            "{oops",
        ],
    )
    read = read_image_folder(ImageFolderCorpus(folder, metadata=sidecar))
    assert [item.item_id for item in read.items] == ["a.png", "c.png", "sub/b.png"]
    assert [item.metadata for item in read.items] == [
        {"path": "a.png", "label": "x"},
        {"path": "c.png"},
        {"path": "sub/b.png", "label": "y", "n": 2},
    ]
    assert read.items[0].origin.location == f"{sidecar}:1"
    assert read.items[1].origin.location == f"{folder}/c.png"
    assert read.items[1].file == folder / "c.png"
    assert [(bad.origin.line, bad.problem) for bad in read.bad] == [
        (3, Problem.DUPLICATE_ID),
        (4, Problem.MISSING_IMAGE),
        (5, Problem.MISSING_IMAGE),
        (6, Problem.MISSING_PATH),
        (7, Problem.MISSING_IMAGE),
        (8, Problem.MALFORMED_RECORD),
    ]
    assert read.read == 3 + 6  # every image once, every sidecar row that matched none


def test_the_rows_by_image_and_their_reasons(tmp_path: Path) -> None:
    sidecar = write_csv(
        tmp_path / "meta.csv", ["path", "colour"], [["./a.png", "red"], ["b.png", "blue"]]
    )
    bad: list[BadItem] = []
    corpus = ImageFolderCorpus(tmp_path / "photos", metadata=sidecar)
    rows = sidecar_rows(corpus, {"a.png"}, {}, bad, progress=False)
    assert list(rows) == ["a.png"]
    assert rows["a.png"].metadata == {"colour": "red"}
    assert rows["a.png"].text_values  # CSV cells, typed later
    assert rows["a.png"].origin.location == f"{sidecar}:2"
    assert [(item.problem, item.reason) for item in bad] == [
        (Problem.MISSING_IMAGE, f"no image b.png in {tmp_path / 'photos'}")
    ]
    assert sidecar_rows(ImageFolderCorpus(tmp_path), set(), {}, bad, progress=False) == {}


def test_a_sidecar_needs_a_path_column(tmp_path: Path) -> None:
    write_image(tmp_path / "photos" / "a.png", "red", "PNG")
    sidecar = write_csv(tmp_path / "meta.csv", ["file", "label"], [["a.png", "x"]])
    with pytest.raises(CorpusError, match=r"missing column\(s\) \['path'\]"):
        read_image_folder(ImageFolderCorpus(tmp_path / "photos", metadata=sidecar))
