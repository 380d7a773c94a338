"""Building bundles from every corpus kind: texts (JSONL, CSV, Parquet), image folders, image
tables and Karpathy captions with their images, with every kind of bad record refused (file,
line/path, reason) or skipped and listed in the build report; an interrupted build leaves the
previous version serving."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from PIL import Image

from encoders.image_decode import ImageLimits
from encoders.text_encoder import OnnxTextEncoder
from formats.field_types import FieldType
from formats.hashing import sha256_file
from formats.karpathy import read_captions
from formats.layout import captions_path, images_dir
from index_builder.bad_item_policy import BuildRefusedError, OnError
from index_builder.build_report import REPORT_FILE
from index_builder.corpus import Corpus, ImageFolderCorpus, ImageTable, KarpathyCaptions, TextTable
from index_builder.field_schema import CorpusError
from index_builder.ingest import IngestOptions, IngestResult, ingest
from storage.layout import CURRENT_FILE
from storage.manifest import verify_bundle
from storage.reader import load_bundle, resolve_current
from tests.fakes.fake_encoders import (
    COLOURS,
    FakeImageEncoder,
    FakeTextEncoder,
    embed_bag_of_words,
)
from tests.fakes.image_files import png_declaring, truncated_jpeg
from tests.fakes.tiny_variant import make_tiny_variant
from tests.fakes.user_corpora import (
    truncated_png,
    write_csv,
    write_image,
    write_jsonl,
    write_parquet,
)
from tests.unit.index_builder.captions_bundle import build_captions_bundle

SMALL_LIMITS = ImageLimits(max_bytes=1 << 20, max_pixels=1_000_000)


def _fake_encoders(corpus: Corpus) -> tuple[FakeTextEncoder | None, FakeImageEncoder | None]:
    """The towers a corpus needs: both for Karpathy captions with their images."""
    if isinstance(corpus, TextTable):
        return FakeTextEncoder(), None
    if isinstance(corpus, KarpathyCaptions):
        images = FakeImageEncoder() if corpus.images_dir is not None else None
        return FakeTextEncoder(), images
    return None, FakeImageEncoder()


def _build(
    corpus: Corpus,
    tmp_path: Path,
    *,
    on_error: OnError = OnError.SKIP,
    fields: dict[str, FieldType] | None = None,
    text_encoder: FakeTextEncoder | None = None,
    image_encoder: FakeImageEncoder | None = None,
    version: str = "v1",
    limits: ImageLimits = SMALL_LIMITS,
    **options: object,
) -> IngestResult:
    if text_encoder is None and image_encoder is None:
        text_encoder, image_encoder = _fake_encoders(corpus)
    return ingest(
        corpus,
        text_encoder=text_encoder,
        image_encoder=image_encoder,
        bundles_root=tmp_path / "bundles",
        name="corpus",
        version=version,
        options=IngestOptions(
            collection="things",
            on_error=on_error,
            fields=fields or {},
            limits=limits,
            progress=False,
            **options,  # type: ignore[arg-type]
        ),
    )


def _report(result: IngestResult, collection: str = "things") -> dict[str, Any]:
    """The report's entry for ``collection``, after checking that nothing vanishes."""
    document = json.loads((result.version_dir / REPORT_FILE).read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    assert document["schema_version"] == 2
    entries = document["collections"]
    for entry in entries.values():
        counts = entry["counts"]
        assert counts["read"] == counts["indexed"] + counts["skipped"]  # nothing vanishes
        skipped = entry["skipped"]
        assert counts["skipped"] == len(skipped) == sum(entry["skipped_by_problem"].values())
    assert document["counts"] == {
        key: sum(entry["counts"][key] for entry in entries.values())
        for key in ("read", "indexed", "skipped")
    }
    report = entries[collection]
    assert isinstance(report, dict)
    return report


def _refusal(corpus: Corpus, tmp_path: Path, **kwargs: object) -> BuildRefusedError:
    with pytest.raises(BuildRefusedError) as refused:
        _build(corpus, tmp_path, on_error=OnError.REFUSE, **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "bundles" / "corpus").exists()  # nothing written
    return refused.value


# --- a JSONL table of texts with every kind of bad line -------------------------------------


@pytest.fixture
def texts_jsonl(tmp_path: Path) -> Path:
    return write_jsonl(
        tmp_path / "items.jsonl",
        [
            {"id": "t1", "text": "a red dog", "price": 3, "tags": ["pet"],
             "added": "2024-05-01T14:00:00+02:00", "in_stock": True},
            {"id": "t2", "text": "a blue cat", "price": 2.5, "in_stock": False},
            {"id": "t1", "text": "the same id again"},
            {"id": "t4", "price": 1},
            {"id": "t5", "text": "   "},
            '{"id": "t6", "text": ',
            {"text": "who am i"},
            {"id": "t8", "text": "a green sofa", "price": "n/a"},
            "",
            {"id": "t10", "text": "a yellow plane", "price": None},
            {"id": 11, "text": "an integer id"},
        ],
    )  # fmt: skip


def test_a_jsonl_table_with_bad_lines_is_refused_with_file_line_and_reason(
    texts_jsonl: Path, tmp_path: Path
) -> None:
    encoder = FakeTextEncoder()
    refused = _refusal(TextTable(texts_jsonl), tmp_path, text_encoder=encoder)
    assert encoder.calls == []  # refused before embedding
    assert refused.read == 10
    lines = refused.lines()
    assert lines[0].startswith("refused: 6 of 10 records are bad; nothing was embedded")
    assert lines[1:] == [
        f"  {texts_jsonl}:3: duplicate id (first at {texts_jsonl}:1) (id 't1')",
        f"  {texts_jsonl}:4: no text (column 'text' is missing or null) (id 't4')",
        f"  {texts_jsonl}:5: empty text (column 'text' is blank) (id 't5')",
        f"  {texts_jsonl}:6: malformed JSON at column 22: Expecting value",
        f"  {texts_jsonl}:7: no id (column 'id' is missing or empty)",
        f"  {texts_jsonl}:8: field price (float, inferred): 'n/a' is not a float (id 't8')",
    ]


def test_a_jsonl_table_with_bad_lines_skips_and_reports_them(
    texts_jsonl: Path, tmp_path: Path
) -> None:
    result = _build(TextTable(texts_jsonl), tmp_path)
    report = _report(result)
    assert report["counts"] == {"read": 10, "indexed": 4, "skipped": 6}
    assert report["skipped_by_problem"] == {
        "duplicate_id": 1, "empty_text": 1, "malformed_record": 1, "missing_id": 1,
        "missing_text": 1, "wrong_type": 1,
    }  # fmt: skip
    skipped = report["skipped"]
    assert isinstance(skipped, list)
    assert skipped[0] == {
        "source": str(texts_jsonl), "line": 3, "id": "t1", "problem": "duplicate_id",
        "reason": f"duplicate id (first at {texts_jsonl}:1)",
    }  # fmt: skip
    assert [entry["line"] for entry in skipped] == [3, 4, 5, 6, 7, 8]
    assert report["fields"] == {
        "text": "string", "price": "float", "tags": "list[string]", "added": "timestamp",
        "in_stock": "boolean",
    }  # fmt: skip
    assert result.report.on_error == "skip"
    assert set(report["timings_s"]) == {"read", "embed"}
    assert set(result.report.timings()) == {"read", "embed", "total"}

    manifest = verify_bundle(result.version_dir)
    assert REPORT_FILE in manifest.files  # hashed with the other files
    assert manifest.build_info["counts"] == {"read": 10, "indexed": 4, "skipped": 6}
    assert manifest.build_info["collections"] == {
        "things": {"read": 10, "indexed": 4, "skipped": 6}
    }
    assert manifest.build_info["kind"] == "texts"
    assert manifest.collections["things"].fields["price"] is FieldType.FLOAT
    things = load_bundle(result.version_dir).collections["things"]
    assert things.ids == ["t1", "t2", "t10", "11"]
    assert things.metadata[0] == {
        "text": "a red dog", "price": 3.0, "tags": ["pet"], "added": "2024-05-01T12:00:00Z",
        "in_stock": True,
    }  # fmt: skip
    assert things.metadata[2] == {"text": "a yellow plane"}  # a null is no value
    np.testing.assert_array_equal(things.vectors[1], embed_bag_of_words("a blue cat"))


def test_a_clean_table_builds_under_refuse_with_a_report(tmp_path: Path) -> None:
    table = write_jsonl(
        tmp_path / "ok.ndjson", [{"id": "a", "text": "red"}, {"id": "b", "text": "blue"}]
    )
    result = _build(TextTable(table), tmp_path, on_error=OnError.REFUSE)
    report = _report(result)
    assert report["counts"] == {"read": 2, "indexed": 2, "skipped": 0}
    assert report["skipped"] == []
    assert result.report.summary()[0].startswith("things: read 2, indexed 2, skipped 0")
    assert resolve_current(tmp_path / "bundles" / "corpus") == result.version_dir


# --- CSV and Parquet tables of texts ---------------------------------------------------------


def test_a_csv_table_infers_types_from_the_cells(tmp_path: Path) -> None:
    table = write_csv(
        tmp_path / "items.csv",
        ["sku", "body", "price", "in_stock", "added", "tags", "zip", "rating"],
        [
            ["a", "a red\ndog", "3", "true", "2024-05-01", '["x", "y"]', "02134", "5"],
            ["b", "a blue cat", "2.5", "FALSE", "2024-05-02T10:00:00Z", "[]", "10001", ""],
            ["a", "duplicate", "1", "true", "2024-05-03", "[]", "1", "1"],
            ["", "no id", "1", "true", "2024-05-03", "[]", "1", "1"],
            ["e", "", "1", "true", "2024-05-03", "[]", "1", "1"],
            ["f", "declared wrong", "1", "true", "2024-05-03", "[]", "1", "great"],
        ],
    )  # fmt: skip
    corpus = TextTable(table, id_column="sku", text_column="body")
    result = _build(corpus, tmp_path, fields={"rating": FieldType.INTEGER})
    report = _report(result)
    assert report["counts"] == {"read": 6, "indexed": 2, "skipped": 4}
    # The first record spans lines 2-3 (a quoted newline): the next one starts on line 4.
    skipped = report["skipped"]
    assert isinstance(skipped, list)
    assert [(entry["line"], entry["problem"]) for entry in skipped] == [
        (5, "duplicate_id"), (6, "missing_id"), (7, "empty_text"), (8, "wrong_type"),
    ]  # fmt: skip
    assert skipped[3]["reason"] == "field rating (integer, declared): 'great' is not an integer"
    assert report["fields"] == {
        "text": "string", "rating": "integer", "price": "float", "in_stock": "boolean",
        "added": "timestamp", "tags": "list[string]", "zip": "string",
    }  # fmt: skip
    things = load_bundle(result.version_dir).collections["things"]
    assert things.ids == ["a", "b"]
    assert things.metadata[0] == {
        "text": "a red\ndog", "price": 3.0, "in_stock": True, "added": "2024-05-01T00:00:00Z",
        "tags": ["x", "y"], "zip": "02134", "rating": 5,
    }  # fmt: skip
    assert "rating" not in things.metadata[1]  # an empty cell is no value


def test_a_parquet_table_keeps_its_column_types(tmp_path: Path) -> None:
    import pyarrow as pa  # type: ignore[import-untyped]

    moment = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    table = write_parquet(
        tmp_path / "items.parquet",
        {
            "id": [1, 2, None, 4, 5, 6],
            "text": ["a red dog", "a blue cat", "no id", None, "", "a green sofa"],
            "stars": [5, 4, 3, 2, 1, None],
            "seen": [moment, moment, moment, moment, moment, moment],
            "tags": [["a"], [], ["b"], None, ["c"], ["d"]],
            "when": ["2024-05-01", "2024-05-02", "x", "x", "x", "soon"],
        },
        pa.schema([
            ("id", pa.int64()), ("text", pa.string()), ("stars", pa.int32()),
            ("seen", pa.timestamp("us", tz="UTC")), ("tags", pa.list_(pa.string())),
            ("when", pa.string()),
        ]),
    )  # fmt: skip
    corpus = TextTable(table)
    refused = _refusal(corpus, tmp_path, fields={"when": FieldType.TIMESTAMP})
    assert refused.lines()[1:] == [
        f"  {table}:row 3: no id (column 'id' is missing or empty)",
        f"  {table}:row 4: no text (column 'text' is missing or null) (id '4')",
        f"  {table}:row 5: empty text (column 'text' is blank) (id '5')",
        f"  {table}:row 6: field when (timestamp, declared): 'soon' is not an ISO-8601 "
        "timestamp (id '6')",
    ]
    result = _build(corpus, tmp_path, fields={"when": FieldType.TIMESTAMP})
    report = _report(result)
    assert report["counts"] == {"read": 6, "indexed": 2, "skipped": 4}
    assert report["skipped"][0] == {
        "source": str(table), "row": 3, "problem": "missing_id",
        "reason": "no id (column 'id' is missing or empty)",
    }  # fmt: skip
    assert report["fields"] == {
        "text": "string", "when": "timestamp", "stars": "integer", "seen": "timestamp",
        "tags": "list[string]",
    }  # fmt: skip
    things = load_bundle(result.version_dir).collections["things"]
    assert things.ids == ["1", "2"]
    assert things.metadata[0] == {
        "text": "a red dog", "stars": 5, "seen": "2024-05-01T12:00:00Z", "tags": ["a"],
        "when": "2024-05-01T00:00:00Z",
    }  # fmt: skip


def test_the_text_column_must_exist_and_text_may_not_be_redefined(tmp_path: Path) -> None:
    table = write_csv(tmp_path / "t.csv", ["id", "body", "text"], [["a", "red", "x"]])
    with pytest.raises(CorpusError, match=r"missing column\(s\) \['nope'\]"):
        _build(TextTable(table, text_column="text", id_column="nope"), tmp_path)
    with pytest.raises(CorpusError, match="a column 'text' would clash"):
        _build(TextTable(table, text_column="body"), tmp_path)
    bad_name = write_csv(tmp_path / "n.csv", ["id", "text", "Price"], [["a", "red", "1"]])
    with pytest.raises(CorpusError, match="'Price' is not a field name"):
        _build(TextTable(bad_name), tmp_path)
    assert not (tmp_path / "bundles").exists()


def test_limit_reads_only_the_first_records(texts_jsonl: Path, tmp_path: Path) -> None:
    report = _report(_build(TextTable(texts_jsonl), tmp_path, limit=3))
    assert report["counts"] == {"read": 3, "indexed": 2, "skipped": 1}


def test_nothing_usable_is_refused_even_when_skipping(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": ""}])
    with pytest.raises(BuildRefusedError, match="nothing to index"):
        _build(TextTable(table), tmp_path)
    assert not (tmp_path / "bundles" / "corpus").exists()


# --- a folder of images with a sidecar -------------------------------------------------------


@dataclass(frozen=True)
class Photos:
    folder: Path
    sidecar: Path


@pytest.fixture
def photos(tmp_path: Path) -> Photos:
    folder = tmp_path / "photos"
    write_image(folder / "shoes" / "red.jpg", "red", "JPEG")
    write_image(folder / "shoes" / "Blue.PNG", "blue", "PNG")
    write_image(folder / "green.webp", "green", "WEBP")
    write_image(folder / "anim.gif", "yellow", "GIF")  # a yellow frame, then a black one
    (folder / "notes.txt").write_text("not an image", encoding="utf-8")
    write_image(folder / ".thumbs" / "x.png", "red", "PNG")
    (folder / "broken.jpg").write_bytes(b"this is no image")
    (folder / "huge.png").write_bytes(png_declaring(2000, 2000))
    (folder / "cut.jpg").write_bytes(truncated_jpeg())  # so short its header is cut
    (folder / "cut.png").write_bytes(truncated_png())  # its header is whole, its pixels not
    sidecar = write_csv(
        tmp_path / "meta.csv",
        ["path", "colour", "price", "tags"],
        [
            ["shoes/red.jpg", "red", "10", '["shoe"]'],
            ["./shoes/Blue.PNG", "blue", "12.5", ""],
            ["gone.jpg", "white", "1", ""],
            ["green.webp", "green", "cheap", ""],
        ],
    )
    return Photos(folder, sidecar)


def test_an_image_folder_with_bad_files_is_refused_before_embedding(
    photos: Photos, tmp_path: Path
) -> None:
    encoder = FakeImageEncoder()
    corpus = ImageFolderCorpus(photos.folder, metadata=photos.sidecar)
    refused = _refusal(corpus, tmp_path, image_encoder=encoder, fields={"price": FieldType.FLOAT})
    assert encoder.calls == []
    lines = refused.lines()
    assert lines[0].startswith("refused: 5 of 9 records are bad")
    assert lines[1:] == [
        f"  {photos.sidecar}:4: no image gone.jpg in {photos.folder} (id 'gone.jpg')",
        f"  {photos.sidecar}:5: field price (float, declared): 'cheap' is not a float "
        "(id 'green.webp')",
        f"  {photos.folder}/broken.jpg: not an image in an accepted format (JPEG, PNG, WEBP, GIF)"
        " (id 'broken.jpg')",
        f"  {photos.folder}/cut.jpg: unreadable image: OSError: Truncated File Read (id 'cut.jpg')",
        f"  {photos.folder}/huge.png: image is 2000x2000 = 4000000 pixels; the limit is 1000000"
        " (--max-image-pixels) (id 'huge.png')",
    ]  # the truncated PNG is found only by decoding it: it is not listed yet


def test_an_image_folder_with_bad_files_skips_and_reports_them(
    photos: Photos, tmp_path: Path
) -> None:
    corpus = ImageFolderCorpus(photos.folder, metadata=photos.sidecar)
    result = _build(corpus, tmp_path, fields={"price": FieldType.FLOAT})
    report = _report(result)
    assert report["counts"] == {"read": 9, "indexed": 3, "skipped": 6}
    assert report["skipped_by_problem"] == {
        "unreadable_image": 3, "missing_image": 1, "oversized_image": 1, "wrong_type": 1,
    }  # fmt: skip
    by_id = {entry["id"]: entry for entry in report["skipped"]}
    assert by_id["cut.png"] == {
        "source": str(photos.folder), "path": "cut.png", "id": "cut.png",
        "problem": "unreadable_image", "reason": by_id["cut.png"]["reason"],
    }  # fmt: skip
    assert "corrupt or truncated" in by_id["cut.png"]["reason"]  # found while decoding
    assert "truncated" in by_id["cut.jpg"]["reason"].lower()  # found by its header
    assert by_id["gone.jpg"]["line"] == 4
    assert by_id["green.webp"] == {
        "source": str(photos.sidecar), "line": 5, "path": "green.webp", "id": "green.webp",
        "problem": "wrong_type",
        "reason": "field price (float, declared): 'cheap' is not a float",
    }  # fmt: skip
    assert report["notes"] == {"other_files": 1}
    assert report["fields"] == {
        "path": "string", "price": "float", "colour": "string", "tags": "list[string]",
    }  # fmt: skip

    images = load_bundle(result.version_dir).collections["things"]
    assert images.ids == ["anim.gif", "shoes/Blue.PNG", "shoes/red.jpg"]  # sorted ids
    assert images.metadata == [
        {"path": "anim.gif"},
        {"path": "shoes/Blue.PNG", "colour": "blue", "price": 12.5},
        {"path": "shoes/red.jpg", "colour": "red", "price": 10.0, "tags": ["shoe"]},
    ]
    # The GIF's first frame (yellow), not its second (black), was embedded.
    yellow = FakeImageEncoder().encode_images([Image.new("RGB", (16, 12), COLOURS["yellow"])])
    np.testing.assert_allclose(images.vectors[0], yellow[0], atol=1e-6)


def test_an_image_that_fails_to_decode_refuses_the_build_while_embedding(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "photos"
    for index in range(5):
        write_image(folder / f"{index}.png", "red", "PNG")
    (folder / "1.png").write_bytes(truncated_png())
    encoder = FakeImageEncoder()
    refused = _refusal(
        ImageFolderCorpus(folder), tmp_path, image_encoder=encoder, image_batch_size=2
    )
    assert encoder.calls  # embedding had started
    assert refused.lines()[0].startswith(
        "refused: 1 image(s) could not be decoded while embedding (the build stopped there"
    )
    assert refused.lines()[1].startswith(f"  {folder}/1.png: image data is corrupt or truncated")


def test_oversized_files_by_bytes(tmp_path: Path) -> None:
    folder = tmp_path / "photos"
    write_image(folder / "big.png", "red", "PNG", size=(200, 200))
    write_image(folder / "small.png", "red", "PNG")
    limit = (folder / "big.png").stat().st_size - 1
    result = _build(
        ImageFolderCorpus(folder),
        tmp_path,
        limits=ImageLimits(max_bytes=limit, max_pixels=10**6),
    )
    report = _report(result)
    assert [entry["problem"] for entry in report["skipped"]] == ["oversized_image"]
    assert f"the limit is {limit} (--max-image-bytes)" in report["skipped"][0]["reason"]


# --- a table of images -----------------------------------------------------------------------


def test_an_image_table_resolves_paths_and_reports_bad_rows(tmp_path: Path) -> None:
    write_image(tmp_path / "pics" / "a.png", "red", "PNG")
    elsewhere = write_image(tmp_path / "elsewhere" / "b.jpg", "blue", "JPEG")
    table = write_jsonl(
        tmp_path / "images.jsonl",
        [
            {"file": "pics/a.png", "sku": "A1", "colour": "red"},
            {"file": str(elsewhere), "sku": "B2"},
            {"file": "pics/missing.png", "sku": "C3"},
            {"sku": "D4"},
            {"file": "pics/a.png", "sku": "A1"},
            {"file": "pics/a.png"},
        ],
    )
    corpus = ImageTable(table, path_column="file", id_column="sku")
    refused = _refusal(corpus, tmp_path)
    assert refused.lines()[1:] == [
        f"  {table}:3: no such image file (id 'C3')",
        f"  {table}:4: no image path (column 'file' is missing or empty)",
        f"  {table}:5: duplicate id (first at {table}:1) (id 'A1')",
        f"  {table}:6: no id (column 'sku' is missing or empty)",
    ]
    result = _build(corpus, tmp_path)
    report = _report(result)
    assert report["counts"] == {"read": 6, "indexed": 2, "skipped": 4}
    assert report["skipped"][0] == {
        "source": str(table), "line": 3, "path": "pics/missing.png", "id": "C3",
        "problem": "missing_image", "reason": "no such image file",
    }  # fmt: skip
    images = load_bundle(result.version_dir).collections["things"]
    assert images.ids == ["A1", "B2"]
    assert images.metadata == [{"path": "pics/a.png", "colour": "red"}, {"path": str(elsewhere)}]


def test_an_image_table_ids_default_to_the_paths(tmp_path: Path) -> None:
    write_image(tmp_path / "a.png", "red", "PNG")
    table = write_csv(tmp_path / "images.csv", ["path", "kind"], [["a.png", "x"], ["a.png", "y"]])
    report = _report(_build(ImageTable(table), tmp_path))
    assert [entry["problem"] for entry in report["skipped"]] == ["duplicate_id"]


# --- Karpathy captions and their images: several collections, one report --------------------


def _karpathy(data: Path, *, images: bool = True) -> KarpathyCaptions:
    source = captions_path(data, "val")
    folder = images_dir(data, "val") if images else None
    return KarpathyCaptions(records=read_captions(source), source=source, images_dir=folder)


def test_karpathy_captions_and_their_images_in_one_bundle(
    tiny_corpus: Path, tmp_path: Path
) -> None:
    corpus = _karpathy(tiny_corpus)
    result = _build(corpus, tmp_path, on_error=OnError.REFUSE)

    bundle = load_bundle(result.version_dir)
    assert list(bundle.collections) == ["captions", "images"]
    captions, images = bundle.collections["captions"], bundle.collections["images"]
    assert captions.ids == [record.key for record in corpus.records]
    assert captions.metadata[1] == {
        "text": "a dog number 0 caption 1", "image_id": 0, "filename": "img_000000000000.png",
        "sentid": 1,
    }  # fmt: skip
    np.testing.assert_array_equal(captions.vectors[3], embed_bag_of_words(corpus.records[3].text))
    assert images.ids == [f"img_{index:012d}.png" for index in range(3)]
    assert images.metadata[1] == {
        "image_id": 1, "filename": "img_000000000001.png",
        "captions": ["tiny:sentid:10", "tiny:sentid:11"],
    }  # fmt: skip
    assert images.thumbnails is not None
    # No declared types: the stored values type the fields, as the bundle writer infers them.
    manifest = verify_bundle(result.version_dir)
    assert manifest.collections["captions"].fields == {
        "filename": FieldType.STRING, "image_id": FieldType.INTEGER,
        "sentid": FieldType.INTEGER, "text": FieldType.STRING,
    }  # fmt: skip
    assert list(manifest.collections["images"].fields) == ["captions", "filename", "image_id"]

    assert _report(result, "captions")["counts"] == {"read": 6, "indexed": 6, "skipped": 0}
    images_report = _report(result, "images")
    assert images_report["counts"] == {"read": 3, "indexed": 3, "skipped": 0}
    assert set(images_report["timings_s"]) == {"read", "check", "embed"}
    assert images_report["fields"] == {
        "captions": "list[string]", "filename": "string", "image_id": "integer",
    }  # fmt: skip
    info = manifest.build_info
    assert info["kind"] == "captions"
    assert info["inputs"] == {
        "captions": str(corpus.source), "sha256": sha256_file(corpus.source), "records": 6,
        "images_dir": str(corpus.images_dir),
    }  # fmt: skip
    assert info["counts"] == {"read": 9, "indexed": 9, "skipped": 0}
    assert set(info["embed_seconds"]) == {"captions", "images"}
    summary = result.report.summary()
    assert summary[0].startswith("captions: read 6, indexed 6, skipped 0")
    assert summary[1].startswith("images: read 3, indexed 3, skipped 0")
    assert summary[2].startswith("total: read 9, indexed 9, skipped 0")


def test_a_missing_or_broken_image_file_is_a_bad_item(tiny_corpus: Path, tmp_path: Path) -> None:
    folder = images_dir(tiny_corpus, "val")
    (folder / "img_000000000001.png").unlink()
    (folder / "img_000000000002.png").write_bytes(b"no image")
    corpus = _karpathy(tiny_corpus)
    text_encoder = FakeTextEncoder()
    refused = _refusal(
        corpus, tmp_path, text_encoder=text_encoder, image_encoder=FakeImageEncoder()
    )
    assert text_encoder.calls == []  # refused before embedding anything
    assert refused.lines() == [
        "refused: 2 of 9 records are bad; nothing was embedded or written "
        "(--on-error skip leaves them out)",
        f"  {folder}/img_000000000001.png: no such image file (id 'img_000000000001.png')",
        f"  {folder}/img_000000000002.png: not an image in an accepted format (JPEG, PNG, WEBP,"
        " GIF) (id 'img_000000000002.png')",
    ]

    result = _build(corpus, tmp_path)
    report = _report(result, "images")
    assert report["counts"] == {"read": 3, "indexed": 1, "skipped": 2}
    assert report["skipped_by_problem"] == {"missing_image": 1, "unreadable_image": 1}
    assert report["skipped"][0] == {
        "source": str(folder), "path": "img_000000000001.png", "id": "img_000000000001.png",
        "problem": "missing_image", "reason": "no such image file",
    }  # fmt: skip
    bundle = load_bundle(result.version_dir)
    assert bundle.collections["images"].ids == ["img_000000000000.png"]
    assert bundle.collections["captions"].count == 6  # their captions stay
    assert "skipped: missing_image 1, unreadable_image 1 (listed in build_report.json)" in (
        result.report.summary()
    )


def test_karpathy_collections_follow_the_towers(tiny_corpus: Path, tmp_path: Path) -> None:
    with_images, without = _karpathy(tiny_corpus), _karpathy(tiny_corpus, images=False)
    with pytest.raises(CorpusError, match="has an image tower: give --images-dir"):
        _build(without, tmp_path, text_encoder=FakeTextEncoder(), image_encoder=FakeImageEncoder())
    with pytest.raises(CorpusError, match="has no image tower: it cannot embed the images"):
        _build(with_images, tmp_path, text_encoder=FakeTextEncoder())
    images_only = _build(with_images, tmp_path, image_encoder=FakeImageEncoder(), version="v1")
    assert list(load_bundle(images_only.version_dir).collections) == ["images"]
    captions_only = _build(without, tmp_path, text_encoder=FakeTextEncoder(), version="v2")
    assert list(load_bundle(captions_only.version_dir).collections) == ["captions"]
    assert [collection.name for collection in captions_only.report.collections] == ["captions"]


def test_a_karpathy_limit_takes_the_first_captions_and_their_images(
    tiny_corpus: Path, tmp_path: Path
) -> None:
    result = _build(_karpathy(tiny_corpus), tmp_path, limit=3)
    bundle = load_bundle(result.version_dir)
    assert bundle.collections["captions"].count == 3
    assert bundle.collections["images"].ids == ["img_000000000000.png", "img_000000000001.png"]
    assert bundle.collections["images"].metadata[1]["captions"] == ["tiny:sentid:10"]


def test_caption_records_made_in_memory_are_checked(tiny_corpus: Path, tmp_path: Path) -> None:
    corpus = _karpathy(tiny_corpus, images=False)
    records = list(corpus.records)
    records[2] = replace(records[2], key=records[0].key)
    records[4] = replace(records[4], text="  ")
    corpus = replace(corpus, records=records)
    refused = _refusal(corpus, tmp_path)
    source = corpus.source
    assert refused.lines()[1:] == [
        f"  {source}:row 3: duplicate id (first at {source}:row 1) (id 'tiny:sentid:0')",
        f"  {source}:row 5: empty text (column 'text' is blank) (id 'tiny:sentid:20')",
    ]
    report = _report(_build(corpus, tmp_path), "captions")
    assert report["counts"] == {"read": 6, "indexed": 4, "skipped": 2}


def test_the_captions_helper_builds_with_the_pipeline(tiny_corpus: Path, tmp_path: Path) -> None:
    make_tiny_variant(tmp_path / "tiny")
    encoder = OnnxTextEncoder(tmp_path / "tiny", providers="cpu")
    source = captions_path(tiny_corpus, "val")
    records = read_captions(source)
    version_dir = build_captions_bundle(
        encoder, records, source=source, bundles_root=tmp_path / "bundles", name="t", version="v1"
    )
    captions = load_bundle(version_dir).collections["captions"]
    assert captions.ids == [record.key for record in records]
    np.testing.assert_allclose(
        captions.vectors, encoder.encode_texts([record.text for record in records]), atol=1e-6
    )
    assert (version_dir / REPORT_FILE).is_file()


# --- names, and interrupted builds -----------------------------------------------------------


def test_a_bad_collection_name_is_refused(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "red"}])
    with pytest.raises(CorpusError, match="collection name 'Bad' does not match"):
        ingest(
            TextTable(table), text_encoder=FakeTextEncoder(), image_encoder=None,
            bundles_root=tmp_path, name="x", options=IngestOptions(collection="Bad"),
        )  # fmt: skip


def test_a_corpus_needs_its_tower(tmp_path: Path) -> None:
    table = write_jsonl(tmp_path / "t.jsonl", [{"id": "a", "text": "red"}])
    with pytest.raises(CorpusError, match="variant fake-bow has no text tower"):
        _build(TextTable(table), tmp_path, image_encoder=FakeImageEncoder())
    with pytest.raises(CorpusError, match="has no image tower: it cannot embed --images"):
        _build(ImageFolderCorpus(tmp_path), tmp_path, text_encoder=FakeTextEncoder())
    with pytest.raises(CorpusError, match="nothing to embed with"):
        ingest(
            TextTable(table), text_encoder=None, image_encoder=None, bundles_root=tmp_path,
            name="x", options=IngestOptions(collection="things"),
        )  # fmt: skip


@dataclass
class InterruptingTextEncoder(FakeTextEncoder):
    """Raises KeyboardInterrupt (Ctrl-C) on its ``interrupt_at``-th call."""

    interrupt_at: int = 2

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        if len(self.calls) + 1 >= self.interrupt_at:
            raise KeyboardInterrupt
        return super().encode_texts(texts)


def _serving_state(bundle_dir: Path) -> tuple[str, list[str]]:
    return (bundle_dir / CURRENT_FILE).read_text(encoding="utf-8"), sorted(os.listdir(bundle_dir))


def test_an_interrupted_build_leaves_the_previous_version_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = write_jsonl(
        tmp_path / "t.jsonl", [{"id": str(i), "text": f"red {i}"} for i in range(6)]
    )
    _build(TextTable(table), tmp_path, version="v1")
    bundle_dir = tmp_path / "bundles" / "corpus"
    before = _serving_state(bundle_dir)
    assert before == ("v1\n", [CURRENT_FILE, "v1"])

    # Ctrl-C in the middle of embedding.
    encoder = InterruptingTextEncoder(interrupt_at=2)
    with pytest.raises(KeyboardInterrupt):
        _build(TextTable(table), tmp_path, version="v2", text_encoder=encoder, text_batch_size=2)
    assert len(encoder.calls) == 1
    assert _serving_state(bundle_dir) == before

    # An exception from the encoder.
    failing = FakeTextEncoder(fail_texts=frozenset({"red 3"}))
    with pytest.raises(RuntimeError, match="fake encoder failure"):
        _build(TextTable(table), tmp_path, version="v2", text_encoder=failing, text_batch_size=2)
    assert _serving_state(bundle_dir) == before

    # Ctrl-C at the last moment: the staging folder is complete, about to be renamed.
    def interrupt(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "rename", interrupt)
    with pytest.raises(KeyboardInterrupt):
        _build(TextTable(table), tmp_path, version="v2")
    monkeypatch.undo()
    assert _serving_state(bundle_dir) == before  # no ".tmp-v2-..." folder is left behind
    verify_bundle(resolve_current(bundle_dir))
