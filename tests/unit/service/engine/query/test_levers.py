"""A search's quality levers (service.engine.query.levers): the window, the keywords, the field they
are read in, which vector a search needs, the first-stage ranking, a re-rank's order and a page."""

from __future__ import annotations

import numpy as np
import pytest

from formats.field_types import FieldType
from service.engine.query.levers import (
    DEFAULT_FUSION,
    DEFAULT_WINDOW,
    ITEM_TEXT,
    NO_LEVERS,
    Levers,
    Rerank,
    field_text,
    keywords,
    lexical_leg,
    needs_vector,
    page_rows,
    ranked,
    rescored,
    text_field,
)
from service.engine.rank.fusion import Fusion, Leg, fuse
from service.engine.rank.lexical_index import LexicalIndex
from service.exceptions import InvalidQueryError, LeverNotApplicableError

FIELDS = {
    "text": FieldType.STRING,
    "captions": FieldType.STRING_LIST,
    "n": FieldType.INTEGER,
    "title": FieldType.STRING,
}


def _leg(rows: list[int], scores: list[float]) -> Leg:
    return Leg(np.array(rows, dtype=np.int64), np.array(scores, dtype=np.float64))


# -- Levers ----------------------------------------------------------------------------------


def test_the_defaults_are_a_plain_dense_search() -> None:
    assert Levers() == NO_LEVERS
    assert NO_LEVERS.plain
    assert NO_LEVERS.fusion == DEFAULT_FUSION == Fusion("weighted", alpha=0.5)
    assert not Levers(rerank=Rerank("exact")).plain
    assert not Levers(mode="lexical").plain
    assert not Levers(mode="hybrid").plain


@pytest.mark.parametrize(
    ("offset", "k", "expected"), [(0, 10, 100), (90, 10, 100), (95, 10, 105), (0, 500, 500)]
)
def test_the_default_window_holds_the_page(offset: int, k: int, expected: int) -> None:
    assert DEFAULT_WINDOW == 100
    assert Levers(mode="hybrid").depth(offset, k) == expected


def test_a_window_must_hold_the_page() -> None:
    levers = Levers(mode="hybrid", window=20, where="searches.3.")
    assert levers.depth(0, 20) == 20
    assert levers.depth(10, 5) == 20
    with pytest.raises(InvalidQueryError, match=r"^searches\.3\.window: 20 candidates") as error:
        levers.depth(15, 6)
    assert type(error.value) is InvalidQueryError
    assert "at least 21" in str(error.value)


def test_terms_are_the_distinct_keywords_else_the_query_text() -> None:
    assert Levers(mode="lexical", keywords="Red red CAR").terms("blue sky") == ["red", "car"]
    assert Levers(mode="lexical").terms("Blue sky, BLUE") == ["blue", "sky"]


def test_terms_need_a_word() -> None:
    with pytest.raises(InvalidQueryError, match=r"^q\.lexical\.text: a hybrid search") as error:
        Levers(mode="hybrid", where="q.").terms(None)
    assert type(error.value) is InvalidQueryError
    with pytest.raises(InvalidQueryError, match="holds no word") as error:
        Levers(mode="lexical").terms(" ?! ")
    assert type(error.value) is InvalidQueryError
    # Keywords given are the keywords, even when they hold no word and the query does.
    with pytest.raises(InvalidQueryError, match="holds no word"):
        Levers(mode="lexical", keywords="").terms("a dog")


# -- the field -------------------------------------------------------------------------------


def test_an_asked_field_must_exist_and_hold_text() -> None:
    assert text_field(FIELDS, "title", "", live=False) == "title"
    assert text_field(FIELDS, "captions", "", live=False) == "captions"
    assert text_field(FIELDS, "title", "", live=True) == "title"
    with pytest.raises(LeverNotApplicableError, match=r"^s\.lexical\.field: .*'nope'") as error:
        text_field(FIELDS, "nope", "s.", live=False)
    assert "captions, n, text, title" in str(error.value)
    with pytest.raises(LeverNotApplicableError, match="fields: none"):
        text_field({}, "nope", "", live=True)
    with pytest.raises(LeverNotApplicableError, match="'n' is of type integer"):
        text_field(FIELDS, "n", "", live=False)


def test_the_default_field_is_text_then_captions_and_a_live_items_text() -> None:
    assert text_field(FIELDS, None, "", live=False) == "text"
    assert text_field({"captions": FieldType.STRING_LIST}, None, "", live=False) == "captions"
    # A text field that holds no text is passed over.
    assert (
        text_field({"text": FieldType.INTEGER, "captions": FieldType.STRING}, None, "", live=False)
        == "captions"
    )
    assert text_field({}, None, "", live=True) == ITEM_TEXT
    assert text_field(FIELDS, None, "", live=True) == ITEM_TEXT
    with pytest.raises(LeverNotApplicableError, match="no text or captions field"):
        text_field({"title": FieldType.STRING, "text": FieldType.FLOAT}, None, "", live=False)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("a dog", "a dog"),
        (["a dog", "a cat"], "a dog\na cat"),
        (("one",), "one"),
        ([], ""),
        (3, None),
        (None, None),
        ({"a": "b"}, None),
    ],
)
def test_field_text(value: object, expected: str | None) -> None:
    assert field_text(value) == expected


def test_keywords_of_a_search() -> None:
    assert keywords(Levers(), None, {}, live=False) == (None, None)
    assert keywords(Levers(field="nope"), "x", FIELDS, live=False) == (None, None)
    assert keywords(Levers(mode="lexical"), "A dog", FIELDS, live=False) == (["a", "dog"], "text")
    assert keywords(
        Levers(mode="hybrid", keywords="cat", field="captions"), "A dog", FIELDS, live=False
    ) == (["cat"], "captions")
    assert keywords(Levers(mode="hybrid"), "A dog", {}, live=True) == (["a", "dog"], ITEM_TEXT)
    with pytest.raises(LeverNotApplicableError):
        keywords(Levers(mode="lexical", field="n"), "a dog", FIELDS, live=False)
    with pytest.raises(InvalidQueryError):
        keywords(Levers(mode="lexical"), None, FIELDS, live=False)


@pytest.mark.parametrize(
    ("levers", "expected"),
    [
        (Levers(), True),
        (Levers(mode="hybrid"), True),
        (Levers(mode="lexical"), False),
        (Levers(mode="lexical", rerank=Rerank("exact")), True),
        (Levers(mode="lexical", rerank=Rerank("variant", "other")), False),
        (Levers(rerank=Rerank("variant", "other")), True),
        (Levers(mode="hybrid", rerank=Rerank("variant", "other")), True),
    ],
)
def test_needs_vector(levers: Levers, expected: bool) -> None:
    assert needs_vector(levers) is expected


# -- legs and rankings -----------------------------------------------------------------------


def test_a_lexical_leg_is_the_best_kept_rows_with_statistics_over_the_alive() -> None:
    index = LexicalIndex()
    with index.lock:
        index.append(["a b", "a", "b", "a a", None, "a c"])
        alive = np.array([True, True, True, True, True, False])
        keep = np.array([True, False, True, True, True, False])
        leg, matched = lexical_leg(index, ["a"], alive, keep, 1)
        everything = index.score(["a"], alive)
    assert leg.rows.tolist() == [3]  # "a a": the best of rows 0 and 3
    assert matched == 2
    assert leg.scores.tolist() == everything.scores[everything.rows == 3].tolist()
    leg, matched = lexical_leg(index, ["a"], alive, None, 10)
    assert leg.rows.tolist() == [3, 1, 0]  # rows 1 and 0 differ in length
    assert matched == 3


def test_ranked_takes_the_leg_of_the_mode_or_fuses_both() -> None:
    dense = _leg([1, 2, 3], [0.9, 0.5, 0.1])
    lexical = _leg([3, 4], [8.0, 2.0])
    assert ranked(Levers(), dense, None) is dense
    assert ranked(Levers(mode="lexical"), None, lexical) is lexical
    fusion = Fusion("weighted", alpha=0.3)
    fused = ranked(Levers(mode="hybrid", fusion=fusion), dense, lexical)
    assert fused.rows.tolist() == fuse(dense, lexical, fusion).rows.tolist() == [3, 1, 2, 4]
    # The default, an even weighted sum: rows 1 and 3 tie at 0.5 and go by row.
    default = ranked(Levers(mode="hybrid"), dense, lexical)
    assert default.rows.tolist() == fuse(dense, lexical, DEFAULT_FUSION).rows.tolist()
    assert default.rows.tolist() == [1, 3, 2, 4]


def test_a_page_is_ranks_offset_plus_one_on() -> None:
    ranking = _leg([7, 3, 5, 1, 0], [5.0, 4.0, 3.0, 2.0, 1.0])
    assert page_rows(ranking, 0, 2) == [(1, 7, 5.0), (2, 3, 4.0)]
    assert page_rows(ranking, 2, 2) == [(3, 5, 3.0), (4, 1, 2.0)]
    assert page_rows(ranking, 4, 2) == [(5, 0, 1.0)]
    assert page_rows(ranking, 5, 2) == []
    assert all(
        type(row) is int and type(score) is float for _, row, score in page_rows(ranking, 0, 5)
    )


def test_rescored_orders_by_the_inner_product_then_row() -> None:
    rows = np.array([4, 1, 3, 0], dtype=np.int64)
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    query = np.array([0.8, 0.6], dtype=np.float32)
    leg = rescored(rows, vectors, query)
    # 4 and 1 hold the same vector: a tie, row 1 first; 0 scores 0.96, 3 scores 0.6.
    assert leg.rows.tolist() == [0, 1, 4, 3]
    expected = vectors.astype(np.float64)[[3, 1, 0, 2]] @ query.astype(np.float64)
    assert leg.scores.tolist() == expected.tolist()
    assert leg.scores.dtype == np.float64
    assert leg.scores[1] == leg.scores[2]
    empty = rescored(np.empty(0, np.int64), np.empty((0, 2), np.float32), query)
    assert empty.rows.tolist() == []
