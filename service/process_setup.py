"""What every server process sets up before it serves: its logging, and the signals that stop
it (a single server, each worker of several, and their supervisor alike)."""

from __future__ import annotations

import logging
import signal
import sys
from typing import Final

HANDLED_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)


def configure_logging(level: str) -> None:
    """One plain line per record on stderr; uvicorn's loggers propagate into it."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
        force=True,
    )
