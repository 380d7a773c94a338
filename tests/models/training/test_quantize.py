"""int8 and fp16 variants derived from fp32 ones: manifests, graphs, parity labels, the CLI."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from encoders.variant import (
    ParityReport,
    SourceModel,
    TextTower,
    VariantError,
    VariantManifest,
    load_variant_manifest,
    verify_variant_files,
    write_variant_manifest,
)
from formats.hashing import sha256_files
from tests.fakes.tiny_image_variant import TINY_TOWER, write_tiny_image_onnx
from tests.fakes.tiny_variant import TINY_MAX_TOKENS, word_level_tokenizer, write_tiny_onnx

onnx = pytest.importorskip("onnx")
pytest.importorskip("skimage", reason="the parity images need scikit-image")

from encoders.image_encoder import OnnxImageEncoder  # noqa: E402
from encoders.text_encoder import OnnxTextEncoder, TextTokenizer  # noqa: E402
from training.__main__ import EXIT_FAILED, EXIT_OK, main  # noqa: E402
from training.parity.texts import caption_texts, parity_texts  # noqa: E402
from training.quantize import derive_variant  # noqa: E402


def make_two_tower_variant(variant_dir: Path) -> None:
    """The tiny text graph (embedding tables) and tiny image graph (a MatMul) in one fp32 folder."""
    variant_dir.mkdir(parents=True)
    write_tiny_onnx(variant_dir / "text.onnx", normalises=True)
    write_tiny_image_onnx(variant_dir / "image.onnx", normalises=True)
    TextTokenizer(word_level_tokenizer(), TINY_MAX_TOKENS).save(variant_dir / "tokenizer.json")
    files = ["text.onnx", "image.onnx", "tokenizer.json"]
    manifest = VariantManifest(
        name="tiny-dual",
        towers=["text", "image"],
        dim=8,
        normalised=True,
        precision="fp32",
        text=TextTower(max_tokens=TINY_MAX_TOKENS),
        image=TINY_TOWER,
        files=sha256_files(variant_dir, files),
        source_model=SourceModel(base_model="tests/tiny-dual"),
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
    )
    write_variant_manifest(variant_dir, manifest)


@pytest.fixture
def fp32_dir(tmp_path: Path) -> Path:
    make_two_tower_variant(tmp_path / "tiny-dual")
    return tmp_path / "tiny-dual"


def op_types(path: Path) -> set[str]:
    return {node.op_type for node in onnx.load(str(path)).graph.node}


def test_int8_variant_is_quantized_and_describes_its_origin(fp32_dir: Path, tmp_path: Path) -> None:
    source = load_variant_manifest(fp32_dir)
    manifest = derive_variant(fp32_dir, tmp_path / "int8", "int8")
    verify_variant_files(tmp_path / "int8", manifest)
    assert (manifest.name, manifest.precision) == ("tiny-dual-int8", "int8")
    assert manifest.derived_from is not None
    assert manifest.derived_from.fingerprint == source.fingerprint
    assert (manifest.derived_from.name, manifest.derived_from.target) == ("tiny-dual", "cpu")
    assert "per channel" in manifest.derived_from.method
    assert manifest.fingerprint != source.fingerprint
    assert manifest.files["tokenizer.json"] == source.files["tokenizer.json"]
    assert (manifest.text, manifest.image) == (source.text, source.image)
    assert "MatMulInteger" in op_types(tmp_path / "int8" / "image.onnx")
    assert "DequantizeLinear" in op_types(tmp_path / "int8" / "text.onnx")  # int8 tables
    text_inputs = onnx.load(str(tmp_path / "int8" / "text.onnx")).graph.input
    assert {node.type.tensor_type.elem_type for node in text_inputs} == {onnx.TensorProto.INT64}


def test_fp16_variant_keeps_float32_inputs_and_outputs(fp32_dir: Path, tmp_path: Path) -> None:
    manifest = derive_variant(fp32_dir, tmp_path / "fp16", "fp16")
    assert manifest.precision == "fp16"
    assert manifest.derived_from is not None
    assert manifest.derived_from.target == "gpu"
    graph = onnx.load(str(tmp_path / "fp16" / "image.onnx")).graph
    assert {init.data_type for init in graph.initializer} == {onnx.TensorProto.FLOAT16}
    for node in (*graph.input, *graph.output):
        assert node.type.tensor_type.elem_type == onnx.TensorProto.FLOAT
    # It loads and runs on onnxruntime's CPU provider, returning the float32 contract.
    images = [Image.new("RGB", (30, 20), (10, 200, 90))]
    embeddings = OnnxImageEncoder(tmp_path / "fp16", providers="cpu").encode_images(images)
    assert embeddings.dtype == np.float32
    assert np.linalg.norm(embeddings, axis=1) == pytest.approx([1.0], abs=1e-3)
    assert OnnxTextEncoder(tmp_path / "fp16", providers="cpu").encode_texts(["a dog"]).shape == (
        1,
        8,
    )


@pytest.mark.parametrize("precision", ["int8", "fp16"])
def test_parity_against_fp32_is_reported_per_tower(
    fp32_dir: Path, tmp_path: Path, precision: str
) -> None:
    manifest = derive_variant(fp32_dir, tmp_path / precision, precision)
    assert manifest.parity is not None
    assert manifest.parity_by_tower is not None
    text, image = manifest.parity_by_tower["text"], manifest.parity_by_tower["image"]
    assert text.inputs == len(parity_texts())
    assert image.inputs >= 100
    assert manifest.parity.min_cosine == min(text.min_cosine, image.min_cosine)
    assert "fp32 variant tiny-dual" in manifest.parity.reference
    for report in (manifest.parity, text, image):
        assert report.status == ("passed" if report.min_cosine >= 0.999 else "below_bar")
        assert report.min_cosine > 0.9  # a broken conversion lands far lower
    # Recomputing with the served classes gives the recorded numbers.
    texts = parity_texts()
    fresh = OnnxTextEncoder(tmp_path / precision, providers="cpu").encode_texts(texts)
    reference = OnnxTextEncoder(fp32_dir, providers="cpu").encode_texts(texts)
    assert float(np.min(np.sum(fresh * reference, axis=1))) == pytest.approx(
        text.min_cosine, abs=1e-5
    )


def test_a_variant_below_the_bar_is_kept_and_labelled_honestly(
    fp32_dir: Path, tmp_path: Path
) -> None:
    manifest = derive_variant(fp32_dir, tmp_path / "int8", "int8", parity_threshold=0.99999999)
    assert manifest.parity is not None
    assert manifest.parity.status == "below_bar"
    assert manifest.parity.min_cosine < 0.99999999
    assert load_variant_manifest(tmp_path / "int8").parity == manifest.parity


def test_a_report_cannot_claim_a_pass_its_numbers_deny() -> None:
    fields = {
        "reference": "r", "inputs": 3, "min_cosine": 0.97, "mean_cosine": 0.99,
        "max_abs_diff": 0.1, "threshold": 0.999, "worst_input": "x",
    }  # fmt: skip
    assert ParityReport(**fields, status="below_bar").status == "below_bar"
    with pytest.raises(ValueError, match="contradicts"):
        ParityReport(**fields, status="passed")


def test_only_fp32_variants_are_derived_from(fp32_dir: Path, tmp_path: Path) -> None:
    derive_variant(fp32_dir, tmp_path / "int8", "int8")
    with pytest.raises(VariantError, match="fp32"):
        derive_variant(tmp_path / "int8", tmp_path / "int8-again", "fp16")
    assert not (tmp_path / "int8-again").exists()


def test_cli_quantize_with_real_captions(fp32_dir: Path, tmp_path: Path, data_dir: Path) -> None:
    captions = data_dir / "coco-karpathy-captions" / "captions_val.csv"
    out = tmp_path / "int8"
    argv = ["quantize", "--from", str(fp32_dir), "--precision", "int8", "--out", str(out)]
    assert main([*argv, "--captions", str(captions), "--caption-count", "40"]) == EXIT_OK
    manifest = load_variant_manifest(out)
    assert manifest.parity_by_tower is not None
    assert manifest.parity_by_tower["text"].inputs == len(parity_texts()) + 40
    assert caption_texts(captions, 2)[0] == caption_texts(captions, 40)[0]
    assert main(argv) == EXIT_FAILED  # exists, no --force
    assert main([*argv, "--force", "--name", "renamed"]) == EXIT_OK
    assert load_variant_manifest(out).name == "renamed"


@pytest.mark.slow
def test_int8_minilm_on_real_captions(
    minilm_variant_dir: Path, tmp_path: Path, data_dir: Path
) -> None:
    captions = data_dir / "coco-karpathy-captions" / "captions_val.csv"
    manifest = derive_variant(
        minilm_variant_dir, tmp_path / "minilm-int8", "int8", captions_csv=captions, captions=300
    )
    report = manifest.parity
    assert report is not None
    assert manifest.parity_by_tower is None  # one tower: `parity` is that tower's report
    # Known for dynamic int8 MiniLM: ~0.97 at worst, ~0.99 on average.
    assert report.min_cosine > 0.95
    assert report.mean_cosine > 0.99
    assert report.status == ("passed" if report.min_cosine >= 0.999 else "below_bar")
    assert (tmp_path / "minilm-int8" / "text.onnx").stat().st_size < 0.5 * (
        minilm_variant_dir / "text.onnx"
    ).stat().st_size
