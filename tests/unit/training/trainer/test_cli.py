"""The ``train`` command's options: defaults in step with the trainer, the reproduce line."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

import pytest

pytest.importorskip("torch", reason="training needs the 'export' extra")

from training.trainer import cli
from training.trainer.losses import DEFAULT_MARGIN, DEFAULT_T2T_WEIGHT, LOSS_PRESETS
from training.trainer.trainer import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_EPOCHS,
    DEFAULT_LEARNING_RATE,
    TrainConfig,
)


def _train_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser()
    train = cli.add_train_command(parser.add_subparsers(dest="command", required=True))
    return parser, train


def _parse(*argv: str) -> argparse.Namespace:
    return _train_parser()[0].parse_args(["train", "--data", "data", "--out", "out", *argv])


def test_defaults_match_the_trainer() -> None:
    parsed = _parse()
    assert parsed.epochs == DEFAULT_EPOCHS
    assert parsed.batch_size == DEFAULT_BATCH_SIZE
    assert parsed.learning_rate == DEFAULT_LEARNING_RATE
    config = TrainConfig(data_dir=Path("data"))
    for key in ("weight_decay", "image_size", "dim", "max_tokens", "threads", "monitor_images"):
        assert getattr(parsed, key) == getattr(config, key), key
    assert set(LOSS_PRESETS) == set(cli._LOSS_PRESETS)
    # The help states the presets' values, which live in training.trainer.losses.
    help_text = " ".join(_train_parser()[1].format_help().split())
    assert f"{DEFAULT_T2T_WEIGHT:g} in t2t_i2t" in help_text
    assert f"{DEFAULT_MARGIN:g} in margin" in help_text
    assert parsed.loss == cli.DEFAULT_LOSS
    assert parsed.log_level == "INFO"


def test_reproduce_command_spells_out_every_setting() -> None:
    command = cli.reproduce_command(_parse("--seed", "3", "--margin", "0.1", "--epochs", "2"))
    words = shlex.split(command)
    assert words[:8] == ["python", "-m", "training", "train", "--data", "DATA", "--out", "OUT"]
    assert words[words.index("--seed") + 1] == "3"
    assert words[words.index("--margin") + 1] == "0.1"
    assert words[words.index("--epochs") + 1] == "2"
    assert "--t2t-weight" not in words
    assert "--train-images" not in words
    # The line parses back to the same settings.
    again = _train_parser()[0].parse_args(words[3:])
    assert (again.seed, again.margin, again.epochs) == (3, 0.1, 2)
