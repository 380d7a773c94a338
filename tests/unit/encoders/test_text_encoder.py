"""OnnxTextEncoder on the tiny variant: exact outputs, ordering, batching, verification."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from encoders import text_encoder
from encoders.protocols import TextEncoderProtocol
from encoders.providers import CPU_PROVIDER, CUDA_PROVIDER, ProviderError
from encoders.text_encoder import OnnxTextEncoder
from encoders.tokenizer import TextTokenizer
from encoders.variant import VariantError, load_variant_manifest, write_variant_manifest
from tests.fakes.tiny_variant import (
    TINY_DIM,
    TINY_MAX_TOKENS,
    TinyWeights,
    make_tiny_variant,
    word_level_tokenizer,
)

# Mixed lengths (1 to beyond max_tokens), duplicates, unknown words, empty and whitespace text.
TEXTS = [
    "a dog on the couch",
    "",
    "two big red dogs with a ball in the park and a cat on the blue sofa",
    "cat",
    "a dog on the couch",
    "UNKNOWN words only",
    "   ",
    "the plane in the sky",
    "a small cat sits on a sofa",
]


def expected_embeddings(weights: TinyWeights, texts: list[str]) -> np.ndarray:
    """The tiny graph's output computed in numpy, one text at a time (no padding at all)."""
    tokenizer = TextTokenizer(word_level_tokenizer(), TINY_MAX_TOKENS)
    return np.concatenate([weights.embed(tokenizer.encode([text])) for text in texts])


@pytest.fixture
def encoder(tiny_variant: tuple[Path, TinyWeights]) -> OnnxTextEncoder:
    return OnnxTextEncoder(tiny_variant[0], providers="cpu", intra_op_threads=1)


def test_output_contract(encoder: OnnxTextEncoder) -> None:
    embeddings = encoder.encode_texts(TEXTS)
    assert embeddings.shape == (len(TEXTS), TINY_DIM)
    assert embeddings.dtype == np.float32
    assert embeddings.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-6)


def test_rows_follow_input_order_and_match_the_reference(
    tiny_variant: tuple[Path, TinyWeights],
) -> None:
    variant_dir, weights = tiny_variant
    # batch_size 2 forces several length-sorted batches whose order must be undone.
    encoder = OnnxTextEncoder(variant_dir, providers="cpu", batch_size=2)
    np.testing.assert_allclose(
        encoder.encode_texts(TEXTS), expected_embeddings(weights, TEXTS), atol=1e-6
    )


def test_padding_and_batch_composition_do_not_change_a_row(encoder: OnnxTextEncoder) -> None:
    together = encoder.encode_texts(TEXTS)
    alone = np.concatenate([encoder.encode_texts([text]) for text in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-6)
    np.testing.assert_array_equal(together[0], together[4])


def test_several_sort_windows(encoder: OnnxTextEncoder, monkeypatch: pytest.MonkeyPatch) -> None:
    whole = encoder.encode_texts(TEXTS)
    monkeypatch.setattr(text_encoder, "SORT_WINDOW", 3)
    np.testing.assert_allclose(encoder.encode_texts(TEXTS), whole, atol=1e-6)


def test_long_texts_are_truncated_to_max_tokens(encoder: OnnxTextEncoder) -> None:
    words = ["a", "dog", "on", "the", "couch", "with", "a", "ball", "and", "a", "cat"]
    kept = TINY_MAX_TOKENS - 2  # [CLS] and [SEP] count toward max_tokens
    long_text, truncated = " ".join(words), " ".join(words[:kept])
    np.testing.assert_allclose(
        encoder.encode_texts([long_text]), encoder.encode_texts([truncated]), atol=1e-6
    )


def test_empty_input_gives_zero_rows(encoder: OnnxTextEncoder) -> None:
    embeddings = encoder.encode_texts([])
    assert embeddings.shape == (0, TINY_DIM)
    assert embeddings.dtype == np.float32


def test_accepts_any_sequence(encoder: OnnxTextEncoder) -> None:
    np.testing.assert_array_equal(
        encoder.encode_texts(("a dog", "cat")), encoder.encode_texts(["a dog", "cat"])
    )


def test_a_bare_string_is_refused(encoder: OnnxTextEncoder) -> None:
    with pytest.raises(TypeError, match="not a single str"):
        encoder.encode_texts("a dog")


def test_describes_itself(encoder: OnnxTextEncoder, tiny_variant: tuple[Path, object]) -> None:
    manifest = load_variant_manifest(tiny_variant[0])
    assert isinstance(encoder, TextEncoderProtocol)
    assert encoder.name == "tiny"
    assert encoder.dim == TINY_DIM
    assert encoder.max_tokens == TINY_MAX_TOKENS
    assert encoder.precision == "fp32"
    assert encoder.fingerprint == manifest.fingerprint
    assert encoder.manifest == manifest
    assert encoder.providers == [CPU_PROVIDER]
    encoder.providers.append("mutated")
    assert encoder.providers == [CPU_PROVIDER]


def test_auto_reports_the_providers_really_in_use(tiny_variant: tuple[Path, object]) -> None:
    encoder = OnnxTextEncoder(tiny_variant[0])
    if CUDA_PROVIDER not in ort.get_available_providers():
        assert encoder.providers == [CPU_PROVIDER]
    assert encoder.providers[-1] == CPU_PROVIDER


def test_explicit_cuda_without_cuda_fails_clearly(tiny_variant: tuple[Path, object]) -> None:
    if CUDA_PROVIDER in ort.get_available_providers():
        pytest.skip("this onnxruntime build offers CUDA")
    with pytest.raises(ProviderError, match="providers='cuda'"):
        OnnxTextEncoder(tiny_variant[0], providers="cuda")


def test_an_altered_file_is_refused_on_load(tiny_variant: tuple[Path, object]) -> None:
    variant_dir = tiny_variant[0]
    tokenizer_json = variant_dir / "tokenizer.json"
    tokenizer_json.write_text(tokenizer_json.read_text(encoding="utf-8") + " ", encoding="utf-8")
    with pytest.raises(VariantError, match=r"tokenizer\.json: sha256"):
        OnnxTextEncoder(variant_dir)


def test_a_graph_that_does_not_normalise_is_normalised_by_the_encoder(tmp_path: Path) -> None:
    weights = make_tiny_variant(tmp_path / "raw", normalised_graph=False)
    embeddings = OnnxTextEncoder(tmp_path / "raw", providers="cpu").encode_texts(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, rtol=1e-6)
    raw = expected_embeddings(weights, TEXTS)
    expected = raw / np.linalg.norm(raw, axis=1, keepdims=True)
    np.testing.assert_allclose(embeddings, expected, atol=1e-6)


def test_a_manifest_dim_that_disagrees_with_the_graph_is_refused(tmp_path: Path) -> None:
    make_tiny_variant(tmp_path / "wrong", manifest_dim=TINY_DIM + 1)
    with pytest.raises(VariantError, match="outputs dim 8 but the manifest says 9"):
        OnnxTextEncoder(tmp_path / "wrong")


def test_a_variant_without_text_tower_is_refused(tiny_variant: tuple[Path, object]) -> None:
    variant_dir = tiny_variant[0]
    manifest = load_variant_manifest(variant_dir)
    image_only = manifest.model_validate(
        manifest.model_dump()
        | {
            "towers": ["image"],
            "text": None,
            "image": {
                "onnx_file": "text.onnx",
                "height": 4,
                "width": 4,
                "resize": "exact",
                "resize_to": 4,
                "mean": [0.5, 0.5, 0.5],
                "std": [0.5, 0.5, 0.5],
            },
        }
    )
    write_variant_manifest(variant_dir, image_only)
    with pytest.raises(VariantError, match="has no text tower"):
        OnnxTextEncoder(variant_dir)


@pytest.mark.parametrize(("argument", "value"), [("intra_op_threads", -1), ("batch_size", 0)])
def test_bad_settings_are_refused(
    tiny_variant: tuple[Path, object], argument: str, value: int
) -> None:
    with pytest.raises(ValueError, match=argument):
        OnnxTextEncoder(tiny_variant[0], **{argument: value})  # type: ignore[arg-type]
