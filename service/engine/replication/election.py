"""Which copy is further along: where a server's copies of its live collections stand, and the
vote rule a member applies to a candidate for the next term."""

from __future__ import annotations

from collections.abc import Mapping

from service.engine.collection.live_collections import LiveCollections
from service.engine.replication.wire import Position
from service.exceptions import quoted


def copy_positions(live: LiveCollections) -> dict[str, Position]:
    """Each live collection's uid, the sequence readers see, and the term of that record."""
    positions = {}
    for entry in live.entries:
        collection = entry.collection
        seq = collection.visible_seq
        positions[collection.name] = Position(
            collection.spec.uid, seq, collection.terms.term_of(seq)
        )
    return positions


def candidate_lacks(mine: Mapping[str, Position], candidates: Mapping[str, Position]) -> str | None:
    """Why a candidate whose copies stand at ``candidates`` lacks writes a member whose copies
    stand at ``mine`` holds (None: it lacks none): a collection the member holds records of and
    the candidate does not hold (or holds another of the same name), or a copy behind the
    member's — the term of its last record first, then its sequence number."""
    for name, own in mine.items():
        if own.after == 0:
            continue
        theirs = candidates.get(name)
        if theirs is None or theirs.uid != own.uid:
            return f"the candidate lacks collection {quoted(name)}"
        if (theirs.term, theirs.after) < (own.term, own.after):
            return (
                f"the candidate holds collection {quoted(name)} up to seq {theirs.after} "
                f"(term {theirs.term}), this replica up to {own.after} (term {own.term})"
            )
    return None
