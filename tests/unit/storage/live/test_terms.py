"""The term history: which term a record is of, new terms, its file."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.live.terms import TermHistory, read_terms, write_terms


def test_records_before_every_entry_are_of_term_zero() -> None:
    history = TermHistory(((2, 10), (5, 31)))
    assert [history.term_of(seq) for seq in (0, 1, 9, 10, 30, 31, 99)] == [0, 0, 0, 2, 2, 5, 5]
    assert history.last_term == 5
    assert TermHistory().term_of(7) == 0


def test_a_new_term_replaces_entries_from_its_first_record_on() -> None:
    history = TermHistory(((1, 5),)).begun(3, 9)
    assert history.entries == ((1, 5), (3, 9))
    # A term that begins where an earlier one began (nothing written in it) replaces it.
    assert history.begun(4, 9).entries == ((1, 5), (4, 9))
    with pytest.raises(ValueError, match="does not follow"):
        history.begun(3, 20)


@pytest.mark.parametrize("pairs", [((2, 5), (1, 9)), ((1, 9), (2, 5)), ((1, 1), (1, 2))])
def test_an_out_of_order_history_is_refused(pairs: tuple[tuple[int, int], ...]) -> None:
    with pytest.raises(ValueError, match="out of order"):
        TermHistory(pairs)


def test_the_file_round_trips_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    assert read_terms(tmp_path) == TermHistory()
    history = TermHistory(((1, 1), (4, 17)))
    write_terms(tmp_path, history)
    assert read_terms(tmp_path) == history
    assert not list(tmp_path.glob(".*.tmp"))
    (tmp_path / "terms.json").write_text("[[1]]", encoding="utf-8")
    with pytest.raises(ValueError, match="term history"):
        read_terms(tmp_path)
