"""Retries: which failures are retried, and how long to wait before each retry.

Pure decisions, shared by the sync and the async client (each does its own sleeping and
sending). A call is retried on a connection error, 408, 429, 502, 503 or 504, with exponential
backoff and jitter, or after the ``Retry-After`` the answer names (capped).

A write that may already have been applied is retried only when repeating it is harmless
(``idempotent``: searches, reads, and the item writes (upserts, deletes by id or by filter,
metadata patches), each sent with an ``Idempotency-Key`` the service applies once, however
often it comes). Other writes (create, drop, compact, snapshot, reload) are retried only when
the failure proves the service did not act: the connection was never made, or the answer is
408, 429 or a 503 ``overloaded`` / ``not_ready`` / ``no_quorum`` refusal.
"""

from __future__ import annotations

import email.utils
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})
"""Statuses that say "try again later"."""

NOT_APPLIED_STATUSES = frozenset({408, 429})
"""Statuses after which the service has certainly not acted on the request."""

NOT_APPLIED_CODES = frozenset({"overloaded", "not_ready", "shards_unavailable", "no_quorum"})
"""503 codes the service answers before doing anything (admission, start-up, shut-down; a
search that shards of a sharded collection did not answer, which changed nothing; a leader no
majority follows, which refuses writes before it logs them)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How failed calls are retried.

    Attributes:
        max_retries: retries after the first attempt (0: never retry).
        backoff_s: the first backoff; each retry doubles it.
        max_backoff_s: the longest backoff.
        max_retry_after_s: the longest wait a ``Retry-After`` header may ask for.
        statuses: the statuses retried.
        retry_connection_errors: whether a request that got no answer is retried.
        require_retry_after: retry a status only when its answer carries ``Retry-After``.
        jitter: a source of uniform numbers in [0, 1) (a seeded ``random.Random().random``
            makes waits reproducible).
    """

    max_retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    max_retry_after_s: float = 30.0
    statuses: frozenset[int] = RETRY_STATUSES
    retry_connection_errors: bool = True
    require_retry_after: bool = False
    jitter: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1-based) when the answer names none:
        half the exponential step, plus up to the other half at random."""
        step = min(self.max_backoff_s, self.backoff_s * 2.0 ** (retry - 1))
        share: float = self.jitter()
        return step / 2 + step / 2 * share

    def wait(self, retry: int, retry_after: float | None) -> float:
        """The wait before retry number ``retry``: ``Retry-After`` (capped) when given, else
        :meth:`backoff`."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after_s)
        return self.backoff(retry)

    def retry_answer(
        self,
        retries: int,
        status: int,
        code: str | None,
        retry_after: float | None,
        *,
        idempotent: bool,
    ) -> bool:
        """Whether an answer with ``status`` (error ``code``) is retried after ``retries``."""
        if retries >= self.max_retries or status not in self.statuses:
            return False
        if self.require_retry_after and retry_after is None:
            return False
        return (
            idempotent
            or status in NOT_APPLIED_STATUSES
            or (status == 503 and code in NOT_APPLIED_CODES)
        )

    def retry_failure(self, retries: int, error: httpx.TransportError, *, idempotent: bool) -> bool:
        """Whether a request that got no answer (``error``) is retried after ``retries``."""
        if retries >= self.max_retries or not self.retry_connection_errors:
            return False
        never_sent = isinstance(
            error, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout
        )
        return idempotent or never_sent


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or HTTP-date), at least
    0; ``None`` when the header is absent or unreadable."""
    if value is None:
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def error_code_of(response: httpx.Response) -> str | None:
    """The error code of an error answer's body, if it has the service's error shape."""
    try:
        body = response.json()
    except ValueError:
        return None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code")
        return None if code is None else str(code)
    return None
