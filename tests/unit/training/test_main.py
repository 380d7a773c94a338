"""``python -m training export|quantize|train``: options as ``python -m encoders`` had them, and
the refusals that need no model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from training.__main__ import EXIT_FAILED, build_parser, main
from training.parity.compare import DEFAULT_PARITY_THRESHOLD


def test_export_options() -> None:
    args = build_parser().parse_args(
        ["export", "clip", "--from", "ckpt", "--out", "v", "--name", "b32", "--force"]
    )
    assert (args.command, args.model, args.source, args.out) == (
        "export", "clip", Path("ckpt"), Path("v"),
    )  # fmt: skip
    assert (args.name, args.force, args.parity_threshold) == ("b32", True, DEFAULT_PARITY_THRESHOLD)
    assert args.log_level == "INFO"
    minilm = build_parser().parse_args(["export", "minilm", "--out", "v", "--log-level", "DEBUG"])
    assert (minilm.source, minilm.name, minilm.force, minilm.log_level) == (
        None, None, False, "DEBUG",
    )  # fmt: skip


def test_quantize_options() -> None:
    args = build_parser().parse_args(
        ["quantize", "--from", "fp32", "--precision", "int8", "--out", "q", "--captions", "c.csv"]
    )
    assert (args.source, args.precision, args.out, args.captions) == (
        Path("fp32"), "int8", Path("q"), Path("c.csv"),
    )  # fmt: skip
    assert (args.caption_count, args.providers, args.name, args.force) == (1000, "cpu", None, False)


def test_train_options() -> None:
    args = build_parser().parse_args(
        ["train", "--data", "d", "--out", "o", "--seed", "3", "--loss", "t2t_i2t", "--force"]
    )
    assert (args.data, args.out, args.seed, args.loss, args.force) == (
        Path("d"), Path("o"), 3, "t2t_i2t", True,
    )  # fmt: skip
    assert args.name == "scenes-dual-encoder"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["export"],
        ["export", "minilm"],
        ["export", "bert", "--out", "x"],
        ["export", "efficientnet"],
        ["export", "efficientnet-lite0"],
        ["quantize", "--from", "x", "--out", "y"],
        ["quantize", "--from", "x", "--precision", "int4", "--out", "y"],
        ["train", "--data", "x"],
        ["train", "--data", "x", "--out", "y", "--loss", "t2t"],
        ["info", "x"],  # a runtime command: `python -m encoders info`
    ],
)
def test_bad_command_lines_exit_with_usage(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def test_from_is_for_clip_only(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert main(["export", "minilm", "--from", "x", "--out", str(tmp_path / "v")]) == EXIT_FAILED
    assert "--from is for 'export clip' only" in caplog.text


def test_clip_needs_a_checkpoint(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert main(["export", "clip", "--out", str(tmp_path / "v")]) == EXIT_FAILED
    assert "export clip needs --from" in caplog.text


def test_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "training", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "{export,quantize,train}" in result.stdout
