"""The uvicorn server: drains on SIGTERM/SIGINT and exits 0.

uvicorn (≥ 0.29) re-raises a captured SIGTERM once it has shut down, so the process dies with
status -15 even after a clean drain; orchestrators and CI read that as a crash. This server
handles the signals itself: readiness turns 503 at once (so a load balancer stops sending),
uvicorn stops accepting connections, lets in-flight requests finish for up to
``timeout_graceful_shutdown`` seconds, and ``run`` returns normally.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

import uvicorn

HANDLED_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class DrainingServer(uvicorn.Server):
    """``uvicorn.Server`` that calls ``on_shutdown_signal`` first and does not re-raise."""

    def __init__(self, config: uvicorn.Config, on_shutdown_signal: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_shutdown_signal = on_shutdown_signal

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Mark the app as draining, then let uvicorn begin its graceful shutdown."""
        self._on_shutdown_signal()
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Install our handlers for the duration of ``serve`` and restore the old ones."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in HANDLED_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
