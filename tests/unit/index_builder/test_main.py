"""``python -m index_builder build|verify``: a tiny build, verification, and clean refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from formats.layout import captions_path
from index_builder.__main__ import main
from tests.fakes.tiny_variant import make_tiny_variant


def test_build_then_verify(
    tiny_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    argv = [
        "build", "--variant", str(tmp_path / "tiny"),
        "--captions", str(captions_path(tiny_corpus, "val")),
        "--bundles-root", str(tmp_path / "bundles"), "--name", "tiny-captions",
        "--version", "v1", "--limit", "4", "--providers", "cpu", "--no-progress",
    ]  # fmt: skip
    assert main(argv) == 0
    version_dir = tmp_path / "bundles" / "tiny-captions" / "v1"
    assert capsys.readouterr().out.strip() == str(version_dir)
    assert main(["verify", str(version_dir.parent)]) == 0
    output = capsys.readouterr().out
    assert output.startswith(f"ok {version_dir}")
    assert "captions=4" in output


def test_a_malformed_captions_file_fails_with_file_and_line(
    tiny_corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_tiny_variant(tmp_path / "tiny")
    bad = tmp_path / "bad.csv"
    header = captions_path(tiny_corpus, "val").read_text(encoding="utf-8").splitlines()[0]
    bad.write_text(f"{header}\nx,k:1,1,a.png,0,0,t,t\n", encoding="utf-8")
    argv = ["build", "--variant", str(tmp_path / "tiny"), "--captions", str(bad)]
    argv += ["--bundles-root", str(tmp_path / "bundles"), "--name", "x", "--no-progress"]
    assert main(argv) == 1
    assert f"error: {bad}:2: column sentid" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [[], ["build"], ["verify"], ["scenes", "--out", "x"], ["build", "--variant", "v"]],
)
def test_bad_command_lines_exit_with_usage(argv: list[str]) -> None:
    # The scenes corpus is its own program now: `python -m scenes`.
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
