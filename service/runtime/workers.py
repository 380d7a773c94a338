"""Several server processes on one port, under a supervisor.

The supervisor binds the listening socket once and spawns ``workers`` processes (the ``spawn``
start method: no onnxruntime or faiss state is forked) that each run the whole service
(:func:`service.runtime.server.run_server`) on that socket; the kernel hands each new connection to
one of them. Every worker loads its own encoders and memory-maps the same bundle files, so the
vectors and flat indexes sit once in the page cache however many workers read them.

What the workers share lives in a run folder the supervisor creates and removes: Prometheus
multiprocess files (``PROMETHEUS_MULTIPROC_DIR`` is set before the first spawn) and reload
orders (:mod:`service.lifecycle.reload_broadcast`). Traces are not shared: each worker builds its
own tracer provider and export thread with its app (:mod:`service.telemetry.tracing`), in the
spawned process, and the supervisor never makes one.

The supervisor forwards SIGTERM and SIGINT to every worker (each then drains as a single server
does: readiness 503, ``shutdown_delay_s``, in-flight requests finish within
``graceful_shutdown_s``), waits for them, and exits 0 when they all did. A worker that dies
while the server runs is replaced after :data:`RESTART_DELAY_S` (its gauges are dropped, its
counts kept), and so is one whose event loop stops beating (a heartbeat file it touches every
second) for ``worker_heartbeat_timeout_s``: it is killed first. One that fails to start at all
(uvicorn's startup-failure status) stops the server, since its replacement would fail the same
way.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import select
import shutil
import signal
import socket
import tempfile
import time
from dataclasses import dataclass, field, replace
from multiprocessing.context import SpawnProcess
from pathlib import Path
from types import FrameType
from typing import Final

import uvicorn
from prometheus_client.multiprocess import mark_process_dead
from uvicorn.config import STARTUP_FAILURE

from service.metrics import MULTIPROCESS_DIR_VARIABLE
from service.process_layout import ProcessLayout
from service.runtime.process_setup import HANDLED_SIGNALS, configure_logging
from service.settings import Settings

logger = logging.getLogger("crisscross.service")

RESTART_DELAY_S: Final = 1.0
# Beyond a worker's own drain bound (shutdown_delay_s + graceful_shutdown_s), how long the
# supervisor waits before it kills a worker that has not exited.
STOP_MARGIN_S: Final = 10.0
EXIT_WORKER_FAILED: Final = 1
POLL_S: Final = 0.2
# A worker's status when the stop signal found it still starting (killed by the signal itself).
_STOPPED_BEFORE_SERVING: Final = frozenset({-signal.SIGTERM, -signal.SIGINT})


def _worker_main(settings: Settings, layout: ProcessLayout, listener: socket.socket) -> None:
    """A worker process: the service on the supervisor's socket (the spawn target)."""
    # Imported here, in the worker: the supervisor never loads the serving stack (numpy, faiss,
    # onnxruntime, FastAPI), which would cost it tens of MiB for nothing.
    from service.runtime.server import run_server

    run_server(settings, layout, [listener])


def _forget_gauges(pid: int | None, metrics_dir: Path) -> None:
    """Drop a dead worker's live gauges from the shared metrics (its counts stay)."""
    if pid is not None:
        mark_process_dead(pid, str(metrics_dir))  # type: ignore[no-untyped-call]


@dataclass
class _Worker:
    index: int
    process: SpawnProcess
    spawned_at: float = field(default_factory=time.time)


class WorkerSupervisor:
    """Runs ``workers`` server processes for ``settings`` until SIGTERM/SIGINT."""

    def __init__(self, settings: Settings, workers: int) -> None:
        if workers < 2:
            raise ValueError("a supervisor runs 2 workers or more; 1 runs in-process")
        self.settings = settings
        self.workers = workers
        # Set by the signal handler, which also writes a byte to wake the waiting loop and does
        # nothing else: a handler runs inside whatever the main thread was doing and must take
        # no lock (an Event's is not reentrant) that code may hold.
        self._signalled: int | None = None
        self._stopping = False
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_write, False)
        self._context = multiprocessing.get_context("spawn")
        self._startup_failed = False

    def _on_signal(self, sig: int, _frame: FrameType | None) -> None:
        self._signalled = sig
        with contextlib.suppress(BlockingIOError):  # full: the loop is awake already
            os.write(self._wake_write, b"\0")

    def _stop_requested(self, seconds: float) -> bool:
        """Wait up to ``seconds`` (less once a stop is asked for); whether one is."""
        deadline = time.monotonic() + seconds
        while not self._stopping and self._signalled is None:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([self._wake_read], [], [], min(POLL_S, left))  # a signal wakes it
        if not self._stopping:
            assert self._signalled is not None
            logger.info(
                "supervisor: %s, stopping the workers", signal.Signals(self._signalled).name
            )
            self._stopping = True
        return True

    def _spawn(self, index: int, shared: ProcessLayout, listener: socket.socket) -> _Worker:
        """Start worker ``index`` of ``shared``'s run folder on ``listener``."""
        process = self._context.Process(
            target=_worker_main,
            args=(self.settings, replace(shared, worker=index), listener),
            name=f"crisscross-worker-{index}",
        )
        process.start()
        logger.info("supervisor: worker %d started (pid %s)", index, process.pid)
        return _Worker(index, process)

    def _bind(self) -> socket.socket:
        # uvicorn's own binding (IPv4 or IPv6, SO_REUSEADDR, inheritable); the app is not loaded.
        config = uvicorn.Config(
            "service.http.app:create_app", self.settings.host, self.settings.port
        )
        return config.bind_socket()

    def run(self) -> int:
        """Serve until stopped; the exit status (0 when every worker drained and exited 0)."""
        configure_logging(self.settings.log_level)
        run_dir = Path(tempfile.mkdtemp(prefix="crisscross-workers-"))
        # What every worker shares (its own layout differs in the worker index only).
        shared = ProcessLayout(workers=self.workers, worker=0, run_dir=run_dir)
        metrics_dir = shared.metrics_dir
        assert metrics_dir is not None
        metrics_dir.mkdir()
        os.environ[MULTIPROCESS_DIR_VARIABLE] = str(metrics_dir)
        previous = {sig: signal.signal(sig, self._on_signal) for sig in HANDLED_SIGNALS}
        listener = self._bind()
        try:
            logger.info(
                "supervisor (pid %d): %d workers on %s:%d",
                os.getpid(),
                self.workers,
                self.settings.host,
                listener.getsockname()[1],
            )
            workers = [self._spawn(i, shared, listener) for i in range(self.workers)]
            while not self._stop_requested(POLL_S):
                workers = self._replace_dead(workers, shared, listener)
            return self._stop_all(workers, metrics_dir)
        finally:
            listener.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            os.environ.pop(MULTIPROCESS_DIR_VARIABLE, None)
            shutil.rmtree(run_dir, ignore_errors=True)

    def _kill_hung(self, workers: list[_Worker], shared: ProcessLayout) -> None:
        """SIGKILL a worker whose heartbeat (or, before its first, its spawn) is older than
        ``worker_heartbeat_timeout_s``; :meth:`_replace_dead` then replaces it."""
        timeout = self.settings.worker_heartbeat_timeout_s
        now = time.time()
        for worker in workers:
            if worker.process.exitcode is not None or worker.process.pid is None:
                continue
            heartbeat = shared.heartbeat_file(worker.index)
            assert heartbeat is not None
            try:
                last = max(heartbeat.stat().st_mtime, worker.spawned_at)
            except FileNotFoundError:
                last = worker.spawned_at
            if now - last > timeout:
                logger.error(
                    "supervisor: worker %d (pid %d) has not beaten for %.0f s; killing it",
                    worker.index,
                    worker.process.pid,
                    now - last,
                )
                worker.process.kill()
                worker.process.join()

    def _replace_dead(
        self, workers: list[_Worker], shared: ProcessLayout, listener: socket.socket
    ) -> list[_Worker]:
        self._kill_hung(workers, shared)
        replaced = []
        for worker in workers:
            code = worker.process.exitcode
            if code is None:
                replaced.append(worker)
                continue
            assert shared.metrics_dir is not None
            _forget_gauges(worker.process.pid, shared.metrics_dir)
            if code == STARTUP_FAILURE:
                logger.error(
                    "supervisor: worker %d could not start (status %d); stopping",
                    worker.index,
                    code,
                )
                self._startup_failed = True
                self._stopping = True
                replaced.append(worker)
                continue
            logger.error(
                "supervisor: worker %d (pid %s) exited with status %s; replacing it",
                worker.index,
                worker.process.pid,
                code,
            )
            if self._stop_requested(RESTART_DELAY_S):
                replaced.append(worker)
                continue
            replaced.append(self._spawn(worker.index, shared, listener))
        return replaced

    def _stop_all(self, workers: list[_Worker], metrics_dir: Path) -> int:
        for worker in workers:
            if worker.process.exitcode is None and worker.process.pid is not None:
                os.kill(worker.process.pid, signal.SIGTERM)
        deadline = (
            time.monotonic()
            + self.settings.shutdown_delay_s
            + self.settings.graceful_shutdown_s
            + STOP_MARGIN_S
        )
        status = EXIT_WORKER_FAILED if self._startup_failed else 0
        for worker in workers:
            worker.process.join(max(0.0, deadline - time.monotonic()))
            if worker.process.exitcode is None:
                logger.error(
                    "supervisor: worker %d did not drain in time; killing it", worker.index
                )
                worker.process.kill()
                worker.process.join()
                status = EXIT_WORKER_FAILED
            elif worker.process.exitcode in _STOPPED_BEFORE_SERVING:
                # Signalled while still starting, before uvicorn's handlers were in place (they
                # are before it loads or takes a connection): nothing was in flight.
                logger.info("supervisor: worker %d stopped while starting", worker.index)
            elif worker.process.exitcode != 0:
                logger.error(
                    "supervisor: worker %d exited with status %s",
                    worker.index,
                    worker.process.exitcode,
                )
                status = EXIT_WORKER_FAILED
            _forget_gauges(worker.process.pid, metrics_dir)
        logger.info("supervisor: stopped (status %d)", status)
        return status
