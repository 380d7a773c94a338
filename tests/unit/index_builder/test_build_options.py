"""The build's options as both commands parse them: which options fit which input, and what
they become — the corpus (``--captions`` read and cut to ``--limit``) and the ingest options."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from formats.layout import captions_path, images_dir
from index_builder.bad_item_policy import OnError
from index_builder.build_options import (
    add_build_arguments,
    corpus_from,
    index_spec,
    ingest_options,
    input_kind,
    positive_int,
)
from index_builder.corpus import ImageFolderCorpus, ImageTable, KarpathyCaptions, TextTable


def _parser(*, images_dir: bool = True) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="build")
    add_build_arguments(
        parser, captions_help="captions", images_dir=images_dir, limit_type=positive_int
    )
    return parser


def _parse(*argv: str, images_dir: bool = True) -> tuple[argparse.Namespace, str]:
    parser = _parser(images_dir=images_dir)
    args = parser.parse_args(["--variant", "v", "--name", "My-Shop", *argv])
    return args, input_kind(parser, args)


def test_captions_are_read_and_cut_to_the_limit(tiny_corpus: Path) -> None:
    source = captions_path(tiny_corpus, "val")
    folder = images_dir(tiny_corpus, "val")
    args, kind = _parse("--captions", str(source), "--images-dir", str(folder), "--limit", "3")
    corpus = corpus_from(args, kind)
    assert isinstance(corpus, KarpathyCaptions)
    assert [record.key for record in corpus.records] == [
        "tiny:sentid:0",
        "tiny:sentid:1",
        "tiny:sentid:10",
    ]
    assert (corpus.source, corpus.images_dir) == (source, folder)
    # A parser without --images-dir (the distributed build's) gives no images folder.
    args, kind = _parse("--captions", str(source), images_dir=False)
    corpus = corpus_from(args, kind)
    assert isinstance(corpus, KarpathyCaptions)
    assert (len(corpus.records), corpus.images_dir) == (6, None)


def test_the_other_corpora() -> None:
    args, kind = _parse("--texts", "t.csv", "--id-column", "sku")
    assert corpus_from(args, kind) == TextTable(Path("t.csv"), id_column="sku")
    args, kind = _parse("--images", "p", "--metadata", "m.csv")
    assert corpus_from(args, kind) == ImageFolderCorpus(Path("p"), metadata=Path("m.csv"))
    args, kind = _parse("--image-table", "i.jsonl", "--path-column", "file")
    assert corpus_from(args, kind) == ImageTable(Path("i.jsonl"), path_column="file")


def test_the_image_and_policy_options_fit_captions_too() -> None:
    args, kind = _parse(
        "--captions", "c.csv", "--on-error", "skip", "--max-image-bytes", "1000",
        "--max-image-pixels", "5000", "--limit", "10",
    )  # fmt: skip
    options = ingest_options(args, kind, index_spec(_parser(), args))
    assert options.collection == "captions"  # --captions names its collections itself
    assert options.on_error is OnError.SKIP
    assert (options.limits.max_bytes, options.limits.max_pixels) == (1000, 5000)
    assert (options.limit, options.factory, options.index) == (10, "Flat", None)


def test_options_of_another_input_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for argv, message in [
        (("--captions", "c.csv", "--collection", "x"), "--collection goes with --texts"),
        (("--captions", "c.csv", "--field", "n:integer"), "--field goes with --texts"),
        (("--texts", "t.csv", "--images-dir", "d"), "--images-dir goes with --captions"),
    ]:
        with pytest.raises(SystemExit):
            _parse(*argv)
        assert message in capsys.readouterr().err


def test_a_collection_name_from_the_bundle_name() -> None:
    args, kind = _parse("--texts", "t.csv")
    assert ingest_options(args, kind, None).collection == "my_shop"
    args, kind = _parse("--texts", "t.csv", "--collection", "pets")
    assert ingest_options(args, kind, None).collection == "pets"
