"""Reload orders and acknowledgements between workers: generations, atomic files, bad files."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from service.lifecycle.reload_broadcast import (
    ORDER_FILE,
    BroadcastError,
    ReloadAck,
    ReloadBroadcast,
)


def test_no_order_before_the_first(tmp_path: Path) -> None:
    broadcast = ReloadBroadcast(tmp_path / "reload")
    assert broadcast.latest() is None
    assert broadcast.ack_of(0) is None


def test_orders_take_the_next_generation(tmp_path: Path) -> None:
    broadcast = ReloadBroadcast(tmp_path)
    first = broadcast.publish(0, {"b": "v1"})
    second = ReloadBroadcast(tmp_path).publish(1, {"b": "v2", "c": "v9"})
    assert (first.generation, second.generation) == (1, 2)
    latest = broadcast.latest()
    assert latest == second
    assert latest is not None
    assert dict(latest.versions) == {"b": "v2", "c": "v9"}


def test_concurrent_publishers_never_share_a_generation(tmp_path: Path) -> None:
    with ThreadPoolExecutor(8) as pool:
        orders = list(
            pool.map(lambda n: ReloadBroadcast(tmp_path).publish(n % 2, {"b": f"v{n}"}), range(40))
        )
    assert sorted(order.generation for order in orders) == list(range(1, 41))
    assert not [path for path in tmp_path.iterdir() if path.name.endswith(".partial")]


def test_acknowledgements_round_trip_per_worker(tmp_path: Path) -> None:
    broadcast = ReloadBroadcast(tmp_path)
    broadcast.acknowledge(ReloadAck(worker=1, generation=3, versions={"b": "v2"}))
    broadcast.acknowledge(ReloadAck(worker=2, generation=3, versions={"b": "v1"}, error="corrupt"))
    assert broadcast.ack_of(1) == ReloadAck(1, 3, {"b": "v2"}, None)
    assert broadcast.ack_of(2) == ReloadAck(2, 3, {"b": "v1"}, "corrupt")
    assert broadcast.ack_of(0) is None


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "[1, 2]",
        '{"generation": "1", "origin": 0, "versions": {}}',
        '{"generation": true, "origin": 0, "versions": {}}',
        '{"generation": 1, "origin": 0, "versions": {"b": 2}}',
        '{"generation": 1, "origin": 0}',
    ],
)
def test_an_unreadable_order_is_a_broadcast_error(tmp_path: Path, content: str) -> None:
    (tmp_path / ORDER_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(BroadcastError, match=ORDER_FILE):
        ReloadBroadcast(tmp_path).latest()
