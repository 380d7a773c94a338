"""The uvicorn server of one process: drains on SIGTERM/SIGINT and exits 0.

:func:`run_server` runs one server process: the whole service when there is one worker, one
worker of several (on the supervisor's socket, :mod:`service.runtime.workers`) otherwise.

uvicorn (≥ 0.29) re-raises a captured SIGTERM once it has shut down, so the process dies with
status -15 even after a clean drain; orchestrators and CI read that as a crash. This server
handles the signals itself: readiness turns 503 at once (so a load balancer stops sending),
uvicorn stops accepting connections, lets in-flight requests finish for up to
``timeout_graceful_shutdown`` seconds, and ``run`` returns normally.

With a ``shutdown_delay_s``, uvicorn's shutdown begins only that many seconds after the signal:
meanwhile the service keeps accepting and answering requests while ``/readyz`` already says 503,
so a load balancer that polls readiness stops routing to it before connections would be
refused. A second signal skips the rest of the wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType

import uvicorn
from fastapi import FastAPI

from service.http.app import create_app
from service.http.protocol import ClientLimits, guarded_protocol
from service.lifecycle.state import STATE_ATTRIBUTE, ServiceState
from service.metrics import ServiceMetrics
from service.process_layout import ProcessLayout
from service.runtime.process_setup import (
    HANDLED_SIGNALS,
    allow_open_files,
    configure_logging,
    tune_garbage_collector,
)
from service.runtime.process_threads import tune_process_threads
from service.settings import Settings

logger = logging.getLogger("crisscross.service")


class DrainingServer(uvicorn.Server):
    """``uvicorn.Server`` that calls ``on_shutdown_signal`` first and does not re-raise."""

    def __init__(
        self,
        config: uvicorn.Config,
        on_shutdown_signal: Callable[[], None],
        *,
        shutdown_delay_s: float = 0.0,
    ) -> None:
        super().__init__(config)
        self._on_shutdown_signal = on_shutdown_signal
        self._shutdown_delay_s = shutdown_delay_s
        self._delayed: threading.Timer | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Mark the app as draining, then let uvicorn begin its graceful shutdown — at once, or
        after ``shutdown_delay_s`` seconds (a second signal does not wait)."""
        self._on_shutdown_signal()
        if self._shutdown_delay_s > 0 and self._delayed is None and not self.should_exit:
            logger.info(
                "shutdown signal: readiness is 503; serving %.1f s more before draining",
                self._shutdown_delay_s,
            )
            self._delayed = threading.Timer(
                self._shutdown_delay_s, super().handle_exit, args=(sig, frame)
            )
            self._delayed.daemon = True
            self._delayed.start()
            return
        if self._delayed is not None:
            self._delayed.cancel()
        super().handle_exit(sig, frame)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Handle the signals on the event loop for the duration of ``serve``, then restore the
        old handlers.

        On the loop, not in a ``signal.signal`` handler: such a handler runs in whatever the
        main thread was doing, and :meth:`handle_exit` takes locks (the metrics' are not
        reentrant) that the interrupted code may hold, which deadlocked a worker now and then.
        """
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()
        previous = {sig: signal.getsignal(sig) for sig in HANDLED_SIGNALS}
        for sig in HANDLED_SIGNALS:
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig, handler in previous.items():
                loop.remove_signal_handler(sig)
                if handler is not None:  # None: one not installed from Python, left as it is
                    signal.signal(sig, handler)


def client_limits(settings: Settings) -> ClientLimits:
    """What one connection may cost, from the settings (:mod:`service.http.protocol`)."""
    return ClientLimits(
        head_timeout_s=settings.head_timeout_s,
        max_header_bytes=settings.max_header_bytes,
        max_header_count=settings.max_header_count,
        max_connections=settings.max_connections,
        retry_after_s=settings.overload_retry_after_s,
    )


def server_config(app: FastAPI, settings: Settings, metrics: ServiceMetrics) -> uvicorn.Config:
    """uvicorn's configuration for ``app``: its address, the guarded protocol with the client
    limits of the settings (counted in ``metrics``), drain bound and logging."""
    protocol = guarded_protocol(
        client_limits(settings), metrics.count_client_refusal, metrics.move_open_connections
    )
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        workers=1,
        http=protocol,
        ws="none",  # the service has no WebSocket route: no upgrade path to attack
        timeout_keep_alive=settings.keep_alive_timeout_s,
        log_config=None,  # keep the logging configured by the process
        log_level=settings.log_level,
        access_log=False,  # the service writes its own access line, with request id and timings
        timeout_graceful_shutdown=settings.graceful_shutdown_s,
        lifespan="on",
    )


def run_server(
    settings: Settings,
    layout: ProcessLayout | None = None,
    sockets: Sequence[socket.socket] | None = None,
) -> None:
    """Serve ``settings`` in this process until SIGINT/SIGTERM (blocking): on a port of its own,
    or on ``sockets`` a supervisor bound (a worker of ``layout``)."""
    configure_logging(settings.log_level, settings.access_log_format)
    tune_process_threads(
        settings.blas_threads, settings.gil_switch_interval_ms, settings.tokenizer_parallelism
    )
    tune_garbage_collector(settings.gc_young_threshold)
    app = create_app(settings, layout=layout)
    state = getattr(app.state, STATE_ATTRIBUTE)
    assert isinstance(state, ServiceState)
    allow_open_files(settings.max_connections)
    config = server_config(app, settings, state.metrics)
    DrainingServer(
        config,
        on_shutdown_signal=state.start_draining,
        shutdown_delay_s=settings.shutdown_delay_s,
    ).run(None if sockets is None else list(sockets))
