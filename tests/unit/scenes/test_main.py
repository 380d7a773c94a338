"""``python -m scenes``: its options, a small run, and its refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from scenes.__main__ import build_parser, main
from tests.conftest import REPO_ROOT


def test_defaults_match_the_default_corpus() -> None:
    args = build_parser().parse_args([])
    assert (args.train, args.val, args.test) == (20_000, 5_000, 5_000)
    assert args.out == Path("artifacts/data/scenes")
    assert (args.seed, args.image_size, args.workers) == (0, 96, 2)
    assert args.judgments == ("val", "test")
    assert not args.overwrite
    assert not args.no_progress


def test_generates_a_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scenes"
    argv = [
        "--out", str(out), "--seed", "1", "--train", "0", "--val", "6", "--test", "3",
        "--image-size", "48", "--workers", "1", "--judgments", "val,test", "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    assert "val: images=6 captions=30" in capsys.readouterr().out
    assert (out / "images" / "test" / "scenes_test_000030000003.png").is_file()
    assert not (out / "coco-karpathy-captions" / "captions_train.csv").exists()
    # A second run into the same folder is refused with exit status 2, unless --overwrite.
    assert main(argv) == 2
    assert "not empty" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0


@pytest.mark.parametrize(
    "argv",
    [["--judgments", "dev"], ["--seed", "x"], ["--train", "-"], ["scenes"], ["generate"]],
)
def test_bad_command_lines_exit_with_usage(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2


def test_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "scenes", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert "--out" in result.stdout
    assert "--overwrite" in result.stdout
