"""The access log: one line per request on the ``crisscross.access`` logger, as ``key=value``
text after the process's log prefix, or — ``access_log_format`` json — as one JSON object per
line and nothing else, for a log pipeline to parse.

Neither carries a body, a query text or a key. The JSON line carries the raw path (item ids
included) beside the route template; the text line, the route only.
"""

from __future__ import annotations

import json
import logging
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TextIO

from service.request_context import RequestContext
from service.settings import AccessLogFormat

ACCESS_LOGGER = "crisscross.access"
_JSON_HANDLER_NAME = "crisscross.access.json"


@dataclass(frozen=True)
class AccessEntry:
    """What one request's line says besides its :class:`RequestContext`'s id and stage times."""

    method: str
    path: str
    route: str
    status: int
    duration_ms: float
    client: str | None
    bytes_sent: int
    trace_id: str | None = None
    span_id: str | None = None


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def json_line(entry: AccessEntry, context: RequestContext, now_s: float) -> str:
    """The JSON access line of a request answered at ``now_s`` (``time.time()``): its time
    (ISO 8601, UTC, milliseconds), method, path, route, status, duration and stage times
    (milliseconds, null for a stage it did not go through), request id, trace and span ids
    (null when it is in no trace), client address and response body bytes."""
    stamp = datetime.fromtimestamp(now_s, UTC).isoformat(timespec="milliseconds")
    fields = {
        "time": stamp.replace("+00:00", "Z"),
        "method": entry.method,
        "path": entry.path,
        "route": entry.route,
        "status": entry.status,
        "duration_ms": _ms(entry.duration_ms),
        "decode_ms": _ms(context.decode_ms),
        "queue_ms": _ms(context.queue_ms),
        "encode_ms": _ms(context.encode_ms),
        "search_ms": _ms(context.search_ms),
        "write_ms": _ms(context.write_ms),
        "fsync_ms": _ms(context.fsync_ms),
        "request_id": context.request_id,
        "trace_id": entry.trace_id,
        "span_id": entry.span_id,
        "client": entry.client,
        "bytes": entry.bytes_sent,
    }
    return json.dumps(fields, ensure_ascii=True, separators=(",", ":"))


def use_access_log_format(log_format: AccessLogFormat, stream: TextIO | None = None) -> None:
    """Route the access logger for ``log_format``: json lines go to ``stream`` (stderr) bare,
    one message a line, without the process's log prefix; text lines propagate to the
    process's handlers as every other logger's do."""
    access = logging.getLogger(ACCESS_LOGGER)
    for handler in [h for h in access.handlers if h.get_name() == _JSON_HANDLER_NAME]:
        access.removeHandler(handler)
        handler.close()
    if log_format == "json":
        handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
        handler.set_name(_JSON_HANDLER_NAME)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.propagate = False
    else:
        access.propagate = True
