"""What the ``encoders`` and ``training`` command lines share: a ``--log-level`` option on every
subcommand, and running the chosen subcommand's handler with domain errors logged, not raised."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Final

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR")


def log_level_options() -> argparse.ArgumentParser:
    """A parent parser adding ``--log-level`` (default INFO), so the option can follow any
    subcommand: ``info ... --log-level DEBUG``."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--log-level", default="INFO", choices=LOG_LEVELS)
    return common


def run_command(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    *,
    logger: logging.Logger,
    handled: tuple[type[Exception], ...],
) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), set up logging at the chosen level and run the
    subcommand's ``handler``; an exception of a ``handled`` type is logged and gives
    :data:`EXIT_FAILED`. Returns the process exit code."""
    arguments = parser.parse_args(argv)
    logging.basicConfig(
        level=arguments.log_level,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        return int(arguments.handler(arguments))
    except handled as error:
        logger.error("%s", error)
        return EXIT_FAILED
