"""The two-pass streaming read (the distributed build's driver) agrees with the single-machine
read: the same schema, count, items in order and bad items, for every corpus kind."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.field_types import FieldType
from formats.karpathy import read_captions
from formats.layout import captions_path
from index_builder.corpus import Corpus, ImageFolderCorpus, ImageTable, KarpathyCaptions, TextTable
from index_builder.corpus_stream import stream_collection
from index_builder.field_schema import CorpusError
from index_builder.preconditions import CollectionPlan
from index_builder.readers import read_collection
from tests.fakes.user_corpora import write_csv, write_image, write_jsonl

TEXTS = CollectionPlan("things", "text")
IMAGES = CollectionPlan("things", "image")


def _same_read(corpus: Corpus, plan: CollectionPlan, **options: object) -> None:
    whole = read_collection(corpus, plan, **options)  # type: ignore[arg-type]
    stream = stream_collection(corpus, plan, **options)  # type: ignore[arg-type]
    assert stream.schema == whole.schema
    assert stream.read == whole.read
    streamed = list(stream.items())
    assert streamed == whole.items
    assert sorted(stream.bad, key=lambda item: item.sort_key()) == sorted(
        whole.bad, key=lambda item: item.sort_key()
    )
    assert stream.read == len(streamed) + len(stream.bad)


def test_streaming_reads_a_jsonl_table_as_the_single_machine_read(tmp_path: Path) -> None:
    rows: list[dict[str, object] | str] = [
        {"id": "a", "text": "a dog", "price": 3, "when": "2024-05-01"},
        {"id": "b", "text": "  ", "price": 2.5},
        '{"id": "broken',
        {"id": "a", "text": "again", "price": 1},
        {"id": "c", "text": "a cat", "price": "n/a", "tags": ["x"]},
        {"id": "d", "text": "a plane", "price": 7, "tags": ["y"]},
        {"id": 5, "text": "an int id"},
        {"text": "no id"},
    ]
    table = write_jsonl(tmp_path / "t.jsonl", rows)
    _same_read(TextTable(table), TEXTS)
    _same_read(TextTable(table), TEXTS, limit=4)
    _same_read(TextTable(table), TEXTS, declared={"price": FieldType.FLOAT})


def test_streaming_reads_csv_and_image_tables_as_the_single_machine_read(tmp_path: Path) -> None:
    csv_table = write_csv(
        tmp_path / "t.csv",
        ["sku", "description", "price"],
        [["1", "a dog", "2.5"], ["2", "", "3"], ["1", "dup", "4"], ["3", "cat", "x"]],
    )
    _same_read(TextTable(csv_table, id_column="sku", text_column="description"), TEXTS)
    write_image(tmp_path / "img" / "a.png", "red", "PNG")
    images = write_jsonl(
        tmp_path / "images.jsonl",
        [{"path": "img/a.png", "colour": "red"}, {"path": ""}, {"path": "img/b.png"}],
    )
    _same_read(ImageTable(images), IMAGES)
    _same_read(ImageFolderCorpus(tmp_path / "img"), IMAGES)
    with pytest.raises(CorpusError, match="missing column"):
        stream_collection(TextTable(csv_table), TEXTS)


def test_streaming_karpathy_captions_lists_their_records(tiny_corpus: Path) -> None:
    source = captions_path(tiny_corpus, "val")
    corpus = KarpathyCaptions(read_captions(source), source)
    _same_read(corpus, CollectionPlan("captions", "text"))
    _same_read(corpus, CollectionPlan("captions", "text"), limit=3)
    assert stream_collection(corpus, CollectionPlan("captions", "text")).schema is None


def test_a_table_that_changes_between_the_passes_is_an_error(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "x"}])
    stream = stream_collection(TextTable(table), TEXTS)
    write_jsonl(table, [{"id": "a", "text": "x"}, {"id": "b", "text": "y"}])
    with pytest.raises(CorpusError, match="changed while it was read"):
        list(stream.items())
