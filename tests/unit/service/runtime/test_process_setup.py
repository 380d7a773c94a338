"""What a server process sets up: one plain log line per record, and the stopping signals."""

from __future__ import annotations

import logging
import signal

import pytest

from service.runtime.process_setup import HANDLED_SIGNALS, configure_logging


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
