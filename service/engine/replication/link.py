"""How a replica reaches the others: the calls it makes, behind one interface (HTTP in the
service, :mod:`service.engine.replication.http_link`; in process in tests)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from service.engine.replication.wire import FetchAnswer, FetchRequest, Position
from storage.live.base_transfer import ReceivedBase


class LinkError(RuntimeError):
    """The other replica could not be reached, or failed to answer."""


class LeaderMovedError(LinkError):
    """The replica asked is not the leader; ``leader`` names the one it knows, if any."""

    def __init__(self, message: str, leader: str | None) -> None:
        super().__init__(message)
        self.leader = leader


@dataclass(frozen=True)
class DownloadedBase:
    """A collection's base copied from the leader: the files, the sequence number the base
    holds and its bundle collection."""

    received: ReceivedBase
    seq: int
    collection: str


@dataclass(frozen=True)
class Vote:
    """A candidate's request for a term: its URL and where its copies stand."""

    term: int
    candidate: str
    positions: Mapping[str, Position]


@dataclass(frozen=True)
class Ballot:
    """A voter's answer: granted or not, the term it knows, and why not."""

    granted: bool
    term: int
    replica: str = ""
    """The voter's replica id."""
    reason: str | None = None


@dataclass(frozen=True)
class MemberView:
    """What a member says of itself: its role, the latest term it knows, the leader it names."""

    role: str
    term: int
    leader: str | None


class ReplicaLink(Protocol):
    """Calls to the other replicas of a set."""

    async def fetch(self, leader: str, request: FetchRequest, timeout_s: float) -> FetchAnswer:
        """The leader's answer to a fetch (:class:`LeaderMovedError`, :class:`LinkError`)."""
        ...

    async def download_base(self, leader: str, name: str, into: Path) -> DownloadedBase:
        """Copy the base of collection ``name`` into the folder ``into``."""
        ...

    async def position(self, leader: str, timeout_s: float) -> dict[str, int]:
        """The sequence number readers see on the leader, per live collection."""
        ...

    async def vote(self, member: str, vote: Vote, timeout_s: float) -> Ballot:
        """Ask ``member`` to grant ``vote``."""
        ...

    async def status(self, member: str, timeout_s: float) -> MemberView:
        """What ``member`` says of itself."""
        ...

    async def follow(self, member: str, leader: str, timeout_s: float) -> None:
        """Tell ``member`` to follow ``leader``."""
        ...

    async def close(self) -> None:
        """Let go of connections."""
        ...
