"""Hostile clients on raw asyncio sockets, for ``python -m benchmarks hostile``.

Two kinds of connection, each a few bytes of the attacker's and as much of the server's as it
lets them hold:

- **stalled body** (slow POST, R.U.D.Y.): a complete ``POST`` head declaring a body of
  ``declared_bytes``, the first ``sent_bytes`` of that body, then nothing;
- **slowloris**: a request line, then one more header line every ``line_interval_s`` seconds,
  never the blank line that ends the head.

Every connection is reopened as soon as the server closes it, so the crowd keeps its size for
as long as it runs; each close is recorded with how long the server held the connection (from
the last byte of the head for a stalled body, from the connect for a slowloris) and the status
it answered, if any. The crowd runs in a process of its own (:func:`run_crowd_process`), so the
honest client measured beside it shares no event loop or interpreter lock with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import time
from collections import Counter
from dataclasses import dataclass, field
from multiprocessing.sharedctypes import Synchronized
from multiprocessing.synchronize import Event as ProcessEvent
from typing import Any, Final

from benchmarks.drivers.raw_http import Endpoint

STALLED: Final = "stalled_body"
SLOWLORIS: Final = "slowloris"
CONNECT_TIMEOUT_S: Final = 10.0
# An accept of thousands of connections at once overflows a small listen backlog: the crowd
# opens them in waves.
OPEN_WAVE: Final = 100
OPEN_WAVE_PAUSE_S: Final = 0.05


@dataclass(frozen=True)
class CrowdPlan:
    """What the crowd holds open.

    Attributes:
        url: the service root.
        path: the route the requests name.
        stalled_bodies: stalled-body connections held at once.
        slowloris: slowloris connections held at once.
        declared_bytes: the body length a stalled body declares.
        sent_bytes: the body bytes it sends before stalling.
        line_interval_s: seconds between a slowloris connection's header lines.
    """

    url: str
    path: str = "/v1/search"
    stalled_bodies: int = 200
    slowloris: int = 1000
    declared_bytes: int = 100_000
    sent_bytes: int = 10
    line_interval_s: float = 5.0

    @property
    def size(self) -> int:
        """Connections the crowd holds at once."""
        return self.stalled_bodies + self.slowloris


@dataclass(frozen=True)
class Closure:
    """One attacking connection the server closed.

    Attributes:
        kind: :data:`STALLED` or :data:`SLOWLORIS`.
        held_s: how long the server held it (see the module).
        status: the HTTP status it answered before closing, or ``None`` (closed silently).
        closed_at_s: when, in seconds since the crowd started.
    """

    kind: str
    held_s: float
    status: int | None
    closed_at_s: float


@dataclass
class CrowdResult:
    """What the crowd saw.

    Attributes:
        closures: every connection the server closed.
        connect_failures: connects refused or timed out, by kind.
        peak_open: the most connections open at once.
        duration_s: how long the crowd ran.
    """

    closures: list[Closure] = field(default_factory=list)
    connect_failures: Counter[str] = field(default_factory=Counter)
    peak_open: int = 0
    duration_s: float = 0.0


def _status_of(answer: bytes) -> int | None:
    if answer.startswith(b"HTTP/1.") and len(answer) >= 12 and answer[9:12].isdigit():
        return int(answer[9:12])
    return None


class Crowd:
    """The connections of a :class:`CrowdPlan`, each reopened when the server closes it."""

    def __init__(self, plan: CrowdPlan, open_now: Synchronized[int] | None = None) -> None:
        self.plan = plan
        self.endpoint = Endpoint.from_url(plan.url)
        self.result = CrowdResult()
        self._open = 0
        self._open_now = open_now
        self._started = time.monotonic()

    def _moved(self, delta: int) -> None:
        self._open += delta
        self.result.peak_open = max(self.result.peak_open, self._open)
        if self._open_now is not None:
            self._open_now.value = self._open

    async def _connect(self, kind: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while True:
            try:
                async with asyncio.timeout(CONNECT_TIMEOUT_S):
                    return await asyncio.open_connection(self.endpoint.host, self.endpoint.port)
            except (OSError, TimeoutError):
                self.result.connect_failures[kind] += 1
                await asyncio.sleep(0.5)

    def _head(self, extra: str = "") -> bytes:
        return (
            f"POST {self.endpoint.base_path}{self.plan.path} HTTP/1.1\r\n"
            f"Host: {self.endpoint.host_header}\r\n{extra}"
        ).encode("ascii")

    async def _stalled_body(self) -> None:
        reader, writer = await self._connect(STALLED)
        self._moved(1)
        try:
            head = self._head(
                f"Content-Type: application/json\r\nContent-Length: {self.plan.declared_bytes}"
                "\r\n\r\n"
            )
            writer.write(head + b"{" + b" " * (self.plan.sent_bytes - 1))
            await writer.drain()
            sent = time.monotonic()
            answer = await reader.read()  # nothing more is sent: wait for the server's close
            self._closed(STALLED, time.monotonic() - sent, answer)
        except OSError:
            self._closed(STALLED, 0.0, b"")
        finally:
            self._moved(-1)
            writer.close()

    async def _slowloris(self) -> None:
        reader, writer = await self._connect(SLOWLORIS)
        self._moved(1)
        opened = time.monotonic()

        async def dribble() -> None:
            writer.write(self._head())
            line = 0
            while True:
                await writer.drain()
                await asyncio.sleep(self.plan.line_interval_s)
                writer.write(f"X-Slow-{line}: {line}\r\n".encode("ascii"))
                line += 1

        dribbling = asyncio.create_task(dribble())
        try:
            answer = await reader.read()
            self._closed(SLOWLORIS, time.monotonic() - opened, answer)
        except OSError:
            self._closed(SLOWLORIS, time.monotonic() - opened, b"")
        finally:
            dribbling.cancel()
            with contextlib.suppress(asyncio.CancelledError, OSError):
                await dribbling
            self._moved(-1)
            writer.close()

    def _closed(self, kind: str, held_s: float, answer: bytes) -> None:
        self.result.closures.append(
            Closure(kind, held_s, _status_of(answer), time.monotonic() - self._started)
        )

    async def _hold(self, attack: Any, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await attack()

    async def run(self, stop: asyncio.Event) -> CrowdResult:
        """Hold the crowd open until ``stop`` is set; returns what it saw."""
        self._started = time.monotonic()
        attacks = [self._stalled_body] * self.plan.stalled_bodies
        attacks += [self._slowloris] * self.plan.slowloris
        tasks = []
        for start in range(0, len(attacks), OPEN_WAVE):
            for attack in attacks[start : start + OPEN_WAVE]:
                tasks.append(asyncio.create_task(self._hold(attack, stop)))
            await asyncio.sleep(OPEN_WAVE_PAUSE_S)
        await stop.wait()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self.result.duration_s = time.monotonic() - self._started
        return self.result


def _crowd_main(
    plan: CrowdPlan,
    open_now: Synchronized[int],
    stop: ProcessEvent,
    results: multiprocessing.Queue[CrowdResult],
) -> None:
    """The crowd's process: hold the plan until ``stop`` is set, then send the result back."""

    async def main() -> CrowdResult:
        stopping = asyncio.Event()
        loop = asyncio.get_running_loop()

        async def watch() -> None:
            await loop.run_in_executor(None, stop.wait)
            stopping.set()

        watcher = asyncio.create_task(watch())
        result = await Crowd(plan, open_now).run(stopping)
        await watcher
        return result

    results.put(asyncio.run(main()))


class CrowdProcess:
    """A :class:`Crowd` in a process of its own: :meth:`open_now` reads how many of its
    connections are open, :meth:`stop` ends it and returns its :class:`CrowdResult`."""

    def __init__(self, plan: CrowdPlan) -> None:
        context = multiprocessing.get_context("spawn")
        self._open_now: Synchronized[int] = context.Value("i", 0)
        self._stop = context.Event()
        self._results: multiprocessing.Queue[CrowdResult] = context.Queue()
        self._process = context.Process(
            target=_crowd_main,
            args=(plan, self._open_now, self._stop, self._results),
            daemon=True,
        )
        self._process.start()

    def open_now(self) -> int:
        """Crowd connections open now."""
        return int(self._open_now.value)

    def stop(self, timeout_s: float = 60.0) -> CrowdResult:
        """Close the crowd and return what it saw."""
        self._stop.set()
        try:
            result = self._results.get(timeout=timeout_s)
        finally:
            self._process.join(timeout=10)
            if self._process.is_alive():
                self._process.kill()
        return result
