"""The access line (service.telemetry.access_log): one JSON object with the request's facts,
and json lines written bare, without the process's log prefix."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from service.request_context import RequestContext
from service.telemetry.access_log import (
    ACCESS_LOGGER,
    AccessEntry,
    json_line,
    use_access_log_format,
)


def test_a_json_line_carries_the_requests_facts() -> None:
    context = RequestContext("req-9")
    context.add_queue_ms(1.23456)
    context.add_encode_ms(2.0)
    entry = AccessEntry(
        method="POST",
        path="/v1/items/captions/7",
        route="/v1/items/{collection}/{id}",
        status=200,
        duration_ms=12.34567,
        client="10.1.2.3",
        bytes_sent=321,
        trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        span_id="00f067aa0ba902b7",
    )
    line = json_line(entry, context, 1_796_000_000.5)
    assert "\n" not in line
    assert json.loads(line) == {
        "time": "2026-11-30T00:53:20.500Z",
        "method": "POST",
        "path": "/v1/items/captions/7",
        "route": "/v1/items/{collection}/{id}",
        "status": 200,
        "duration_ms": 12.346,
        "decode_ms": None,
        "queue_ms": 1.235,
        "encode_ms": 2.0,
        "search_ms": None,
        "write_ms": None,
        "fsync_ms": None,
        "request_id": "req-9",
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        "span_id": "00f067aa0ba902b7",
        "client": "10.1.2.3",
        "bytes": 321,
    }


@pytest.fixture
def access_logger() -> Iterator[logging.Logger]:
    logger = logging.getLogger(ACCESS_LOGGER)
    saved = (list(logger.handlers), logger.propagate, logger.level)
    logger.setLevel(logging.INFO)
    yield logger
    use_access_log_format("text")
    logger.handlers[:], logger.propagate = saved[0], saved[1]
    logger.setLevel(saved[2])


def test_json_lines_are_written_bare_and_text_lines_propagate(
    access_logger: logging.Logger,
) -> None:
    stream = io.StringIO()
    use_access_log_format("json", stream)
    use_access_log_format("json", stream)  # set twice: still one handler
    access_logger.info("%s", '{"status":200}')
    assert stream.getvalue() == '{"status":200}\n'
    assert not access_logger.propagate
    use_access_log_format("text")
    access_logger.info("%s", "status=200")
    assert stream.getvalue() == '{"status":200}\n'  # the json handler is gone
    assert access_logger.propagate
