"""The hostile crowd against a small asyncio server that answers 408 and closes each connection
after a deadline: the crowd keeps its size, records every close, and stops when told."""

from __future__ import annotations

import asyncio
import time

from benchmarks.drivers.hostile_clients import (
    SLOWLORIS,
    STALLED,
    Crowd,
    CrowdPlan,
    CrowdProcess,
)

DEADLINE_S = 0.2
ANSWER = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


async def strict_server() -> tuple[asyncio.Server, int, list[bytes]]:
    """Reads whatever comes for DEADLINE_S, then answers 408 and closes."""
    received: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        data = b""
        try:
            async with asyncio.timeout(DEADLINE_S):
                while chunk := await reader.read(1024):
                    data += chunk
        except TimeoutError:
            pass
        received.append(data)
        writer.write(ANSWER)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1], received


def test_the_crowd_holds_its_size_and_records_every_close() -> None:
    async def main() -> None:
        server, port, received = await strict_server()
        plan = CrowdPlan(
            url=f"http://127.0.0.1:{port}",
            stalled_bodies=3,
            slowloris=4,
            declared_bytes=1000,
            sent_bytes=10,
            line_interval_s=0.05,
        )
        stop = asyncio.Event()
        crowd = Crowd(plan)
        running = asyncio.create_task(crowd.run(stop))
        await asyncio.sleep(DEADLINE_S * 4)
        stop.set()
        result = await running
        server.close()
        assert result.peak_open == plan.size
        stalled = [c for c in result.closures if c.kind == STALLED]
        slow = [c for c in result.closures if c.kind == SLOWLORIS]
        assert len(stalled) >= 2 * plan.stalled_bodies  # reopened after each close
        assert len(slow) >= 2 * plan.slowloris
        assert {c.status for c in stalled} == {408}
        assert all(c.held_s < DEADLINE_S + 0.5 for c in stalled)
        heads = [data for data in received if b"Content-Length: 1000" in data]
        assert heads
        assert all(data.endswith(b"\r\n\r\n{" + b" " * 9) for data in heads)
        dribbled = [data for data in received if b"X-Slow-0: 0\r\n" in data]
        assert dribbled
        assert all(b"\r\n\r\n" not in data for data in dribbled)

    asyncio.run(main())


def test_the_crowd_runs_in_a_process_of_its_own() -> None:
    async def main() -> None:
        server, port, _ = await strict_server()
        crowd = CrowdProcess(
            CrowdPlan(url=f"http://127.0.0.1:{port}", stalled_bodies=2, slowloris=2)
        )
        deadline = time.monotonic() + 30
        while crowd.open_now() < 4 and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert crowd.open_now() == 4
        await asyncio.sleep(DEADLINE_S * 2)
        result = await asyncio.to_thread(crowd.stop)
        server.close()
        assert result.peak_open == 4
        assert result.closures

    asyncio.run(main())
