"""The vote rule: a candidate is refused for a collection it lacks, another of the same name,
or a copy behind the member's (term first, then sequence number)."""

from __future__ import annotations

from service.engine.replication.election import candidate_lacks
from service.engine.replication.wire import Position


def test_a_candidate_as_far_along_is_granted() -> None:
    mine = {"a": Position("u", 10, 1), "empty": Position("e", 0, 0)}
    assert candidate_lacks(mine, {"a": Position("u", 10, 1)}) is None
    assert candidate_lacks(mine, {"a": Position("u", 12, 1)}) is None
    assert candidate_lacks(mine, {"a": Position("u", 3, 2)}) is None  # a later term wins


def test_a_candidate_behind_or_without_the_collection_is_refused() -> None:
    mine = {"a": Position("u", 10, 1)}
    assert "lacks collection" in str(candidate_lacks(mine, {}))
    assert "lacks collection" in str(candidate_lacks(mine, {"a": Position("other", 99, 9)}))
    assert "up to seq 9" in str(candidate_lacks(mine, {"a": Position("u", 9, 1)}))
    assert "term 0" in str(candidate_lacks(mine, {"a": Position("u", 50, 0)}))
