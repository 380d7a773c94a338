"""What every server process sets up before it serves: its logging, the signals that stop it,
its garbage collector and the open files its connections need (a single server, each worker of
several, and their supervisor alike)."""

from __future__ import annotations

import gc
import logging
import resource
import signal
import sys
from typing import Final

from service.settings import AccessLogFormat
from service.telemetry.access_log import use_access_log_format

HANDLED_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM)
FILE_DESCRIPTOR_RESERVE: Final = 256
"""File descriptors a server process needs beside its connections (bundles, encoders, logs,
the listening socket, the metrics files of several workers)."""


class ConnectionLimitError(RuntimeError):
    """The process may not open as many files as ``max_connections`` needs."""


def configure_logging(level: str, access_log_format: AccessLogFormat = "text") -> None:
    """One plain line per record on stderr; uvicorn's loggers propagate into it. With
    ``access_log_format`` json, the access lines are bare JSON objects on stderr instead
    (:func:`service.telemetry.access_log.use_access_log_format`)."""
    logging.basicConfig(
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
        force=True,
    )
    use_access_log_format(access_log_format, sys.stderr)


def tune_garbage_collector(young_threshold: int) -> tuple[int, int, int]:
    """Collect Python's youngest generation every ``young_threshold`` net allocations (the
    older generations keep their thresholds); returns the thresholds now in force."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(young_threshold, middle, oldest)
    return gc.get_threshold()


def allow_open_files(max_connections: int) -> int:
    """Raise this process's soft limit on open files to what ``max_connections`` needs (plus
    :data:`FILE_DESCRIPTOR_RESERVE`); returns the limit now in force. Raises
    :class:`ConnectionLimitError` when the hard limit is lower."""
    needed = max_connections + FILE_DESCRIPTOR_RESERVE
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return soft
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise ConnectionLimitError(
            f"max_connections={max_connections} needs {needed} open files, but this process may "
            f"open at most {hard} (RLIMIT_NOFILE): lower CRISSCROSS_MAX_CONNECTIONS or raise the "
            "limit (ulimit -n, the container's nofile)"
        )
    resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
    return needed
