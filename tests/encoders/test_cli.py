"""python -m encoders info / embed / export argument handling, on the tiny variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from encoders.__main__ import main
from encoders.variant import load_variant_manifest


def test_info_prints_the_manifest_and_verifies(
    tiny_variant: tuple[Path, object], capsys: pytest.CaptureFixture[str]
) -> None:
    variant_dir = tiny_variant[0]
    assert main(["info", str(variant_dir)]) == 0
    output = capsys.readouterr().out
    assert "variant      tiny" in output
    assert "max_tokens 8" in output
    assert load_variant_manifest(variant_dir).fingerprint in output
    assert "verified" in output


def test_info_fails_on_an_altered_variant(
    tiny_variant: tuple[Path, object], caplog: pytest.LogCaptureFixture
) -> None:
    variant_dir = tiny_variant[0]
    (variant_dir / "text.onnx").write_bytes(b"not the graph")
    assert main(["info", str(variant_dir)]) == 1
    assert "text.onnx: sha256" in caplog.text


def test_info_fails_on_a_folder_that_is_no_variant(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert main(["info", str(tmp_path)]) == 1
    assert "not a variant" in caplog.text


def test_embed_prints_shape_and_values(
    tiny_variant: tuple[Path, object], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["embed", str(tiny_variant[0]), "a dog", "a cat", "--providers", "cpu"]) == 0
    output = capsys.readouterr().out
    assert "shape (2, 8) float32" in output
    assert "norm 1.0000" in output


def test_embed_with_cuda_on_a_cpu_build_fails_cleanly(
    tiny_variant: tuple[Path, object], caplog: pytest.LogCaptureFixture
) -> None:
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime build offers CUDA")
    assert main(["embed", str(tiny_variant[0]), "a dog", "--providers", "cuda"]) == 1
    assert "providers='cuda'" in caplog.text


@pytest.mark.parametrize(
    "argv",
    [[], ["export"], ["export", "minilm"], ["export", "bert", "--out", "x"], ["embed", "dir"]],
)
def test_bad_command_lines_exit_with_usage(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
