"""The idempotency keys a live collection remembers: which request wrote which record.

A write request may carry a key (the ``Idempotency-Key`` header); the key travels in the record
it writes (:mod:`storage.live.operations`), so replaying the log — after a restart, or on a
replica — remembers it too. A request whose key is remembered is answered with the record it
wrote (its sequence number and item count) and logs nothing: a client that retries a write whose
answer it never got applies it once. A compaction empties the log, so it first writes the keys
it remembers to ``<collection>/keys.json`` (replaced atomically and durably); at most
:data:`KEYS_KEPT` of the latest are remembered.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from storage.durability import replace_durably

KEYS_FILE: Final = "keys.json"
_STAGING: Final = ".keys.json.tmp"
KEYS_KEPT: Final = 100_000
"""The latest keys a collection remembers (older ones are forgotten: a retry that late applies
again)."""


@dataclass(frozen=True)
class KeyedWrite:
    """What the request of a key wrote: its record's sequence number and how many items."""

    seq: int
    done: int


class KeyTable:
    """Keys to the writes they made, the latest :data:`KEYS_KEPT`."""

    def __init__(self, kept: int = KEYS_KEPT) -> None:
        self._kept = kept
        self._writes: OrderedDict[str, KeyedWrite] = OrderedDict()

    def __len__(self) -> int:
        return len(self._writes)

    def get(self, key: str) -> KeyedWrite | None:
        """The write of ``key``, or None."""
        return self._writes.get(key)

    def remember(self, key: str, write: KeyedWrite) -> None:
        """Remember ``key`` (the oldest is forgotten past :data:`KEYS_KEPT`)."""
        self._writes[key] = write
        self._writes.move_to_end(key)
        while len(self._writes) > self._kept:
            self._writes.popitem(last=False)

    def forget_after(self, seq: int) -> None:
        """Forget the keys of records after ``seq`` (records that were staged, never logged)."""
        for key in [key for key, write in self._writes.items() if write.seq > seq]:
            del self._writes[key]

    def to_json(self) -> str:
        """The file's text."""
        return json.dumps([[key, w.seq, w.done] for key, w in self._writes.items()]) + "\n"

    @classmethod
    def from_json(cls, text: str, kept: int = KEYS_KEPT) -> KeyTable:
        """The table a file holds; ``ValueError`` when it holds none."""
        table = cls(kept)
        try:
            for key, seq, done in json.loads(text):
                table.remember(str(key), KeyedWrite(int(seq), int(done)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not a key table: {exc}") from None
        return table


def read_keys(folder: Path) -> KeyTable:
    """The keys in ``folder`` (none without the file); ``ValueError`` when it is damaged."""
    path = folder / KEYS_FILE
    if not path.exists():
        return KeyTable()
    return KeyTable.from_json(path.read_text(encoding="utf-8"))


def write_keys(folder: Path, table: KeyTable) -> None:
    """Replace the keys in ``folder``, atomically and durably."""
    staging = folder / _STAGING
    staging.write_text(table.to_json(), encoding="utf-8")
    replace_durably(staging, folder / KEYS_FILE)
