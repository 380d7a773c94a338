"""Per-request context carried in the ASGI scope: request id and stage timings.

The outermost middleware creates it; routes record the time spent decoding images, encoding and
searching; the middleware turns it into response headers, the access log line and metrics. When
the request is traced, each recorded stage also becomes a span (:class:`StageSpans`), made from
the very readings the stage's time is: the span and the ``x-timing-*`` header cannot disagree.
"""

from __future__ import annotations

import itertools
import math
import re
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Literal, Protocol

from starlette.types import Scope

SCOPE_KEY = "crisscross.request"
_REQUEST_ID_CHARS = re.compile(r"^[A-Za-z0-9._-]+$")


Stage = Literal["decode", "queue", "encode", "search", "write", "fsync"]
"""A timed stage of a request: each has its ``x-timing-<stage>-ms`` header."""


class StageSpans(Protocol):
    """Where a traced request's stages go (:mod:`service.telemetry.tracing`): one span each."""

    def stage(self, name: Stage, started_s: float, ended_s: float) -> None:
        """Record stage ``name`` from ``started_s`` to ``ended_s`` (``perf_counter`` seconds)."""


@dataclass
class RequestContext:
    """What the service knows about one request while handling it (times in milliseconds).

    ``started_s`` and ``deadline_s`` are ``time.perf_counter()`` readings in seconds; work for
    the request that has not started by ``deadline_s`` is dropped (infinite: no deadline).
    ``spans`` is set only while the request is traced and sampled: each ``add_*_ms`` given the
    stage's start (``started_s``) then hands it the same interval. Untraced, it stays None and
    recording a stage costs one comparison more.
    """

    request_id: str
    started_s: float = field(default_factory=time.perf_counter)
    timeout_s: float = math.inf
    decode_ms: float | None = None
    queue_ms: float | None = None
    encode_ms: float | None = None
    search_ms: float | None = None
    write_ms: float | None = None
    fsync_ms: float | None = None
    spans: StageSpans | None = None

    @property
    def deadline_s(self) -> float:
        """``started_s + timeout_s``: the ``perf_counter`` time by which work must start."""
        return self.started_s + self.timeout_s

    def _span(self, name: Stage, elapsed_ms: float, started_s: float | None) -> None:
        spans = self.spans
        if spans is not None and started_s is not None:
            spans.stage(name, started_s, started_s + elapsed_ms / 1000.0)

    def add_decode_ms(self, elapsed_ms: float, started_s: float | None = None) -> None:
        """Add time spent turning image payloads (base64, file bytes) into RGB pixels."""
        self.decode_ms = (self.decode_ms or 0.0) + elapsed_ms
        self._span("decode", elapsed_ms, started_s)

    def add_queue_ms(self, elapsed_ms: float, started_s: float | None = None) -> None:
        """Add time spent waiting in an encoder's queue for a batch to start."""
        self.queue_ms = (self.queue_ms or 0.0) + elapsed_ms
        self._span("queue", elapsed_ms, started_s)

    def add_encode_ms(self, elapsed_ms: float, started_s: float | None = None) -> None:
        """Add time spent in the encoder (a request may encode more than once)."""
        self.encode_ms = (self.encode_ms or 0.0) + elapsed_ms
        self._span("encode", elapsed_ms, started_s)

    def add_search_ms(self, elapsed_ms: float, started_s: float | None = None) -> None:
        """Add time spent in faiss and vector lookups."""
        self.search_ms = (self.search_ms or 0.0) + elapsed_ms
        self._span("search", elapsed_ms, started_s)

    def add_write_ms(self, elapsed_ms: float, started_s: float | None = None) -> None:
        """Add time from handing a write to a live collection's writer until it was durable
        and visible (its turn, staging and the group's fsync)."""
        self.write_ms = (self.write_ms or 0.0) + elapsed_ms
        self._span("write", elapsed_ms, started_s)

    def add_fsync_ms(self, elapsed_ms: float, started_s: float | None = None) -> None:
        """Add time the write's group spent appending to the log and fsyncing it."""
        self.fsync_ms = (self.fsync_ms or 0.0) + elapsed_ms
        self._span("fsync", elapsed_ms, started_s)

    def elapsed_ms(self) -> float:
        """Milliseconds since the request reached the service."""
        return (time.perf_counter() - self.started_s) * 1000.0


def new_request_id() -> str:
    """A fresh request id: 32 lowercase hex characters."""
    return uuid.uuid4().hex


class RequestIds:
    """Request ids of one server process: 32 lowercase hex characters, a random prefix drawn
    once (16 characters, so the processes of one service do not collide) and a counter.
    A uuid4 per request read the OS's random source every time: 4 % of the event loop's time
    at 800 requests/s."""

    def __init__(self) -> None:
        self._prefix = secrets.token_hex(8)
        self._counter = itertools.count()

    def __call__(self) -> str:
        return f"{self._prefix}{next(self._counter) & 0xFFFF_FFFF_FFFF_FFFF:016x}"


def choose_request_id(offered: str | None, max_chars: int, fresh: RequestIds | None = None) -> str:
    """Echo the client's ``x-request-id`` when it is sane (≤ ``max_chars`` of
    ``[A-Za-z0-9._-]``), otherwise make one with ``fresh`` (a uuid4 without) — a log line must
    never carry arbitrary bytes."""
    if offered and len(offered) <= max_chars and _REQUEST_ID_CHARS.match(offered):
        return offered
    return fresh() if fresh is not None else new_request_id()


def context_of(scope: Scope) -> RequestContext | None:
    """The request's context, or None outside the middleware (e.g. a bare ASGI call in a test)."""
    context = scope.get(SCOPE_KEY)
    return context if isinstance(context, RequestContext) else None


def request_id_of(scope: Scope) -> str:
    """The request's id; a fresh one when the context middleware did not run."""
    context = context_of(scope)
    return context.request_id if context is not None else new_request_id()
