"""The compact id table: row → id, id → row (hash collisions included), refusals, memory."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import storage.id_table as id_table
from storage.id_table import DuplicateIdError, IdTable

IDS = ["COCO_val2014:sentid:1", "img/ü-ö.png", "", "a" * 300, "COCO_val2014:sentid:10"]


def test_the_ids_of_many_rows_are_those_of_each_row() -> None:
    table = IdTable(IDS)
    rows = np.random.default_rng(3).integers(0, len(IDS), size=200)
    assert table.ids_of(rows) == [table[int(row)] for row in rows]
    assert table.ids_of(np.array([0, 2, 1], dtype=np.int32)) == [IDS[0], "", IDS[1]]
    assert table.ids_of([]) == []
    for outside in ([len(IDS)], [0, -1]):
        with pytest.raises(IndexError):
            table.ids_of(outside)


def test_rows_and_ids_round_trip() -> None:
    table = IdTable(IDS)
    assert len(table) == len(IDS)
    assert list(table) == IDS
    assert table == IDS
    assert table == tuple(IDS)
    assert table == IdTable(IDS)
    assert table != IDS[:-1]
    assert table != [*IDS[:-1], "other"]
    assert [table[row] for row in range(len(IDS))] == IDS
    assert table[-1] == IDS[-1]
    assert table[1:3] == IDS[1:3]
    assert {item: table.row_of[item] for item in IDS} == {item: n for n, item in enumerate(IDS)}
    assert dict(table.row_of) == {item: n for n, item in enumerate(IDS)}


def test_unknown_ids_are_absent_not_errors() -> None:
    table = IdTable(IDS)
    assert "COCO_val2014:sentid:2" not in table
    assert "COCO_val2014:sentid:2" not in table.row_of
    assert table.row("nope") is None
    assert table.row_of.get("nope") is None
    assert table.row_of.get("nope", -1) == -1
    assert 7 not in table  # type: ignore[comparison-overlap]
    with pytest.raises(KeyError):
        table.row_of["nope"]
    with pytest.raises(IndexError):
        table[len(IDS)]


def test_an_empty_table() -> None:
    table = IdTable([])
    assert len(table) == 0
    assert table.row("x") is None


def test_a_repeated_id_is_refused() -> None:
    with pytest.raises(DuplicateIdError, match="'b' is on rows 1 and 3"):
        IdTable(["a", "b", "c", "b"])


def test_ids_of_one_hash_are_told_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    # Every id hashes alike: the lookup must compare the ids themselves.
    monkeypatch.setattr(id_table, "hash", lambda _value: 42, raising=False)
    table = IdTable(["x", "y", "z"])
    assert [table.row(item) for item in ("z", "x", "y", "w")] == [2, 0, 1, None]
    with pytest.raises(DuplicateIdError):
        IdTable(["x", "y", "x"])


def test_a_million_ids_take_a_fraction_of_a_list_and_a_dict() -> None:
    ids = [f"gen-{n:07d}" for n in range(1_000_000)]
    table = IdTable(ids)
    as_python = sys.getsizeof(ids) + sum(map(sys.getsizeof, ids))
    as_python += sys.getsizeof({item: n for n, item in enumerate(ids)})
    assert table.nbytes < as_python / 3
    assert table.row("gen-0999999") == 999_999
