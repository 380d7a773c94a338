"""The keyword index (service.engine.rank.lexical_index): tokens, BM25 scores equal to an
independent implementation (bm25s' lucene method), statistics over the alive rows only, appending in
pieces, rows without text, the best hits under the tie rule, and one index per owner and field."""

from __future__ import annotations

import math

import bm25s  # type: ignore[import-untyped]
import numpy as np
import numpy.typing as npt
import pytest

from service.engine.rank.lexical_index import (
    K1,
    B,
    LexicalHits,
    LexicalIndex,
    LexicalIndexes,
    best,
    query_terms,
    tokens,
)

VOCABULARY = [f"w{n}" for n in range(57)] + ["café", "über", "日本語"]


def _corpus(seed: int, count: int = 400) -> list[str]:
    """``count`` texts over :data:`VOCABULARY` drawn Zipf-like (word ``n`` weighs ``1 / (n+1)``),
    1..20 words each (words repeat), in mixed case and with punctuation between words."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, len(VOCABULARY) + 1)
    weights /= weights.sum()
    texts = []
    for _ in range(count):
        words = rng.choice(VOCABULARY, size=int(rng.integers(1, 21)), p=weights)
        cased = [word.upper() if rng.random() < 0.2 else str(word) for word in words]
        texts.append(str(rng.choice([" ", ", ", " - ", "\n"])).join(cased))
    return texts


def _index(texts: list[str | None]) -> LexicalIndex:
    index = LexicalIndex()
    with index.lock:
        index.append(texts)
    return index


def _dense(hits: LexicalHits, rows: int) -> npt.NDArray[np.float64]:
    """One score per row (0 where no hit)."""
    scores = np.zeros(rows, dtype=np.float64)
    scores[hits.rows] = hits.scores
    return scores


def _all(rows: int) -> npt.NDArray[np.bool_]:
    return np.ones(rows, dtype=np.bool_)


# -- tokens -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The cat SAT", ["the", "cat", "sat"]),
        ("Café über-alles, 日本語!", ["café", "über", "alles", "日本語"]),
        ("don't snake_case 42x 3.14", ["don", "t", "snake_case", "42x", "3", "14"]),
        ("  \t\n", []),
        ("!!! --- ...", []),
        ("", []),
        ("ΣΊΣΥΦΟΣ Straße", ["σίσυφος", "straße"]),
    ],
)
def test_tokens_are_lowercase_unicode_words(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected


def test_tokens_keep_repeats_and_query_terms_drop_them_in_first_seen_order() -> None:
    text = "Red car, red CAR; blue red"
    assert tokens(text) == ["red", "car", "red", "car", "blue", "red"]
    assert query_terms(text) == ["red", "car", "blue"]
    assert query_terms("B a B c A") == ["b", "a", "c"]
    assert query_terms("...") == []


# -- BM25 against bm25s ----------------------------------------------------------------------


def _reference(texts: list[str]) -> bm25s.BM25:
    reference = bm25s.BM25(method="lucene", k1=K1, b=B)
    reference.index([tokens(text) for text in texts], show_progress=False)
    return reference


def _reference_scores(
    reference: bm25s.BM25, terms: list[str], rows: int
) -> npt.NDArray[np.float64]:
    """bm25s' scores of ``terms``; bm25s leaves out tokens its vocabulary lacks (and fails on
    a query with no token left), which score nothing in ours either."""
    known = [term for term in terms if term in reference.vocab_dict]
    if not known:
        return np.zeros(rows, dtype=np.float64)
    return np.asarray(reference.get_scores(known), dtype=np.float64)


def test_bm25s_leaves_unknown_tokens_out() -> None:
    """What the comparison below relies on: bm25s 0.3.16 scores a query as if the tokens its
    vocabulary lacks were not there (it does not raise)."""
    reference = _reference(["a b a", "b c", "d"])
    np.testing.assert_array_equal(reference.get_scores(["zz", "a"]), reference.get_scores(["a"]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_equal_bm25s_lucene(seed: int) -> None:
    texts = _corpus(seed)
    index = _index(list(texts))
    reference = _reference(texts)
    rng = np.random.default_rng(100 + seed)
    matched = 0
    for query in range(30):
        words = [str(w) for w in rng.choice(VOCABULARY, size=int(rng.integers(1, 5)))]
        if query % 5 == 0:
            words.append("unknownword")  # in no document
        if query % 7 == 0:
            words.append(words[0].upper())  # a repeat counts once
        terms = query_terms(" ".join(words))
        hits = index.score(terms, _all(len(texts)))
        expected = _reference_scores(reference, terms, len(texts))
        assert sorted(hits.rows.tolist()) == np.flatnonzero(expected).tolist()
        assert len(np.unique(hits.rows)) == len(hits.rows)
        assert hits.rows.dtype == np.int64
        assert hits.scores.dtype == np.float64
        np.testing.assert_allclose(_dense(hits, len(texts)), expected, rtol=1e-5, atol=1e-7)
        matched += len(hits.rows)
    assert matched > 30 * 20  # the queries do match documents


def test_a_score_is_the_documented_formula() -> None:
    texts: list[str | None] = ["a b a", "b c", None, "", "d d d d"]
    hits = _index(texts).score(["a", "b"], _all(5))
    documents, average = 5, (3 + 2 + 0 + 0 + 4) / 5

    def part(tf: int, df: int, length: int) -> float:
        idf = math.log(1 + (documents - df + 0.5) / (df + 0.5))
        return idf * tf / (tf + K1 * (1 - B + B * length / average))

    assert hits.rows.tolist() == [0, 1]
    assert hits.scores.tolist() == pytest.approx(
        [part(2, 1, 3) + part(1, 2, 3), part(1, 2, 2)], rel=1e-12
    )


# -- which rows count ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1])
def test_alive_rows_score_as_a_fresh_index_of_them(seed: int) -> None:
    texts = _corpus(seed, count=200)
    index = _index(list(texts))
    rng = np.random.default_rng(seed)
    for fraction in (0.9, 0.5, 0.1):
        alive = rng.random(len(texts)) < fraction
        alive_rows = np.flatnonzero(alive)
        fresh = _index([texts[row] for row in alive_rows])
        for _ in range(10):
            terms = query_terms(" ".join(rng.choice(VOCABULARY, size=3)))
            hits = index.score(terms, alive)
            assert alive[hits.rows].all()  # a dead row never matches
            expected = fresh.score(terms, _all(len(alive_rows)))
            assert hits.rows.tolist() == alive_rows[expected.rows].tolist()
            np.testing.assert_allclose(hits.scores, expected.scores, rtol=1e-12)


def test_rows_past_the_mask_are_left_out() -> None:
    texts = _corpus(3, count=120)
    index = _index(list(texts))
    fresh = _index(list(texts[:70]))
    for word in VOCABULARY[:20]:
        hits = index.score([word], _all(70))
        expected = fresh.score([word], _all(70))
        assert hits.rows.tolist() == expected.rows.tolist()
        np.testing.assert_allclose(hits.scores, expected.scores, rtol=1e-12)
        assert (hits.rows < 70).all()
    with pytest.raises(ValueError, match="121 rows asked of a lexical index of 120"):
        index.score(["w0"], _all(121))


def test_appending_in_pieces_equals_appending_at_once() -> None:
    texts: list[str | None] = list(_corpus(4, count=150))
    texts[10] = None
    texts[11] = ""
    at_once = _index(texts)
    pieces = LexicalIndex()
    with pieces.lock:
        # A score between the appends makes the postings' numpy copies, which must follow.
        for start, stop in ((0, 1), (1, 40), (40, 41), (41, 100), (100, 150)):
            pieces.append(texts[start:stop])
            pieces.score(["w0", "w1"], _all(pieces.rows))
    assert pieces.rows == at_once.rows == 150
    for word in VOCABULARY:
        first = at_once.score([word, "w0"], _all(150))
        second = pieces.score([word, "w0"], _all(150))
        assert first.rows.tolist() == second.rows.tolist()
        assert first.scores.tolist() == second.scores.tolist()


def test_a_row_without_text_counts_as_an_empty_document_that_never_matches() -> None:
    index = _index([None, "", "  ?! ", "x y"])
    assert index.rows == 4
    hits = index.score(["x"], _all(4))
    assert hits.rows.tolist() == [3]
    # N = 4 documents, average length 2 / 4: the empty rows weigh on the statistics.
    idf = math.log(1 + (4 - 1 + 0.5) / (1 + 0.5))
    assert hits.scores[0] == pytest.approx(idf / (1 + K1 * (1 - B + B * 2 / 0.5)), rel=1e-12)
    only_empty = index.score(["x"], np.array([True, True, True, False]))
    assert len(only_empty.rows) == 0  # every alive row empty: average length 0


def test_no_term_no_alive_row_or_no_known_term_gives_no_hit() -> None:
    index = _index(["a b", "b c"])
    for terms, alive in (
        ([], _all(2)),
        (["a"], np.zeros(2, dtype=np.bool_)),
        (["a"], np.zeros(0, dtype=np.bool_)),
        (["zz"], _all(2)),
        (["a"], np.array([False, True])),
    ):
        hits = index.score(terms, alive)
        assert hits.rows.tolist() == []
        assert hits.rows.dtype == np.int64
        assert hits.scores.dtype == np.float64


# -- the best hits ---------------------------------------------------------------------------


def _hits(rows: list[int], scores: list[float]) -> LexicalHits:
    return LexicalHits(np.array(rows, dtype=np.int64), np.array(scores, dtype=np.float64))


def test_best_orders_by_score_then_row() -> None:
    hits = _hits([5, 1, 3, 2, 4, 0], [1.0, 2.0, 1.0, 2.0, 0.5, 1.0])
    rows, scores, count = best(hits, None, 10)
    assert rows.tolist() == [1, 2, 0, 3, 5, 4]
    assert scores.tolist() == [2.0, 2.0, 1.0, 1.0, 1.0, 0.5]
    assert count == 6


def test_best_keeps_the_kept_rows_cuts_at_depth_and_counts_the_kept() -> None:
    hits = _hits([5, 1, 3, 2, 4, 0], [1.0, 2.0, 1.0, 2.0, 0.5, 1.0])
    keep = np.array([True, True, False, True, True, True, False])  # row 2 left out
    rows, scores, count = best(hits, keep, 3)
    assert rows.tolist() == [1, 0, 3]  # the run of 1.0 cut at depth, by row
    assert scores.tolist() == [2.0, 1.0, 1.0]
    assert count == 5
    rows, _, count = best(hits, np.zeros(7, dtype=np.bool_), 3)
    assert (rows.tolist(), count) == ([], 0)
    rows, _, count = best(hits, None, 0)
    assert (rows.tolist(), count) == ([], 6)


def test_best_of_no_hits() -> None:
    rows, scores, count = best(_hits([], []), np.ones(3, dtype=np.bool_), 5)
    assert (rows.tolist(), scores.tolist(), count) == ([], [], 0)


def test_the_all_alive_mask_is_kept_until_rows_are_appended() -> None:
    index = _index(["a b", "b", None])
    with index.lock:
        mask = index.all_alive()
        assert mask.tolist() == [True, True, True]
        assert not mask.flags.writeable
        assert index.all_alive() is mask
        assert index.score(["b"], mask).rows.tolist() == index.score(["b"], _all(3)).rows.tolist()
        index.append(["c"])
        grown = index.all_alive()
    assert grown is not mask
    assert grown.tolist() == [True] * 4


# -- indexes per owner -----------------------------------------------------------------------


def test_indexes_are_one_per_field_and_renewed_with_the_owner() -> None:
    indexes = LexicalIndexes()
    first, second = object(), object()
    text = indexes.of(first, "text")
    assert indexes.of(first, "text") is text
    captions = indexes.of(first, "captions")
    assert captions is not text
    assert indexes.of(first, "captions") is captions
    renewed = indexes.of(second, "text")
    assert renewed is not text
    assert indexes.of(second, "text") is renewed
    assert indexes.of(second, "captions") is not captions  # the old owner's are gone
    assert indexes.of(first, "text") is not text  # and do not come back
