"""What a server knows of its replica set: made once, round-tripped, refused when damaged."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage.live.replica_state import ReplicaState, read_replica_state, write_replica_state


def test_a_new_state_gets_an_id_and_round_trips(tmp_path: Path) -> None:
    fresh = read_replica_state(tmp_path)
    assert fresh.term == 0
    assert fresh.leader is None
    assert not fresh.fenced
    assert len(fresh.replica_id) == 12
    state = ReplicaState(
        replica_id=fresh.replica_id,
        term=3,
        leader="http://127.0.0.1:9001",
        fenced=False,
        voted_for="http://127.0.0.1:9001",
        members=("http://127.0.0.1:9001", "http://127.0.0.1:9002"),
    )
    write_replica_state(tmp_path, state)
    assert read_replica_state(tmp_path) == state
    assert read_replica_state(tmp_path).replica_id == fresh.replica_id


def test_a_damaged_state_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".replication.json").write_text('{"term": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="replica state"):
        read_replica_state(tmp_path)
