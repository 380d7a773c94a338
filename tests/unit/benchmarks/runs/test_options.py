"""Options declared on config fields: the argparse options generated from them (order, types,
defaults, switches, required) and the config built back from parsed arguments."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchmarks.runs.option_types import at_least_zero, positive_int
from benchmarks.runs.options import (
    DATA_DIR_ENV,
    Option,
    add_options,
    cli_default,
    config_from_args,
    data_option,
    declared_options,
    no_progress_option,
    option,
    out_option,
    url_option,
)


@dataclass(frozen=True, kw_only=True)
class ToyConfig:
    url: str = field(metadata=url_option())
    data_dir: Path = field(metadata=data_option("toys/"))
    out_dir: Path | None = field(default=None, metadata=out_option("toy.json"))
    count: int = field(default=3, metadata=option("--count", parse=positive_int, help="n (3)"))
    mode: str = field(default="off", metadata=option("--mode", choices=("on", "off"), help="m"))
    warmup: int = field(
        default=2, metadata=option("--warmup", parse=int, convert=at_least_zero, help="w")
    )
    show_progress: bool = field(default=True, metadata=no_progress_option())
    fancy: bool = field(default=False, metadata=option(None, cli_default=True))
    tags: tuple[int, ...] = field(
        default=(),
        metadata=option(
            "--tag", parse=positive_int, repeat=True, convert=lambda v: tuple(v or ()), help="t"
        ),
    )
    hidden: int = 7


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toy")
    add_options(parser, ToyConfig)
    return parser


def test_options_follow_the_field_order_and_skip_undeclared_fields() -> None:
    flags = [action.option_strings[0] for action in _parser()._actions[1:]]
    assert flags == [
        "--url",
        "--data",
        "--out",
        "--count",
        "--mode",
        "--warmup",
        "--no-progress",
        "--tag",
    ]
    assert [item.name for item, _ in declared_options(ToyConfig)] == [
        "url",
        "data_dir",
        "out_dir",
        "count",
        "mode",
        "warmup",
        "show_progress",
        "fancy",
        "tags",
    ]


def test_defaults_come_from_the_field_or_the_command_line_declaration(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DATA_DIR_ENV, "/somewhere")
    args = _parser().parse_args(["--out", "x"])
    assert args.url == "http://127.0.0.1:8000"
    assert args.data == Path("/somewhere")
    assert (args.count, args.mode, args.warmup, args.no_progress) == (3, "off", 2, False)
    config = config_from_args(ToyConfig, args)
    assert config == ToyConfig(
        url="http://127.0.0.1:8000", data_dir=Path("/somewhere"), out_dir=Path("x"), fancy=True
    )
    assert config.hidden == 7
    monkeypatch.delenv(DATA_DIR_ENV)
    assert _parser().parse_args(["--out", "x"]).data == Path("../shared/data")


def test_values_are_parsed_negated_and_converted() -> None:
    args = _parser().parse_args(
        ["--out", "x", "--count", "5", "--mode", "on", "--warmup", "-4", "--no-progress"]
    )
    config = config_from_args(ToyConfig, args)
    assert (config.count, config.mode, config.warmup, config.show_progress) == (5, "on", 0, False)


@pytest.mark.parametrize(
    "arguments", [[], ["--out", "x", "--count", "0"], ["--out", "x", "--mode", "maybe"]]
)
def test_bad_arguments_exit_2(arguments: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        _parser().parse_args(arguments)
    assert caught.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_an_option_knows_its_destination_and_default() -> None:
    assert Option("--max-upload-bytes").dest == "max_upload_bytes"
    with pytest.raises(ValueError, match="no argparse destination"):
        _ = Option(None).dest
    count, declared = declared_options(ToyConfig)[3]
    assert cli_default(count, declared) == 3
    url, declared = declared_options(ToyConfig)[0]
    assert cli_default(url, declared) == "http://127.0.0.1:8000"


def test_a_repeatable_option_collects_its_values() -> None:
    args = _parser().parse_args(["--out", "x", "--tag", "3", "--tag", "1"])
    assert config_from_args(ToyConfig, args).tags == (3, 1)
    assert config_from_args(ToyConfig, _parser().parse_args(["--out", "x"])).tags == ()
    with pytest.raises(SystemExit):
        _parser().parse_args(["--out", "x", "--tag", "0"])
