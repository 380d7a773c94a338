"""The traceparent header read without a tracer (service.telemetry.traceparent)."""

from __future__ import annotations

import pytest

from service.telemetry.traceparent import TraceIds, parse_traceparent

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SPAN = "00f067aa0ba902b7"


@pytest.mark.parametrize(
    "value",
    [
        f"00-{TRACE}-{SPAN}-01",
        f"00-{TRACE}-{SPAN}-00",
        f" 00-{TRACE}-{SPAN}-01 ",
        f"01-{TRACE}-{SPAN}-01-x",
    ],
)
def test_a_valid_traceparent_names_the_callers_trace_and_span(value: str) -> None:
    assert parse_traceparent(value) == TraceIds(TRACE, SPAN)


@pytest.mark.parametrize(
    "value",
    [
        None,
        "",
        "garbage",
        f"ff-{TRACE}-{SPAN}-01",  # the forbidden version
        f"00-{'0' * 32}-{SPAN}-01",  # all-zero trace id
        f"00-{TRACE}-{'0' * 16}-01",  # all-zero span id
        f"00-{TRACE.upper()}-{SPAN}-01",  # upper case is not hex here
        f"00-{TRACE}-{SPAN}-01-extra",  # version 00 has exactly four fields
        f"01-{TRACE}-{SPAN}-01x",
    ],
)
def test_an_invalid_traceparent_names_nothing(value: str | None) -> None:
    assert parse_traceparent(value) is None
