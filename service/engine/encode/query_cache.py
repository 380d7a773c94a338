"""The query-embedding cache: a least-recently-used map from (variant fingerprint, text) to the
text tower's embedding of it, so a repeated query text skips the queue and the encoder.

Off unless ``query_cache_entries`` is above 0. Keyed by the variant's fingerprint (a hash of its
files), so a reload that changes a variant's files can never answer from the old model; a
published catalog also empties it (:func:`service.lifecycle.state.publish_catalog`). Used from
the event loop only (no lock). Rows are stored read-only and handed out as they are: the
searcher copies what it returns.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import numpy.typing as npt

Row = npt.NDArray[np.float32]


class QueryCache:
    """At most ``max_entries`` text embeddings, the least recently used evicted first."""

    def __init__(self, max_entries: int) -> None:
        if max_entries <= 0:
            raise ValueError(f"max_entries must be positive, got {max_entries}")
        self.max_entries = max_entries
        self._rows: OrderedDict[tuple[str, str], Row] = OrderedDict()

    def __len__(self) -> int:
        return len(self._rows)

    def get(self, fingerprint: str, text: str) -> Row | None:
        """The cached embedding of ``text`` by the variant of ``fingerprint``, or None."""
        key = (fingerprint, text)
        row = self._rows.get(key)
        if row is not None:
            self._rows.move_to_end(key)
        return row

    def put(self, fingerprint: str, text: str, row: Row) -> None:
        """Keep ``row`` (a copy, read-only) as the embedding of ``text``."""
        kept = np.array(row, dtype=np.float32, copy=True)
        kept.flags.writeable = False
        key = (fingerprint, text)
        self._rows[key] = kept
        self._rows.move_to_end(key)
        while len(self._rows) > self.max_entries:
            self._rows.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        self._rows.clear()
