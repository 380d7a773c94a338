"""The build report: counts that add up, problems counted and listed, a terminal summary."""

from __future__ import annotations

import json

import pytest

from formats.field_types import FieldType
from index_builder.build_report import BuildReport, problem_lines
from index_builder.items import BadItem, ItemOrigin, Problem

BAD = [
    BadItem(ItemOrigin("t.jsonl", line=3), Problem.DUPLICATE_ID, "duplicate id", "a"),
    BadItem(ItemOrigin("t.jsonl", line=5), Problem.EMPTY_TEXT, "empty text", "b"),
    BadItem(ItemOrigin("t.jsonl", line=6), Problem.EMPTY_TEXT, "empty text"),
]


def _report(read: int = 10, indexed: int = 7) -> BuildReport:
    return BuildReport(
        collection="things",
        kind="texts",
        inputs={"texts": "t.jsonl"},
        on_error="skip",
        read=read,
        indexed=indexed,
        skipped=BAD,
        fields={"text": FieldType.STRING, "n": FieldType.INTEGER},
        timings={"read": 0.5, "embed": 2.0, "total": 3.5},
    )


def test_every_record_is_indexed_or_skipped() -> None:
    with pytest.raises(ValueError, match="10 records read but 8 indexed and 3 skipped"):
        _report(read=10, indexed=8)


def test_the_report_as_json() -> None:
    document = json.loads(_report().to_bytes())
    assert document["counts"] == {"read": 10, "indexed": 7, "skipped": 3}
    assert document["skipped_by_problem"] == {"empty_text": 2, "duplicate_id": 1}
    assert document["skipped"][0] == {
        "source": "t.jsonl", "line": 3, "id": "a", "problem": "duplicate_id",
        "reason": "duplicate id",
    }  # fmt: skip
    assert document["skipped"][2] == {
        "source": "t.jsonl", "line": 6, "problem": "empty_text", "reason": "empty text",
    }  # fmt: skip
    assert document["fields"] == {"text": "string", "n": "integer"}
    assert document["throughput"] == {"embed_items_per_s": 3.5, "build_items_per_s": 2.0}
    assert document["timings_s"] == {"read": 0.5, "embed": 2.0, "total": 3.5}


def test_the_summary_names_counts_and_items() -> None:
    lines = _report().summary()
    assert lines[0] == (
        "things: read 10, indexed 7, skipped 3; embedded at 4 items/s (2 items/s overall)"
    )
    assert lines[1] == "skipped: empty_text 2, duplicate_id 1 (listed in build_report.json)"
    assert lines[2] == "  t.jsonl:3: duplicate id (id 'a')"


def test_problem_lines_are_capped_with_a_count() -> None:
    assert problem_lines(BAD, limit=2) == [
        "t.jsonl:3: duplicate id (id 'a')",
        "t.jsonl:5: empty text (id 'b')",
        "... and 1 more",
    ]
