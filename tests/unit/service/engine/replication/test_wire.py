"""The fetch answer's one writer and one reader: every field and every collection's records
come back; anything else is refused."""

from __future__ import annotations

import pytest

from formats.field_types import FieldType
from service.engine.replication.wire import (
    CollectionState,
    FetchAnswer,
    FetchRequest,
    Position,
    WireError,
    decode_answer,
    encode_answer,
    request_document,
)
from storage.live.log import frame
from storage.live.spec import CollectionSpec
from storage.live.terms import TermHistory


def _answer() -> FetchAnswer:
    specs = [
        CollectionSpec("a", 4, {"cat": FieldType.STRING}, uid="u1", acks="all"),
        CollectionSpec("b", 8, {}, uid="u2"),
    ]
    return FetchAnswer(
        term=3,
        leader="http://127.0.0.1:1",
        members=("http://127.0.0.1:1", "http://127.0.0.1:2"),
        collections=(
            CollectionState(
                specs[0],
                10,
                "v1",
                12,
                TermHistory(((1, 1), (3, 11))),
                None,
                frame(11, b"x") + frame(12, b"y"),
            ),
            CollectionState(specs[1], 0, None, 0, TermHistory(), "new on this follower"),
        ),
    )


def test_an_answer_round_trips() -> None:
    answer = _answer()
    assert decode_answer(encode_answer(answer)) == answer


@pytest.mark.parametrize("cut", [1, 5, 40])
def test_a_cut_or_padded_answer_is_refused(cut: int) -> None:
    data = encode_answer(_answer())
    with pytest.raises(WireError):
        decode_answer(data[:-cut])
    with pytest.raises(WireError, match="after the last"):
        decode_answer(data + b"z")
    with pytest.raises(WireError):
        decode_answer(b"\x00\x00")


def test_a_request_document_names_every_position() -> None:
    positions = {"a": Position("u1", 12, 3)}
    request = FetchRequest("r1", "http://127.0.0.1:2", 3, positions, wait_ms=5, max_bytes=9)
    assert request_document(request) == {
        "replica": "r1",
        "url": "http://127.0.0.1:2",
        "term": 3,
        "wait_ms": 5,
        "max_bytes": 9,
        "positions": {"a": {"uid": "u1", "after": 12, "term": 3}},
    }
