"""The drivers' one interface: a transport failure names its kind."""

from __future__ import annotations

from benchmarks.drivers.sender import TRANSPORT_KINDS, TransportFailure


def test_a_failure_carries_its_kind() -> None:
    failure = TransportFailure("timeout", "no answer within 1 s")
    assert failure.kind == "timeout"
    assert str(failure) == "timeout: no answer within 1 s"
    assert TRANSPORT_KINDS == ("connect", "connection", "timeout", "protocol")
