"""A fake :class:`benchmarks.drivers.sender.Sender` for the driver tests: answers after a fixed
time, with statuses by request index."""

from __future__ import annotations

import asyncio

from benchmarks.drivers.sender import TransportFailure


class FakeSender:
    """Answers after ``service_s``; statuses by request index; counts calls."""

    def __init__(self, service_s: float, statuses: dict[int, int] | None = None) -> None:
        self.service_s = service_s
        self.statuses = statuses or {}
        self.sent: list[int] = []
        self.closed = False

    async def send(self, index: int) -> int:
        self.sent.append(index)
        await asyncio.sleep(self.service_s)
        status = self.statuses.get(index, 200)
        if status == 0:
            raise TransportFailure("connection", "reset")
        return status

    async def aclose(self) -> None:
        self.closed = True
