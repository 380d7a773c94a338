"""The mixed run's arithmetic: requests tallied by answer, latency percentiles, read-your-writes
accounting and write throughput over time. Pure: no I/O, no clock."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.metrics.latency import percentile

OK_STATUSES = frozenset({"200", "201", "202", "204"})


def latency_numbers(latencies_ms: Sequence[float], prefix: str = "") -> dict[str, float | None]:
    """p50/p95/p99/max/mean (ms; linear-interpolated percentiles) of ``latencies_ms``, keyed
    ``<prefix>p50_ms`` ...; ``None`` each for no values."""
    return {
        f"{prefix}p50_ms": percentile(latencies_ms, 50),
        f"{prefix}p95_ms": percentile(latencies_ms, 95),
        f"{prefix}p99_ms": percentile(latencies_ms, 99),
        f"{prefix}max_ms": max(latencies_ms, default=None),
        f"{prefix}mean_ms": sum(latencies_ms) / len(latencies_ms) if latencies_ms else None,
    }


@dataclass
class RequestTally:
    """Requests of one kind in one phase: their final answers, the 503s retried, and the
    latencies of the successful ones.

    Attributes:
        answers: final status (``"200"``, ``"422"``, ``"timeout"``, ...) → requests.
        retried_503: 503 + ``Retry-After`` answers retried (not failures).
        latencies_ms: latencies of the 2xx answers, retry waits included.
    """

    answers: Counter[str] = field(default_factory=Counter)
    retried_503: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    def record(self, status: str, latency_ms: float, retries: int) -> None:
        """One finished request."""
        self.answers[status] += 1
        self.retried_503 += retries
        if status in OK_STATUSES:
            self.latencies_ms.append(latency_ms)

    @property
    def requests(self) -> int:
        return sum(self.answers.values())

    @property
    def ok(self) -> int:
        return len(self.latencies_ms)

    @property
    def errors(self) -> int:
        """Requests that ended in anything but a 2xx answer."""
        return self.requests - self.ok

    def summary(self, wall_s: float) -> dict[str, Any]:
        """``requests``, ``ok``, ``errors``, ``answers``, ``retried_503``, ``per_s`` (2xx ÷
        ``wall_s``) and the latency numbers of the 2xx answers."""
        return {
            "requests": self.requests,
            "ok": self.ok,
            "errors": self.errors,
            "answers": dict(sorted(self.answers.items())),
            "retried_503": self.retried_503,
            "per_s": self.ok / wall_s if wall_s > 0 else None,
            **latency_numbers(self.latencies_ms),
        }


@dataclass
class Visibility:
    """Read-your-writes checks of one kind (``items/get`` or a k=1 search with the item's own
    vector), one per acknowledged upsert.

    Attributes:
        checked: acknowledged upserts checked.
        lags_ms: per write seen, the time from its acknowledgement to the first answer that
            held it.
        not_visible_at_first_read: writes the first read after the ack missed (the service
            promises none).
        never_visible: writes still missing when polling gave up.
        reads: reads sent, polls included.
    """

    checked: int = 0
    lags_ms: list[float] = field(default_factory=list)
    not_visible_at_first_read: int = 0
    never_visible: int = 0
    reads: int = 0

    def record(self, lag_ms: float | None, reads: int) -> None:
        """One write checked: seen ``lag_ms`` after its ack (``None``: never) after ``reads``
        reads."""
        if reads < 1:
            raise ValueError("a checked write takes at least one read")
        self.checked += 1
        self.reads += reads
        if lag_ms is None:
            self.never_visible += 1
            self.not_visible_at_first_read += 1
            return
        self.lags_ms.append(lag_ms)
        if reads > 1:
            self.not_visible_at_first_read += 1

    @property
    def violations(self) -> int:
        """Writes not visible at the first read after their ack."""
        return self.not_visible_at_first_read

    def summary(self) -> dict[str, Any]:
        """The counts and the lag's p50/p95/p99/max/mean (``lag_`` prefixed)."""
        return {
            "checked": self.checked,
            "visible_at_first_read": self.checked - self.not_visible_at_first_read,
            "not_visible_at_first_read": self.not_visible_at_first_read,
            "never_visible": self.never_visible,
            "reads": self.reads,
            **latency_numbers(self.lags_ms, "lag_"),
        }


@dataclass
class DeleteChecks:
    """Checks after each acknowledged delete: its ids must be gone from ``items/get``, and a
    k=1 search with one deleted item's vector must not return it.

    Attributes:
        deletes: acknowledged deletes checked.
        ids: ids they deleted.
        still_in_get: deleted ids ``items/get`` still returned right after the ack.
        still_in_search: k=1 searches that returned the deleted item searched for.
        searched: such searches.
    """

    deletes: int = 0
    ids: int = 0
    still_in_get: int = 0
    still_in_search: int = 0
    searched: int = 0

    def record(self, ids: int, still_in_get: int, searched: bool, found_by_search: bool) -> None:
        """One acknowledged delete of ``ids`` ids, checked."""
        self.deletes += 1
        self.ids += ids
        self.still_in_get += still_in_get
        self.searched += int(searched)
        self.still_in_search += int(found_by_search)

    @property
    def resurrected(self) -> int:
        """Deleted ids a read returned after the delete's ack (get and search together)."""
        return self.still_in_get + self.still_in_search

    def summary(self) -> dict[str, Any]:
        return {
            "deletes": self.deletes,
            "ids": self.ids,
            "still_in_get": self.still_in_get,
            "searched": self.searched,
            "still_in_search": self.still_in_search,
            "resurrected": self.resurrected,
        }


def throughput_timeline(
    acks: Sequence[tuple[float, int]], start: float, end: float, bucket_s: float = 1.0
) -> list[dict[str, float]]:
    """Items acknowledged per second in consecutive buckets of ``bucket_s`` from ``start`` to
    ``end``; a remainder under half a bucket widens the last bucket instead of making a sliver
    of its own (a few acks in a sliver would read as a spike).

    Args:
        acks: ``(time of the ack, items)`` per acknowledged write, on the clock of ``start``.
        start: the phase's start.
        end: its end.
        bucket_s: the bucket's width, seconds.

    Returns:
        One ``{"t_s": bucket start - start, "seconds": width, "items": n, "items_per_s": rate}``
        per bucket, in time order; an ack at or after ``end`` falls in the last bucket, one
        before ``start`` in the first.
    """
    if bucket_s <= 0:
        raise ValueError("bucket_s must be positive")
    span = end - start
    if span <= 0:
        return []
    whole = int(span // bucket_s)
    widths = [bucket_s] * whole
    remainder = span - whole * bucket_s
    if widths and remainder < bucket_s / 2:
        widths[-1] += remainder
    elif remainder > 0:
        widths.append(remainder)
    items = [0] * len(widths)
    for at, number in acks:
        index = min(len(widths) - 1, max(0, int((at - start) // bucket_s)))
        items[index] += number
    return [
        {
            "t_s": index * bucket_s,
            "seconds": width,
            "items": number,
            "items_per_s": number / width,
        }
        for index, (width, number) in enumerate(zip(widths, items, strict=True))
    ]


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator ÷ denominator``, or ``None`` when either is missing or the denominator 0."""
    if numerator is None or not denominator:
        return None
    return numerator / denominator
