"""A live collection's term history: which leader term wrote which records.

Replicas of a collection (:mod:`service.engine.replication`) number its records alike; a term is
one leader's reign. When a replica becomes the leader in term ``T`` it records that its records
from ``last + 1`` on are of term ``T``, before it takes a write. Two replicas whose records at
sequence ``s`` are of the same term hold the same records up to ``s`` (one leader per term, and
a follower only appends its leader's records in order), so comparing the term of one sequence
number tells a replica whether its log is a prefix of the leader's or has diverged from it.

``<collection>/terms.json`` holds ``[[term, first_seq], ...]`` in order; records before the first
entry (or every record, without the file) are of term 0. It is replaced atomically and durably.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from storage.durability import replace_durably

TERMS_FILE: Final = "terms.json"
_STAGING: Final = ".terms.json.tmp"


@dataclass(frozen=True)
class TermHistory:
    """``(term, first_seq)`` pairs, terms and first sequence numbers ascending."""

    entries: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        for (term, first), (next_term, next_first) in zip(
            self.entries, self.entries[1:], strict=False
        ):
            if next_term <= term or next_first < first:
                raise ValueError(f"term history out of order: {self.entries}")

    def term_of(self, seq: int) -> int:
        """The term of record ``seq`` (0: before every entry, or ``seq`` 0)."""
        term = 0
        for entry_term, first in self.entries:
            if seq <= 0 or first > seq:
                break
            term = entry_term
        return term

    @property
    def last_term(self) -> int:
        """The latest term recorded (0: none)."""
        return self.entries[-1][0] if self.entries else 0

    def begun(self, term: int, first_seq: int) -> TermHistory:
        """This history with term ``term`` starting at ``first_seq`` (the records from there on
        are the new term's; an entry starting there already is replaced)."""
        if term <= self.last_term:
            raise ValueError(f"term {term} does not follow term {self.last_term}")
        kept = tuple(entry for entry in self.entries if entry[1] < first_seq)
        return TermHistory((*kept, (term, first_seq)))

    def to_list(self) -> list[list[int]]:
        """The JSON form: ``[[term, first_seq], ...]``."""
        return [[term, first] for term, first in self.entries]

    @classmethod
    def of(cls, pairs: Sequence[Sequence[int]]) -> TermHistory:
        """The history of JSON pairs; ``ValueError`` for anything else."""
        try:
            return cls(tuple((int(term), int(first)) for term, first in pairs))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"not a term history: {exc}") from None


def read_terms(folder: Path) -> TermHistory:
    """The history in ``folder`` (empty without the file); ``ValueError`` when it is damaged."""
    path = folder / TERMS_FILE
    if not path.exists():
        return TermHistory()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a term history: {exc}") from None
    return TermHistory.of(document)


def write_terms(folder: Path, history: TermHistory) -> None:
    """Replace the history in ``folder``, atomically and durably."""
    staging = folder / _STAGING
    staging.write_text(json.dumps(history.to_list()) + "\n", encoding="utf-8")
    replace_durably(staging, folder / TERMS_FILE)
