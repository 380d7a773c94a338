"""Reading corpora into items: per-record checks of tables, paths of image tables, folder
limits, column rules, and the dispatch over every corpus kind and collection."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.field_types import FieldType
from formats.karpathy import read_captions
from formats.layout import captions_path, images_dir
from index_builder.corpus import ImageFolderCorpus, ImageTable, KarpathyCaptions, TextTable
from index_builder.field_schema import CorpusError
from index_builder.items import ImageItem, Problem, TextItem
from index_builder.preconditions import CollectionPlan
from index_builder.readers import (
    read_collection,
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
    assert read.schema is not None
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
        (Problem.WRONG_TYPE, "text column 'text' holds an int, not a string"),
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


def test_a_folder_limit_takes_the_first_images(tmp_path: Path) -> None:
    for name in ["c.png", "a.png", "b.png"]:
        write_image(tmp_path / "photos" / name, "red", "PNG")
    read = read_image_folder(ImageFolderCorpus(tmp_path / "photos"), limit=2)
    assert [item.item_id for item in read.items] == ["a.png", "b.png"]
    assert read.items[0].file == tmp_path / "photos" / "a.png"
    assert read.read == 2
    assert read.notes == {"other_files": 0, "images_beyond_limit": 1}


def test_image_table_paths_are_relative_to_the_table(tmp_path: Path) -> None:
    (tmp_path / "tables").mkdir()
    table = write_csv(tmp_path / "tables" / "t.csv", ["path", "n"], [["img/a.png", "1"]])
    read = read_image_table(ImageTable(table))
    assert read.items[0].file == tmp_path / "tables" / "img" / "a.png"
    assert read.items[0].item_id == "img/a.png"
    assert read.items[0].metadata == {"path": "img/a.png", "n": 1}
    assert read.items[0].origin.path == "img/a.png"


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


def test_read_collection_reads_the_planned_collection(tiny_corpus: Path, tmp_path: Path) -> None:
    source = captions_path(tiny_corpus, "val")
    corpus = KarpathyCaptions(read_captions(source), source, images_dir(tiny_corpus, "val"))
    captions = read_collection(corpus, CollectionPlan("captions", "text"), limit=4)
    assert captions.read == 4
    assert all(isinstance(item, TextItem) for item in captions.items)
    assert captions.schema is None  # typed by the stored values
    images = read_collection(corpus, CollectionPlan("images", "image"))
    assert [item.item_id for item in images.items] == [f"img_{i:012d}.png" for i in range(3)]
    assert all(isinstance(item, ImageItem) for item in images.items)
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "x"}, {"id": "b", "text": ""}])
    things = read_collection(TextTable(table), CollectionPlan("things", "text"))
    assert (things.read, len(things.items), len(things.bad)) == (2, 1, 1)
