"""The W3C Trace Context ``traceparent`` header, read without a tracer: which trace and span a
request's caller was in, for the access log of an untraced service."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

TRACEPARENT_HEADER: Final = "traceparent"
_TRACEPARENT: Final = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
_ZERO_TRACE: Final = "0" * 32
_ZERO_SPAN: Final = "0" * 16


@dataclass(frozen=True)
class TraceIds:
    """A trace id (32 lowercase hex characters) and a span id (16) in it."""

    trace_id: str
    span_id: str


def parse_traceparent(value: str | None) -> TraceIds | None:
    """The caller's trace and span of a ``traceparent`` value, or None when it is absent or
    not valid (the Trace Context rules: version ``ff`` and all-zero ids are invalid; a version
    after ``00`` may carry more fields after the four it shares with ``00``)."""
    if not value:
        return None
    match = _TRACEPARENT.match(value.strip())
    if match is None:
        return None
    version, trace_id, span_id, _flags = match.groups()
    rest = value.strip()[match.end() :]
    if version == "ff" or (version == "00" and rest) or (rest and not rest.startswith("-")):
        return None
    if trace_id == _ZERO_TRACE or span_id == _ZERO_SPAN:
        return None
    return TraceIds(trace_id, span_id)
