"""A logged operation decodes to what was encoded: ids, vectors bit for bit, metadata, texts."""

from __future__ import annotations

import numpy as np
import pytest

from storage.live.operations import Delete, RecordFormatError, Upsert, decode, encode


def test_an_upsert_round_trips_bit_for_bit() -> None:
    vectors = np.array([[0.1, -0.0, np.float32(1e-38)], [3.0, 2.5, -7.25]], dtype=np.float32)
    operation = Upsert(("a", "é"), vectors, ({"n": 1}, {}), ("a text", None))
    back = decode(encode(operation))
    assert isinstance(back, Upsert)
    assert back.ids == operation.ids
    assert back.metadata == operation.metadata
    assert back.texts == operation.texts
    assert back.vectors.tobytes() == vectors.tobytes()


def test_a_delete_round_trips() -> None:
    assert decode(encode(Delete(("x", "y")))) == Delete(("x", "y"))


@pytest.mark.parametrize("payload", [b"", b"\x05\x00\x00\x00{}", b"\x02\x00\x00\x00{}"])
def test_a_payload_without_an_operation_is_refused(payload: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode(payload)


def test_shapes_must_agree() -> None:
    with pytest.raises(ValueError, match="shape"):
        Upsert(("a",), np.zeros((2, 3), dtype=np.float32), ({},), (None,))
