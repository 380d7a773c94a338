"""The corpus kinds: the input option each comes from, and what a report says each read."""

from __future__ import annotations

from pathlib import Path

from formats.hashing import sha256_file
from formats.karpathy import read_captions
from formats.layout import captions_path, images_dir
from index_builder.corpus import (
    ImageFolderCorpus,
    ImageTable,
    KarpathyCaptions,
    TextTable,
    corpus_inputs,
    corpus_kind,
)
from tests.fakes.user_corpora import write_csv, write_jsonl


def test_each_kind_is_its_input_option(tmp_path: Path) -> None:
    assert corpus_kind(TextTable(tmp_path / "t.jsonl")) == "texts"
    assert corpus_kind(ImageFolderCorpus(tmp_path)) == "images"
    assert corpus_kind(ImageTable(tmp_path / "i.csv")) == "image_table"
    assert corpus_kind(KarpathyCaptions([], tmp_path / "c.csv")) == "captions"


def test_inputs_name_the_files_read_with_their_hashes(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "x"}])
    assert corpus_inputs(TextTable(table, text_column="body")) == {
        "texts": str(table), "sha256": sha256_file(table), "id_column": "id",
        "text_column": "body",
    }  # fmt: skip
    images = write_csv(tmp_path / "i.csv", ["path"], [["a.png"]])
    assert corpus_inputs(ImageTable(images, id_column="sku")) == {
        "image_table": str(images), "sha256": sha256_file(images), "path_column": "path",
        "id_column": "sku",
    }  # fmt: skip
    assert corpus_inputs(ImageFolderCorpus(tmp_path)) == {"images": str(tmp_path)}
    assert corpus_inputs(ImageFolderCorpus(tmp_path, metadata=images)) == {
        "images": str(tmp_path), "metadata": str(images), "metadata_sha256": sha256_file(images),
    }  # fmt: skip


def test_karpathy_inputs_name_the_csv_the_records_and_the_images(tiny_corpus: Path) -> None:
    source = captions_path(tiny_corpus, "val")
    records = read_captions(source)[:4]
    assert corpus_inputs(KarpathyCaptions(records, source)) == {
        "captions": str(source), "sha256": sha256_file(source), "records": 4,
    }  # fmt: skip
    folder = images_dir(tiny_corpus, "val")
    assert corpus_inputs(KarpathyCaptions(records, source, folder))["images_dir"] == str(folder)
