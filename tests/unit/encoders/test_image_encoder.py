"""OnnxImageEncoder on the tiny image variant: exact outputs, batching, verification, errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image

from encoders.image_encoder import OnnxImageEncoder
from encoders.protocols import ImageEncoderProtocol
from encoders.providers import CPU_PROVIDER, CUDA_PROVIDER, ProviderError
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import VariantError, load_variant_manifest, write_variant_manifest
from formats.hashing import sha256_files
from tests.fakes.tiny_image_variant import (
    TINY_IMAGE_DIM,
    TINY_SIZE,
    TinyImageWeights,
    make_tiny_image_variant,
    write_tiny_image_onnx,
)
from tests.fakes.tiny_variant import make_tiny_variant


def images() -> list[Image.Image]:
    """Mixed sizes and aspect ratios, a duplicate, a flat image and a 1-pixel one."""
    rng = np.random.default_rng(5)
    made = [
        Image.fromarray(rng.integers(0, 256, (height, width, 3), dtype=np.uint8))
        for width, height in ((40, 30), (30, 40), (8, 8), (123, 17), (10, 10))
    ]
    return [
        *made,
        made[0].copy(),
        Image.new("RGB", (20, 20), (10, 200, 30)),
        made[2].resize((1, 1)),
    ]


@pytest.fixture
def tiny_image_variant(tmp_path: Path) -> tuple[Path, TinyImageWeights]:
    variant_dir = tmp_path / "tiny-image"
    return variant_dir, make_tiny_image_variant(variant_dir)


@pytest.fixture
def encoder(tiny_image_variant: tuple[Path, TinyImageWeights]) -> OnnxImageEncoder:
    return OnnxImageEncoder(tiny_image_variant[0], providers="cpu", intra_op_threads=1)


def test_output_contract(encoder: OnnxImageEncoder) -> None:
    embeddings = encoder.encode_images(images())
    assert embeddings.shape == (len(images()), TINY_IMAGE_DIM)
    assert embeddings.dtype == np.float32
    assert embeddings.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-6)


def test_rows_follow_input_order_and_match_the_reference(
    tiny_image_variant: tuple[Path, TinyImageWeights],
) -> None:
    variant_dir, weights = tiny_image_variant
    # batch_size 3 splits the 8 images into uneven batches.
    encoder = OnnxImageEncoder(variant_dir, providers="cpu", batch_size=3)
    np.testing.assert_allclose(encoder.encode_images(images()), weights.embed(images()), atol=1e-5)


def test_batch_composition_does_not_change_a_row(encoder: OnnxImageEncoder) -> None:
    together = encoder.encode_images(images())
    alone = np.concatenate([encoder.encode_images([image]) for image in images()])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    np.testing.assert_array_equal(together[0], together[5])


def test_empty_input_gives_zero_rows(encoder: OnnxImageEncoder) -> None:
    embeddings = encoder.encode_images([])
    assert embeddings.shape == (0, TINY_IMAGE_DIM)
    assert embeddings.dtype == np.float32


def test_a_bare_image_is_refused(encoder: OnnxImageEncoder) -> None:
    with pytest.raises(TypeError, match="not a single image"):
        encoder.encode_images(Image.new("RGB", (8, 8)))  # type: ignore[arg-type]


def test_a_non_rgb_image_is_refused(encoder: OnnxImageEncoder) -> None:
    with pytest.raises(ValueError, match="expected an RGB image"):
        encoder.encode_images([Image.new("RGBA", (8, 8))])


def test_describes_itself(
    encoder: OnnxImageEncoder, tiny_image_variant: tuple[Path, object]
) -> None:
    manifest = load_variant_manifest(tiny_image_variant[0])
    assert isinstance(encoder, ImageEncoderProtocol)
    assert encoder.name == "tiny-image"
    assert encoder.dim == TINY_IMAGE_DIM
    assert encoder.input_size == (TINY_SIZE, TINY_SIZE)
    assert encoder.precision == "fp32"
    assert encoder.fingerprint == manifest.fingerprint
    assert encoder.manifest == manifest
    assert encoder.providers == [CPU_PROVIDER]
    encoder.providers.append("mutated")
    assert encoder.providers == [CPU_PROVIDER]


def test_auto_reports_the_providers_really_in_use(tiny_image_variant: tuple[Path, object]) -> None:
    encoder = OnnxImageEncoder(tiny_image_variant[0])
    if CUDA_PROVIDER not in ort.get_available_providers():
        assert encoder.providers == [CPU_PROVIDER]
    assert encoder.providers[-1] == CPU_PROVIDER


def test_explicit_cuda_without_cuda_fails_clearly(tiny_image_variant: tuple[Path, object]) -> None:
    if CUDA_PROVIDER in ort.get_available_providers():
        pytest.skip("this onnxruntime build offers CUDA")
    with pytest.raises(ProviderError, match="providers='cuda'"):
        OnnxImageEncoder(tiny_image_variant[0], providers="cuda")


def test_an_altered_graph_is_refused_on_load(tiny_image_variant: tuple[Path, object]) -> None:
    variant_dir = tiny_image_variant[0]
    write_tiny_image_onnx(variant_dir / "image.onnx", normalises=True, seed=1)
    with pytest.raises(VariantError, match=r"image\.onnx: sha256"):
        OnnxImageEncoder(variant_dir)


def test_a_graph_that_does_not_normalise_is_normalised_by_the_encoder(tmp_path: Path) -> None:
    weights = make_tiny_image_variant(tmp_path / "raw", normalised_graph=False)
    embeddings = OnnxImageEncoder(tmp_path / "raw", providers="cpu").encode_images(images())
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-6)
    raw = weights.embed(images())
    expected = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    np.testing.assert_allclose(embeddings, expected, atol=1e-5)


def test_a_manifest_dim_that_disagrees_with_the_graph_is_refused(tmp_path: Path) -> None:
    make_tiny_image_variant(tmp_path / "wrong", manifest_dim=TINY_IMAGE_DIM + 1)
    expected = f"outputs dim {TINY_IMAGE_DIM} but the manifest says {TINY_IMAGE_DIM + 1}"
    with pytest.raises(VariantError, match=expected):
        OnnxImageEncoder(tmp_path / "wrong")


def test_a_graph_input_size_that_disagrees_with_the_manifest_is_refused(tmp_path: Path) -> None:
    make_tiny_image_variant(tmp_path / "wrong", graph_input_size=TINY_SIZE - 1)
    with pytest.raises(
        VariantError, match=r"the manifest needs tensor\(float\) \[batch, 3, 8, 8\]"
    ):
        OnnxImageEncoder(tmp_path / "wrong")


def test_a_text_graph_is_not_taken_for_an_image_tower(tmp_path: Path) -> None:
    variant_dir = tmp_path / "confused"
    make_tiny_image_variant(variant_dir)
    make_tiny_variant(tmp_path / "text")
    (variant_dir / "image.onnx").write_bytes((tmp_path / "text" / "text.onnx").read_bytes())
    manifest = load_variant_manifest(variant_dir)
    files = sha256_files(variant_dir, ["image.onnx"])
    write_variant_manifest(variant_dir, manifest.model_copy(update={"files": files}))
    with pytest.raises(VariantError, match="an image tower takes one"):
        OnnxImageEncoder(variant_dir)


def test_a_variant_without_image_tower_is_refused(tmp_path: Path) -> None:
    make_tiny_variant(tmp_path / "text-only")
    with pytest.raises(VariantError, match="has no image tower"):
        OnnxImageEncoder(tmp_path / "text-only")


def test_a_two_tower_variant_serves_both_encoders_with_one_fingerprint(tmp_path: Path) -> None:
    variant_dir = tmp_path / "dual"
    make_tiny_variant(variant_dir, name="dual")
    image_weights = make_tiny_image_variant(tmp_path / "image-part")
    (variant_dir / "image.onnx").write_bytes((tmp_path / "image-part" / "image.onnx").read_bytes())
    text_manifest = load_variant_manifest(variant_dir)
    image_manifest = load_variant_manifest(tmp_path / "image-part")
    dual = text_manifest.model_validate(
        text_manifest.model_dump()
        | {
            "towers": ["text", "image"],
            "image": image_manifest.image,
            "files": sha256_files(variant_dir, ["text.onnx", "tokenizer.json", "image.onnx"]),
        }
    )
    write_variant_manifest(variant_dir, dual)
    # Both tiny graphs share the dimension, as a real dual encoder's towers must.
    text_encoder = OnnxTextEncoder(variant_dir, providers="cpu")
    image_encoder = OnnxImageEncoder(variant_dir, providers="cpu")
    assert text_encoder.fingerprint == image_encoder.fingerprint == dual.fingerprint
    assert text_encoder.encode_texts(["a dog"]).shape == (1, dual.dim)
    np.testing.assert_allclose(
        image_encoder.encode_images(images()), image_weights.embed(images()), atol=1e-5
    )


@pytest.mark.parametrize(("argument", "value"), [("intra_op_threads", -1), ("batch_size", 0)])
def test_bad_settings_are_refused(
    tiny_image_variant: tuple[Path, object], argument: str, value: int
) -> None:
    with pytest.raises(ValueError, match=argument):
        OnnxImageEncoder(tiny_image_variant[0], **{argument: value})  # type: ignore[arg-type]
