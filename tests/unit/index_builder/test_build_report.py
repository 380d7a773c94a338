"""The build report: counts that add up per collection and over the build, problems counted and
listed, a terminal summary, and what the manifest's build_info takes of it."""

from __future__ import annotations

import json

import pytest

from formats.field_types import FieldType
from index_builder.build_report import (
    REPORT_SCHEMA_VERSION,
    BuildReport,
    CollectionReport,
    problem_lines,
)
from index_builder.items import BadItem, ItemOrigin, Problem

BAD = [
    BadItem(ItemOrigin("t.jsonl", line=3), Problem.DUPLICATE_ID, "duplicate id", "a"),
    BadItem(ItemOrigin("t.jsonl", line=5), Problem.EMPTY_TEXT, "empty text", "b"),
    BadItem(ItemOrigin("t.jsonl", line=6), Problem.EMPTY_TEXT, "empty text"),
]


def _things(read: int = 10, indexed: int = 7) -> CollectionReport:
    return CollectionReport(
        name="things",
        read=read,
        indexed=indexed,
        skipped=BAD,
        fields={"text": FieldType.STRING, "n": FieldType.INTEGER},
        timings={"read": 0.5, "embed": 2.0},
    )


def _images() -> CollectionReport:
    missing = BadItem(ItemOrigin("pics", path="x.png"), Problem.MISSING_IMAGE, "gone", "x.png")
    return CollectionReport(
        name="images",
        read=4,
        indexed=3,
        skipped=[missing],
        fields={"path": FieldType.STRING},
        timings={"read": 0.1, "check": 0.4, "embed": 1.0},
        notes={"other_files": 2},
    )


def _report(*collections: CollectionReport) -> BuildReport:
    return BuildReport(
        kind="texts",
        inputs={"texts": "t.jsonl"},
        on_error="skip",
        collections=collections or (_things(),),
        total=3.5,
    )


def test_every_record_is_indexed_or_skipped() -> None:
    with pytest.raises(ValueError, match="things: 10 records read but 8 indexed and 3 skipped"):
        _things(read=10, indexed=8)
    with pytest.raises(ValueError, match="distinct collections"):
        _report(_things(), _things())


def test_a_collection_as_json() -> None:
    document = json.loads(_report().to_bytes())
    assert document["schema_version"] == REPORT_SCHEMA_VERSION == 2
    entry = document["collections"]["things"]
    assert entry["counts"] == {"read": 10, "indexed": 7, "skipped": 3}
    assert entry["skipped_by_problem"] == {"empty_text": 2, "duplicate_id": 1}
    assert entry["skipped"][0] == {
        "source": "t.jsonl", "line": 3, "id": "a", "problem": "duplicate_id",
        "reason": "duplicate id",
    }  # fmt: skip
    assert entry["skipped"][2] == {
        "source": "t.jsonl", "line": 6, "problem": "empty_text", "reason": "empty text",
    }  # fmt: skip
    assert entry["fields"] == {"text": "string", "n": "integer"}
    assert entry["timings_s"] == {"read": 0.5, "embed": 2.0}
    assert entry["throughput"] == {"embed_items_per_s": 3.5, "build_items_per_s": 2.8}
    assert entry["notes"] == {}


def test_the_build_as_json_sums_its_collections() -> None:
    document = json.loads(_report(_things(), _images()).to_bytes())
    assert list(document["collections"]) == ["things", "images"]
    assert document["kind"] == "texts"
    assert document["inputs"] == {"texts": "t.jsonl"}
    assert document["on_error"] == "skip"
    assert document["counts"] == {"read": 14, "indexed": 10, "skipped": 4}
    assert document["timings_s"] == {"read": 0.6, "check": 0.4, "embed": 3.0, "total": 3.5}
    assert document["throughput"] == {"embed_items_per_s": 3.3, "build_items_per_s": 2.9}
    assert document["collections"]["images"]["notes"] == {"other_files": 2}
    assert document["notes"] == {}


def test_build_info_counts_the_build_and_each_collection() -> None:
    report = _report(_things(), _images())
    assert report.build_info() == {
        "kind": "texts",
        "inputs": {"texts": "t.jsonl"},
        "counts": {"read": 14, "indexed": 10, "skipped": 4},
        "collections": {
            "things": {"read": 10, "indexed": 7, "skipped": 3},
            "images": {"read": 4, "indexed": 3, "skipped": 1},
        },
        "on_error": "skip",
    }
    assert report.collection("images").indexed == 3
    with pytest.raises(KeyError):
        report.collection("nope")


def test_the_summary_names_counts_and_items() -> None:
    lines = _report().summary()
    assert lines[0] == (
        "things: read 10, indexed 7, skipped 3; embedded at 4 items/s (3 items/s overall)"
    )
    assert lines[1] == "skipped: empty_text 2, duplicate_id 1 (listed in build_report.json)"
    assert lines[2] == "  t.jsonl:3: duplicate id (id 'a')"
    assert len(lines) == 5  # one collection: no total line


def test_the_summary_of_several_collections_ends_with_the_total() -> None:
    lines = _report(_things(), _images()).summary()
    assert lines[5].startswith("images: read 4, indexed 3, skipped 1;")
    assert lines[6] == "skipped: missing_image 1 (listed in build_report.json)"
    assert lines[7] == "  pics/x.png: gone (id 'x.png')"
    assert lines[8] == "total: read 14, indexed 10, skipped 4 in 3.5 s (3 items/s)"


def test_problem_lines_are_capped_with_a_count() -> None:
    assert problem_lines(BAD, limit=2) == [
        "t.jsonl:3: duplicate id (id 'a')",
        "t.jsonl:5: empty text (id 'b')",
        "... and 1 more",
    ]
