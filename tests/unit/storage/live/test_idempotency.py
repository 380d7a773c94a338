"""The idempotency keys a collection remembers: bounded, oldest forgotten, round-tripped."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.live.idempotency import KeyedWrite, KeyTable, read_keys, write_keys


def test_the_oldest_keys_are_forgotten_past_the_bound() -> None:
    table = KeyTable(kept=3)
    for n in range(5):
        table.remember(f"k{n}", KeyedWrite(n + 1, 1))
    assert len(table) == 3
    assert table.get("k0") is None
    assert table.get("k1") is None
    assert table.get("k4") == KeyedWrite(5, 1)


def test_keys_of_records_never_logged_are_forgotten() -> None:
    table = KeyTable()
    table.remember("a", KeyedWrite(4, 2))
    table.remember("b", KeyedWrite(5, 1))
    table.forget_after(4)
    assert table.get("a") == KeyedWrite(4, 2)
    assert table.get("b") is None


def test_the_file_round_trips_in_order(tmp_path: Path) -> None:
    assert len(read_keys(tmp_path)) == 0
    table = KeyTable()
    for n in range(4):
        table.remember(f"key-{n}", KeyedWrite(10 + n, n))
    write_keys(tmp_path, table)
    again = read_keys(tmp_path)
    assert [again.get(f"key-{n}") for n in range(4)] == [KeyedWrite(10 + n, n) for n in range(4)]
    (tmp_path / "keys.json").write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="key table"):
        read_keys(tmp_path)
