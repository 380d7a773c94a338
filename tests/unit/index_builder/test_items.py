"""Where an item came from, how a bad one is described, and what a reader returns."""

from __future__ import annotations

from index_builder.items import BadItem, CorpusItems, ItemOrigin, Problem, TextItem


def test_locations() -> None:
    assert ItemOrigin("t.csv", line=4).location == "t.csv:4"
    assert ItemOrigin("t.parquet", row=7).location == "t.parquet:row 7"
    assert ItemOrigin("photos/", path="shoes/red.jpg").location == "photos/shoes/red.jpg"
    assert ItemOrigin("meta.csv", line=2, path="a.jpg").location == "meta.csv:2"
    assert ItemOrigin("x").location == "x"


def test_bad_items_describe_themselves_and_sort_by_origin() -> None:
    late = BadItem(ItemOrigin("t.csv", line=9), Problem.EMPTY_TEXT, "empty text", "b")
    early = BadItem(ItemOrigin("t.csv", line=2), Problem.MISSING_ID, "no id")
    assert early.describe() == "t.csv:2: no id"
    assert late.describe() == "t.csv:9: empty text (id 'b')"
    assert sorted([late, early], key=BadItem.sort_key) == [early, late]
    assert late.to_json() == {
        "source": "t.csv", "line": 9, "id": "b", "problem": "empty_text", "reason": "empty text",
    }  # fmt: skip


def test_corpus_items_hold_the_items_the_bad_and_the_count() -> None:
    item = TextItem("a", "a dog", ItemOrigin("t.csv", line=2), {"text": "a dog"})
    bad = BadItem(ItemOrigin("t.csv", line=3), Problem.EMPTY_TEXT, "empty text")
    found = CorpusItems(items=[item], bad=[bad], schema=None, read=2)
    assert found.read == len(found.items) + len(found.bad)
    assert found.notes == {}
