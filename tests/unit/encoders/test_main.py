"""python -m encoders info / embed / embed-images argument handling, on the tiny variants."""

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
    [
        [],
        ["embed", "dir"],
        ["info"],
        # Exporting, quantizing and training are `python -m training` commands now.
        ["export", "minilm", "--out", "x"],
        ["quantize", "--from", "x", "--precision", "int8", "--out", "y"],
        ["train", "--data", "x", "--out", "y"],
    ],
)
def test_bad_command_lines_exit_with_usage(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2


def write_png(path: Path, size: tuple[int, int] = (30, 20)) -> Path:
    from PIL import Image

    Image.new("RGB", size, (200, 100, 50)).save(path, "PNG")
    return path


def test_info_prints_the_image_preprocessing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fakes.tiny_image_variant import make_tiny_image_variant

    make_tiny_image_variant(tmp_path / "tiny-image")
    assert main(["info", str(tmp_path / "tiny-image")]) == 0
    output = capsys.readouterr().out
    assert "towers       image" in output
    assert "input 8x8, resize shorter_side to 10 (bilinear), crop center" in output
    assert "mean (0.5000, 0.4000, 0.3000), std (0.2500, 0.2000, 0.3000)" in output


def test_embed_images_prints_shape_and_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.fakes.tiny_image_variant import make_tiny_image_variant

    make_tiny_image_variant(tmp_path / "tiny-image")
    files = [str(write_png(tmp_path / "a.png")), str(write_png(tmp_path / "b.png", (5, 50)))]
    assert main(["embed-images", str(tmp_path / "tiny-image"), *files, "--providers", "cpu"]) == 0
    output = capsys.readouterr().out
    assert "shape (2, 8) float32" in output
    assert "5x50" in output
    assert "norm 1.0000" in output


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"not an image", "not a recognised image"), (None, "No such file")],
)
def test_embed_images_fails_cleanly_on_a_bad_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, content: bytes | None, message: str
) -> None:
    from tests.fakes.tiny_image_variant import make_tiny_image_variant

    make_tiny_image_variant(tmp_path / "tiny-image")
    path = tmp_path / "upload.bin"
    if content is not None:
        path.write_bytes(content)
    assert main(["embed-images", str(tmp_path / "tiny-image"), str(path)]) == 1
    assert message in caplog.text


def test_embed_images_with_a_text_only_variant_fails_cleanly(
    tiny_variant: tuple[Path, object], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    png = str(write_png(tmp_path / "a.png"))
    assert main(["embed-images", str(tiny_variant[0]), png]) == 1
    assert "has no image tower" in caplog.text


@pytest.mark.parametrize("argv", [["embed-images", "dir"], ["embed-images"]])
def test_bad_image_command_lines_exit_with_usage(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
