"""The worker supervisor (the processes themselves run in tests/e2e/test_workers.py and, for
drain and reload, tests/e2e/test_operations.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from service.runtime.workers import WorkerSupervisor
from service.settings import Settings

HEAVY = ("numpy", "faiss", "onnxruntime", "fastapi", "tokenizers", "PIL")


def test_one_worker_needs_no_supervisor(tmp_path: Path) -> None:
    settings = Settings(bundles_root=tmp_path, variants_root=tmp_path)
    with pytest.raises(ValueError, match="in-process"):
        WorkerSupervisor(settings, 1)


def test_the_supervisor_does_not_load_the_serving_stack() -> None:
    # The supervisor process is `python -m service serve`: what its module imports is what it
    # holds in memory beside every worker.
    probe = (
        "import sys, service.__main__, service.runtime.workers; "
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_signal_cuts_the_supervisors_wait_short_and_takes_no_lock(tmp_path: Path) -> None:
    # The handler only records the signal (an Event's lock, taken inside the code the signal
    # interrupted, could deadlock); the waiting loop notices it within a poll.
    supervisor = WorkerSupervisor(Settings(bundles_root=tmp_path, variants_root=tmp_path), 2)
    previous = signal.signal(signal.SIGTERM, supervisor._on_signal)
    try:
        assert not supervisor._stop_requested(0.05)
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM)).start()
        started = time.monotonic()
        assert supervisor._stop_requested(30.0)
        assert time.monotonic() - started < 5.0
        assert supervisor._stop_requested(30.0)  # and stays asked for
    finally:
        signal.signal(signal.SIGTERM, previous)
