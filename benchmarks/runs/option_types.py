"""Value types of the command-line options: each parses one argument or raises
:class:`argparse.ArgumentTypeError` with the message argparse shows."""

from __future__ import annotations

import argparse
from typing import TypeVar

from evaluation.data.task_plan import ALL_TASKS

NumberT = TypeVar("NumberT", int, float)


def int_list(text: str) -> tuple[int, ...]:
    """``1,8,32`` → ``(1, 8, 32)``: comma-separated positive integers."""
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers: {text!r}") from error
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"expected positive integers: {text!r}")
    return values


def task_list(text: str) -> tuple[str, ...]:
    """Comma-separated task names, each one of :data:`ALL_TASKS`."""
    values = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [value for value in values if value not in ALL_TASKS]
    if not values or unknown:
        raise argparse.ArgumentTypeError(f"tasks must be among {','.join(ALL_TASKS)}: {text!r}")
    return values


def quality_task_list(text: str) -> tuple[str, ...]:
    """As :func:`task_list`, without ``latency`` (the compare run always measures it)."""
    values = task_list(text)
    if "latency" in values:
        raise argparse.ArgumentTypeError("compare always measures latency; list quality tasks")
    return values


def variant_list(text: str) -> tuple[str, ...]:
    """Comma-separated distinct variant names."""
    values = tuple(part.strip() for part in text.split(",") if part.strip())
    if not values or len(set(values)) != len(values):
        raise argparse.ArgumentTypeError(f"expected distinct comma-separated variants: {text!r}")
    return values


def positive_int(text: str) -> int:
    """An integer ≥ 1."""
    try:
        value = int(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected an integer: {text!r}") from error
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer: {text!r}")
    return value


def float_list(text: str) -> tuple[float, ...]:
    """Comma-separated numbers > 0."""
    try:
        values = tuple(float(part) for part in text.split(",") if part.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers: {text!r}") from error
    if not values or any(not value > 0 for value in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers: {text!r}")
    return values


def open_rates(text: str) -> tuple[float, ...] | None:
    """``auto`` → ``None`` (fractions of saturation); ``none`` → ``()``; else the rates."""
    if text.strip().lower() == "auto":
        return None
    if text.strip().lower() == "none":
        return ()
    return float_list(text)


def positive_float(text: str) -> float:
    """A number > 0."""
    try:
        value = float(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"expected a number: {text!r}") from error
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number: {text!r}")
    return value


def at_least_zero(value: NumberT) -> NumberT:
    """``value``, or 0 of its type when it is not positive: a negative count or duration given
    on the command line means none."""
    return value if value > 0 else type(value)(0)
