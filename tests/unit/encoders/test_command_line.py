"""The shared command-line runner: --log-level after any subcommand, domain errors logged."""

from __future__ import annotations

import argparse
import logging

import pytest

from encoders.command_line import EXIT_FAILED, log_level_options, run_command


class DomainError(ValueError):
    pass


def _ok(arguments: argparse.Namespace) -> int:
    return 7 if arguments.log_level == "DEBUG" else 0


def _fail(_: argparse.Namespace) -> int:
    raise DomainError("bad input")


def _crash(_: argparse.Namespace) -> int:
    raise KeyError("bug")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tool")
    commands = parser.add_subparsers(dest="command", required=True)
    ok = commands.add_parser("ok", parents=[log_level_options()])
    ok.set_defaults(handler=_ok)
    fail = commands.add_parser("fail", parents=[log_level_options()])
    fail.set_defaults(handler=_fail)
    crash = commands.add_parser("crash", parents=[log_level_options()])
    crash.set_defaults(handler=_crash)
    return parser


def test_the_handler_runs_and_the_log_level_follows_the_subcommand() -> None:
    logger = logging.getLogger("tests.tool")
    assert run_command(_parser(), ["ok"], logger=logger, handled=(DomainError,)) == 0
    argv = ["ok", "--log-level", "DEBUG"]
    assert run_command(_parser(), argv, logger=logger, handled=(DomainError,)) == 7


def test_a_handled_error_is_logged_and_fails(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.tool")
    assert run_command(_parser(), ["fail"], logger=logger, handled=(DomainError,)) == EXIT_FAILED
    assert "bad input" in caplog.text
    with pytest.raises(KeyError):
        run_command(_parser(), ["crash"], logger=logger, handled=(DomainError,))


def test_an_unknown_log_level_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_command(
            _parser(), ["ok", "--log-level", "LOUD"], logger=logging.getLogger("t"), handled=()
        )
    assert exit_info.value.code == 2
