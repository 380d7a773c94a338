"""Replicas that reach each other in process: a :class:`ReplicaLink` that calls the other
replica sets directly (the HTTP layer's conversions done the same way), with members that can
be taken down and brought back."""

from __future__ import annotations

import asyncio
from pathlib import Path

from service.engine.replication.link import (
    Ballot,
    DownloadedBase,
    LeaderMovedError,
    LinkError,
    MemberView,
    Vote,
)
from service.engine.replication.replica_set import ReplicaSet
from service.engine.replication.wire import (
    FetchAnswer,
    FetchRequest,
    decode_answer,
    encode_answer,
)
from service.exceptions import DomainError, NotLeaderError
from storage.live.base_transfer import unpack_bytes


class ReplicaNetwork:
    """The replica sets by URL; one missing (down) cannot be reached."""

    def __init__(self) -> None:
        self.members: dict[str, ReplicaSet] = {}
        self.calls = 0

    def link(self) -> InProcessLink:
        """A link into this network."""
        return InProcessLink(self)

    def target(self, url: str) -> ReplicaSet:
        self.calls += 1
        member = self.members.get(url.rstrip("/"))
        if member is None:
            raise LinkError(f"{url}: connection refused")
        return member


class InProcessLink:
    """:class:`~service.engine.replication.link.ReplicaLink` over a :class:`ReplicaNetwork`."""

    def __init__(self, network: ReplicaNetwork) -> None:
        self._network = network

    async def fetch(self, leader: str, request: FetchRequest, timeout_s: float) -> FetchAnswer:
        target = self._network.target(leader)
        try:
            answer = await asyncio.wait_for(target.fetch(request), timeout_s)
        except NotLeaderError as error:
            raise LeaderMovedError(str(error), error.leader) from None
        except (DomainError, TimeoutError) as error:
            raise LinkError(str(error)) from None
        return decode_answer(encode_answer(answer))  # through the wire format

    async def download_base(self, leader: str, name: str, into: Path) -> DownloadedBase:
        target = self._network.target(leader)
        try:
            files = await target.open_base(name)
        except NotLeaderError as error:
            raise LeaderMovedError(str(error), error.leader) from None
        except DomainError as error:
            raise LinkError(str(error)) from None
        data = b"".join(files.chunks())
        received = unpack_bytes(data, into / "files", files.version)
        return DownloadedBase(received, files.seq, files.collection)

    async def position(self, leader: str, timeout_s: float) -> dict[str, int]:
        del timeout_s  # in process: at once
        return self._network.target(leader).position()

    async def vote(self, member: str, vote: Vote, timeout_s: float) -> Ballot:
        del timeout_s
        try:
            return await self._network.target(member).vote(vote)
        except DomainError as error:
            raise LinkError(str(error)) from None

    async def status(self, member: str, timeout_s: float) -> MemberView:
        del timeout_s
        status = self._network.target(member).status()
        return MemberView(status.role, status.term, status.leader)

    async def follow(self, member: str, leader: str, timeout_s: float) -> None:
        del timeout_s
        await self._network.target(member).follow(leader)

    async def close(self) -> None:
        return None
