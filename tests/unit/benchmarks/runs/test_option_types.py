"""The value types of the command-line options and argparse's messages for bad values."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.runs.option_types import (
    at_least_zero,
    float_list,
    int_list,
    open_rates,
    positive_float,
    positive_int,
    quality_task_list,
    task_list,
    variant_list,
)


def test_lists() -> None:
    assert int_list("1, 8,32") == (1, 8, 32)
    assert float_list("0.5,2") == (0.5, 2.0)
    assert task_list("t2t, sts") == ("t2t", "sts")
    assert quality_task_list("t2t,bison") == ("t2t", "bison")
    assert variant_list("a, b") == ("a", "b")
    assert open_rates("AUTO") is None
    assert open_rates("none") == ()
    assert open_rates("5,7.5") == (5.0, 7.5)


def test_numbers() -> None:
    assert positive_int("3") == 3
    assert positive_float("0.25") == 0.25
    assert at_least_zero(-3) == 0
    assert at_least_zero(2) == 2
    assert isinstance(at_least_zero(-1.0), float)
    assert at_least_zero(1.5) == 1.5


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (int_list, "1,x", "comma-separated integers"),
        (int_list, "0", "positive integers"),
        (float_list, "a", "comma-separated numbers"),
        (float_list, "-1", "positive numbers"),
        (task_list, "t2t,nope", "tasks must be among"),
        (quality_task_list, "t2t,latency", "list quality tasks"),
        (variant_list, "a,a", "distinct"),
        (positive_int, "x", "an integer"),
        (positive_int, "0", "a positive integer"),
        (positive_float, "x", "a number"),
        (positive_float, "0", "a positive number"),
    ],
)
def test_bad_values(parse: object, text: str, message: str) -> None:
    assert callable(parse)
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(text)
