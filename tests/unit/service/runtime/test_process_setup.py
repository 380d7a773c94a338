"""What a server process sets up: one plain log line per record, the stopping signals and its
garbage collector's young threshold."""

from __future__ import annotations

import gc
import logging
import signal

import pytest

from service.runtime.process_setup import (
    HANDLED_SIGNALS,
    configure_logging,
    tune_garbage_collector,
)
from service.settings import Settings


def test_sigterm_and_sigint_stop_a_server() -> None:
    assert set(HANDLED_SIGNALS) == {signal.SIGTERM, signal.SIGINT}


def test_logging_writes_one_plain_line_per_record(capsys: pytest.CaptureFixture[str]) -> None:
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        configure_logging("warning")
        logging.getLogger("crisscross.test").warning("hello %d", 7)
        logging.getLogger("crisscross.test").info("not shown")
    finally:
        root.handlers[:] = saved[1]
        root.setLevel(saved[0])
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1
    assert lines[0].endswith("WARNING crisscross.test hello 7")


def test_the_young_generation_threshold_is_set_and_the_older_ones_kept() -> None:
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 11, 12)
        assert tune_garbage_collector(Settings().gc_young_threshold) == (5000, 11, 12)
        assert gc.get_threshold() == (5000, 11, 12)
    finally:
        gc.set_threshold(*saved)
