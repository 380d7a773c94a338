"""Read-your-writes: the highest sequence number the client's writes reached, per live
collection, and the ``X-Min-Seq`` header a read of those collections sends.

Every write answer (upsert, delete, patch) carries the ``seq`` the collection's log reached
with it; a replica answers a read sent with ``X-Min-Seq: name=seq`` only once it has applied
that record (waiting up to the server's read_wait_s, then 503 ``replica_behind``). A client
remembers the highest ``seq`` per collection (:class:`WrittenSeqs`, shared by its
``with_options`` copies and, in the integrations, by the async twin of a sync client) and sends
it with every read of that collection, so a read from any replica sees the client's own
writes. A collection the client creates or drops is forgotten (a new one starts at 0).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

MIN_SEQ_HEADER = "x-min-seq"
"""The header of a read: ``name=seq,name=seq``."""


class WrittenSeqs:
    """The highest ``seq`` each collection's write answers returned (thread-safe)."""

    def __init__(self) -> None:
        self._seqs: dict[str, int] = {}
        self._lock = threading.Lock()

    def saw(self, collection: str, seq: int) -> None:
        """A write to ``collection`` was answered with ``seq`` (kept if the highest)."""
        with self._lock:
            if seq > self._seqs.get(collection, -1):
                self._seqs[collection] = seq

    def forget(self, collection: str) -> None:
        """``collection`` was created or dropped: its sequence numbers start again."""
        with self._lock:
            self._seqs.pop(collection, None)

    def snapshot(self) -> dict[str, int]:
        """Collection → the highest ``seq`` written, now."""
        with self._lock:
            return dict(self._seqs)

    def header(self, collections: Iterable[str]) -> str | None:
        """The ``X-Min-Seq`` value of a read of ``collections`` (each written one once, in
        the order given); ``None`` when the client wrote none of them."""
        with self._lock:
            wanted = {name: self._seqs[name] for name in collections if name in self._seqs}
        if not wanted:
            return None
        return ",".join(f"{name}={seq}" for name, seq in wanted.items())
