"""``python -m training export clip --from DIR`` on a tiny random CLIP, both checkpoint layouts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.fakes.tiny_clip import (
    TINY_CONTEXT,
    TINY_DIM,
    TINY_IMAGE,
    write_tiny_hf_clip,
    write_tiny_open_clip,
)

onnx = pytest.importorskip("onnx")
pytest.importorskip("skimage", reason="the parity images need scikit-image")

from encoders.image_encoder import OnnxImageEncoder  # noqa: E402
from encoders.text_encoder import OnnxTextEncoder, TextTokenizer  # noqa: E402
from encoders.variant import VariantError, load_variant_manifest, verify_variant_files  # noqa: E402
from training.__main__ import EXIT_FAILED, EXIT_OK, main  # noqa: E402
from training.export.clip_checkpoint import (  # noqa: E402
    check_pooling_token,
    clip_tokenizer,
    image_tower_from_hf,
    image_tower_from_open_clip,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(Hugging Face folder, open_clip folder) holding the same random weights."""
    root = tmp_path_factory.mktemp("clip-checkpoints")
    model = write_tiny_hf_clip(root / "tiny-clip-hf")
    write_tiny_open_clip(root / "tiny-clip-open", root / "tiny-clip-hf", model)
    return root / "tiny-clip-hf", root / "tiny-clip-open"


@pytest.fixture(scope="module")
def exported(
    checkpoints: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, Path]:
    """Both checkpoints exported through the CLI: (hf variant, open_clip variant)."""
    out = tmp_path_factory.mktemp("clip-variants")
    hf_dir, open_clip_dir = checkpoints
    assert main(["export", "clip", "--from", str(hf_dir), "--out", str(out / "hf")]) == EXIT_OK
    assert (
        main(
            [
                "export",
                "clip",
                "--from",
                str(open_clip_dir),
                "--out",
                str(out / "oc"),
                "--name",
                "tiny-oc",
            ]
        )
        == EXIT_OK
    )
    return out / "hf", out / "oc"


def test_the_variant_has_both_towers_the_tokenizer_and_the_preprocessing(
    exported: tuple[Path, Path],
) -> None:
    variant_dir, _ = exported
    manifest = load_variant_manifest(variant_dir)
    verify_variant_files(variant_dir, manifest)
    assert manifest.name == "tiny-clip-hf"  # the checkpoint folder's name
    assert manifest.towers == ["text", "image"]
    assert (manifest.dim, manifest.precision, manifest.normalised) == (TINY_DIM, "fp32", True)
    assert manifest.text is not None
    assert manifest.text.max_tokens == TINY_CONTEXT
    assert manifest.image is not None
    assert (manifest.image.height, manifest.image.width) == (TINY_IMAGE, TINY_IMAGE)
    assert (manifest.image.resize, manifest.image.crop, manifest.image.interpolation) == (
        "shorter_side",
        "center",
        "bicubic",
    )
    assert manifest.image.mean == pytest.approx((0.48145466, 0.4578275, 0.40821073))
    tokenizer = json.loads((variant_dir / "tokenizer.json").read_text())
    assert tokenizer["truncation"]["max_length"] == TINY_CONTEXT
    assert tokenizer["padding"]["pad_token"] == "<|endoftext|>"


def test_parity_is_reported_per_tower_and_passes(exported: tuple[Path, Path]) -> None:
    manifest = load_variant_manifest(exported[0])
    assert manifest.parity is not None
    assert manifest.parity_by_tower is not None
    assert set(manifest.parity_by_tower) == {"text", "image"}
    assert manifest.parity_by_tower["text"].inputs >= 100
    assert manifest.parity_by_tower["image"].inputs >= 100
    for report in (manifest.parity, *manifest.parity_by_tower.values()):
        assert report.status == "passed"
        assert report.min_cosine >= 0.9999
    assert manifest.parity.inputs == sum(r.inputs for r in manifest.parity_by_tower.values())


def test_both_graphs_have_a_dynamic_batch_and_the_text_a_dynamic_length(
    exported: tuple[Path, Path],
) -> None:
    variant_dir, _ = exported
    text = onnx.load(str(variant_dir / "text.onnx")).graph.input
    image = onnx.load(str(variant_dir / "image.onnx")).graph.input
    assert [node.name for node in text] == ["input_ids"]
    assert [d.dim_param for d in text[0].type.tensor_type.shape.dim] == ["batch", "sequence"]
    assert image[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    texts = ["a dog", "a cat on a couch with a dog and another long tail of words", "cat"]
    encoder = OnnxTextEncoder(variant_dir, providers="cpu", batch_size=2)
    together = encoder.encode_texts(texts)
    alone = np.concatenate([encoder.encode_texts([text]) for text in texts])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)) for _ in range(3)]
    image_encoder = OnnxImageEncoder(variant_dir, providers="cpu")
    np.testing.assert_allclose(
        image_encoder.encode_images(images),
        np.concatenate([image_encoder.encode_images([image]) for image in images]),
        atol=1e-5,
    )


def test_the_open_clip_checkpoint_exports_to_the_same_embeddings(
    exported: tuple[Path, Path],
) -> None:
    hf_dir, open_clip_dir = exported
    manifest = load_variant_manifest(open_clip_dir)
    assert manifest.name == "tiny-oc"
    assert "open_clip" in manifest.source_model.base_model
    assert manifest.image == load_variant_manifest(hf_dir).image
    texts = ["a dog", "two cats and a dog on a red couch", ""]
    np.testing.assert_allclose(
        OnnxTextEncoder(open_clip_dir, providers="cpu").encode_texts(texts),
        OnnxTextEncoder(hf_dir, providers="cpu").encode_texts(texts),
        atol=1e-5,
    )
    images = [Image.new("RGB", (64, 48), (200, 30, 60)), Image.new("RGB", (20, 90), (0, 90, 255))]
    np.testing.assert_allclose(
        OnnxImageEncoder(open_clip_dir, providers="cpu").encode_images(images),
        OnnxImageEncoder(hf_dir, providers="cpu").encode_images(images),
        atol=1e-5,
    )


def test_an_existing_output_is_kept_and_a_missing_from_is_refused(
    checkpoints: tuple[Path, Path], exported: tuple[Path, Path]
) -> None:
    variant_dir, _ = exported
    before = (variant_dir / "variant.json").read_bytes()
    assert (
        main(["export", "clip", "--from", str(checkpoints[0]), "--out", str(variant_dir)])
        == EXIT_FAILED
    )
    assert (variant_dir / "variant.json").read_bytes() == before
    assert main(["export", "clip", "--out", str(variant_dir.parent / "x")]) == EXIT_FAILED
    assert (
        main(["export", "minilm", "--from", "x", "--out", str(variant_dir.parent / "y")])
        == EXIT_FAILED
    )


def test_hf_preprocessing_variants_map_or_are_refused() -> None:
    squash = image_tower_from_hf(
        {"size": {"height": 32, "width": 32}, "do_center_crop": False, "resample": 2}
    )
    assert (squash.resize, squash.crop, squash.interpolation) == ("exact", "none", "bilinear")
    legacy = image_tower_from_hf({"size": 224, "crop_size": 224})
    assert (legacy.resize, legacy.resize_to, legacy.height) == ("shorter_side", 224, 224)
    with pytest.raises(VariantError, match="resample"):
        image_tower_from_hf({"size": 224, "crop_size": 224, "resample": 1})
    with pytest.raises(VariantError, match="center_crop"):
        image_tower_from_hf({"size": {"shortest_edge": 224}, "do_center_crop": False})
    with pytest.raises(VariantError, match="rescal"):
        image_tower_from_hf({"size": 224, "crop_size": 224, "rescale_factor": 1.0})


def test_open_clip_preprocessing_variants_map_or_are_refused() -> None:
    base = {"embed_dim": 8, "vision_cfg": {"image_size": 64}, "text_cfg": {}}
    squash = image_tower_from_open_clip(
        {"model_cfg": base, "preprocess_cfg": {"resize_mode": "squash"}}
    )
    assert (squash.resize, squash.height, squash.mean) == (
        "exact",
        64,
        pytest.approx((0.48145466, 0.4578275, 0.40821073)),
    )
    with pytest.raises(VariantError, match="longest"):
        image_tower_from_open_clip(
            {"model_cfg": base, "preprocess_cfg": {"resize_mode": "longest"}}
        )


def test_a_tokenizer_that_does_not_end_at_the_pooled_token_is_refused(
    checkpoints: tuple[Path, Path],
) -> None:
    from tokenizers import Tokenizer

    tokenizer = clip_tokenizer(checkpoints[0], TINY_CONTEXT)
    eos_id = 517  # "<|endoftext|>", the last id of the tiny vocabulary
    check_pooling_token(tokenizer, eos_id)
    check_pooling_token(tokenizer, 2)  # argmax pooling: the end-of-text id is the largest
    bare = Tokenizer.from_file(str(checkpoints[0] / "tokenizer.json"))
    bare.post_processor = None
    bare.enable_padding(pad_id=eos_id, pad_token="<|endoftext|>")
    with pytest.raises(VariantError, match="last token"):
        check_pooling_token(TextTokenizer(bare, TINY_CONTEXT), eos_id)
