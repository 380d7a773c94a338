"""What one server knows of the replica set of its live collections, kept beside them.

``<collections_dir>/.replication.json``: this replica's id (made once), the latest leader term
it knows, the leader it follows (None: it leads, or led and was fenced), whether it is fenced
(a leader that learned of a later term: it takes no write until it follows a leader), the vote
it gave in its latest term, and the members it last heard of. Replaced atomically and durably
whenever any of it changes, before the change is acted on: a replica never forgets a term it
voted in, so it can never vote twice in one term.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from storage.durability import replace_durably

STATE_FILE: Final = ".replication.json"
_STAGING: Final = ".replication.json.tmp"


@dataclass(frozen=True)
class ReplicaState:
    """One replica's durable knowledge of its set (see the module docstring)."""

    replica_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    term: int = 0
    leader: str | None = None
    fenced: bool = False
    voted_for: str | None = None
    """The candidate this replica granted ``term`` to (None: none)."""
    members: tuple[str, ...] = ()
    """URLs of the replicas last heard of (the leader's followers, and the leader)."""

    def to_json(self) -> str:
        """The file's text."""
        document = {
            "replica_id": self.replica_id,
            "term": self.term,
            "leader": self.leader,
            "fenced": self.fenced,
            "voted_for": self.voted_for,
            "members": list(self.members),
        }
        return json.dumps(document, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> ReplicaState:
        """The state a file holds; ``ValueError`` when it holds none."""
        try:
            document = json.loads(text)
            return cls(
                replica_id=str(document["replica_id"]),
                term=int(document["term"]),
                leader=None if document.get("leader") is None else str(document["leader"]),
                fenced=bool(document.get("fenced", False)),
                voted_for=(
                    None if document.get("voted_for") is None else str(document["voted_for"])
                ),
                members=tuple(str(url) for url in document.get("members", [])),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"not a replica state: {exc}") from None


def read_replica_state(root: Path) -> ReplicaState:
    """The state under ``root`` (a new one, not yet written, without the file)."""
    path = root / STATE_FILE
    if not path.exists():
        return ReplicaState()
    return ReplicaState.from_json(path.read_text(encoding="utf-8"))


def write_replica_state(root: Path, state: ReplicaState) -> None:
    """Replace the state under ``root``, atomically and durably."""
    root.mkdir(parents=True, exist_ok=True)
    staging = root / _STAGING
    staging.write_text(state.to_json(), encoding="utf-8")
    replace_durably(staging, root / STATE_FILE)
