"""Reading user corpora into items: per-record checks, sidecar matching, paths, column rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.field_types import FieldType
from index_builder.field_schema import CorpusError
from index_builder.items import Problem
from index_builder.sources import (
    ImageFolderCorpus,
    ImageTable,
    TextTable,
    read_corpus,
    read_image_folder,
    read_image_table,
    read_text_table,
)
from tests.fakes.user_corpora import write_csv, write_image, write_jsonl


def test_text_items_carry_their_text_and_origin(tmp_path: Path) -> None:
    table = write_jsonl(
        tmp_path / "t.jsonl", [{"id": "a", "text": "red", "n": 1}, {"id": 2, "text": "x"}]
    )
    read = read_text_table(TextTable(table))
    assert read.read == 2
    assert [item.item_id for item in read.items] == ["a", "2"]
    assert read.items[0].metadata == {"text": "red", "n": 1}
    assert read.items[0].origin.location == f"{table}:1"
    assert read.schema.types == {"text": FieldType.STRING, "n": FieldType.INTEGER}


def test_wrong_typed_ids_and_texts(tmp_path: Path) -> None:
    table = write_jsonl(
        tmp_path / "t.jsonl",
        [{"id": 1.5, "text": "a"}, {"id": True, "text": "b"}, {"id": "c", "text": 7}],
    )
    read = read_text_table(TextTable(table))
    assert [(bad.problem, bad.reason) for bad in read.bad] == [
        (Problem.WRONG_TYPE, "id column 'id' holds a float, not a string or an integer"),
        (Problem.WRONG_TYPE, "id column 'id' holds a bool, not a string or an integer"),
        (Problem.WRONG_TYPE, "text column 'text' holds a int, not a string"),
    ]


def test_jsonl_keys_are_checked_as_field_names(tmp_path: Path) -> None:
    table = write_jsonl(
        tmp_path / "t.jsonl", [{"id": "a", "text": "x"}, {"id": "b", "text": "y", "Bad Key": 1}]
    )
    with pytest.raises(CorpusError, match="'Bad Key' is not a field name"):
        read_text_table(TextTable(table))


def test_a_declared_field_must_exist(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "x"}])
    with pytest.raises(CorpusError, match="--field price: no record has that field"):
        read_text_table(TextTable(table), declared={"price": FieldType.FLOAT})
    csv_table = write_csv(tmp_path / "t.csv", ["id", "text"], [["a", "x"]])
    with pytest.raises(CorpusError, match="--field price: no record has that field"):
        read_text_table(TextTable(csv_table), declared={"price": FieldType.FLOAT})
    with pytest.raises(CorpusError, match="the items' text is always a string"):
        read_text_table(TextTable(table), declared={"text": FieldType.INTEGER})
    assert read_text_table(TextTable(table), declared={"text": FieldType.STRING}).items


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


def test_a_sidecar_needs_a_path_column(tmp_path: Path) -> None:
    write_image(tmp_path / "photos" / "a.png", "red", "PNG")
    sidecar = write_csv(tmp_path / "meta.csv", ["file", "label"], [["a.png", "x"]])
    with pytest.raises(CorpusError, match=r"missing column\(s\) \['path'\]"):
        read_image_folder(ImageFolderCorpus(tmp_path / "photos", metadata=sidecar))


def test_a_folder_limit_takes_the_first_images(tmp_path: Path) -> None:
    for name in ["c.png", "a.png", "b.png"]:
        write_image(tmp_path / "photos" / name, "red", "PNG")
    read = read_image_folder(ImageFolderCorpus(tmp_path / "photos"), limit=2)
    assert [item.item_id for item in read.items] == ["a.png", "b.png"]
    assert read.read == 2
    assert read.notes == {"other_files": 0, "images_beyond_limit": 1}


def test_image_table_paths_are_relative_to_the_table(tmp_path: Path) -> None:
    (tmp_path / "tables").mkdir()
    table = write_csv(tmp_path / "tables" / "t.csv", ["path", "n"], [["img/a.png", "1"]])
    read = read_image_table(ImageTable(table))
    assert read.items[0].file == tmp_path / "tables" / "img" / "a.png"
    assert read.items[0].item_id == "img/a.png"
    assert read.items[0].metadata == {"path": "img/a.png", "n": 1}


def test_an_image_table_may_not_redefine_path(tmp_path: Path) -> None:
    table = write_csv(tmp_path / "t.csv", ["file", "path"], [["a.png", "x"]])
    with pytest.raises(CorpusError, match="a column 'path' would clash"):
        read_image_table(ImageTable(table, path_column="file"))


def test_read_corpus_dispatches(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "x"}])
    assert read_corpus(TextTable(table)).read == 1
    write_image(tmp_path / "p" / "a.png", "red", "PNG")
    assert read_corpus(ImageFolderCorpus(tmp_path / "p")).read == 1
    images = write_jsonl(tmp_path / "i.jsonl", [{"path": "p/a.png"}])
    assert read_corpus(ImageTable(images)).read == 1
