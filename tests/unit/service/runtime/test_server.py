"""DrainingServer: readiness off at the signal, uvicorn's shutdown at once or after the delay."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

import uvicorn
from starlette.types import Receive, Scope, Send

from service.runtime.server import DrainingServer


async def _app(_scope: Scope, _receive: Receive, _send: Send) -> None:  # pragma: no cover
    raise AssertionError("never served")


def make(delay_s: float) -> tuple[DrainingServer, list[float]]:
    signalled: list[float] = []
    server = DrainingServer(
        uvicorn.Config(_app),
        on_shutdown_signal=lambda: signalled.append(time.monotonic()),
        shutdown_delay_s=delay_s,
    )
    return server, signalled


def test_without_a_delay_shutdown_begins_at_once() -> None:
    server, signalled = make(0.0)
    server.handle_exit(signal.SIGTERM, None)
    assert len(signalled) == 1
    assert server.should_exit


def test_with_a_delay_readiness_turns_off_first_and_shutdown_follows() -> None:
    server, signalled = make(0.3)
    started = time.monotonic()
    server.handle_exit(signal.SIGTERM, None)
    assert len(signalled) == 1  # /readyz answers 503 from now on
    assert not server.should_exit  # still accepting and serving
    deadline = started + 5
    while not server.should_exit and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.should_exit
    assert time.monotonic() - started >= 0.29


def test_a_second_signal_skips_the_delay() -> None:
    server, signalled = make(60.0)
    server.handle_exit(signal.SIGTERM, None)
    assert not server.should_exit
    server.handle_exit(signal.SIGTERM, None)
    assert server.should_exit
    assert len(signalled) == 2


def test_the_signal_is_handled_on_the_event_loop_not_inside_the_code_it_interrupted() -> None:
    # The shutdown callback takes locks (the metrics' are not reentrant). Run inside whatever the
    # signal interrupted, it could wait forever for a lock that code holds: a worker of several
    # once hung that way at SIGTERM. On the event loop it runs once that code has let go.
    lock = threading.Lock()
    took_the_lock: list[bool] = []
    server = DrainingServer(
        uvicorn.Config(_app),
        on_shutdown_signal=lambda: took_the_lock.append(lock.acquire(blocking=False)),
    )
    before = signal.getsignal(signal.SIGTERM)

    async def main() -> None:
        with server.capture_signals():
            with lock:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(0.05)  # a signal.signal handler would have run here, lock held
            deadline = time.monotonic() + 5
            while not took_the_lock and time.monotonic() < deadline:
                await asyncio.sleep(0.01)

    asyncio.run(main())
    assert took_the_lock == [True]
    assert server.should_exit
    assert signal.getsignal(signal.SIGTERM) == before  # restored
