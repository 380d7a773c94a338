"""Building the word-level tokenizer, saving it, and its dynamic padding and truncation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from encoders.text_encoder import TextTokenizer
from training.trainer.word_tokenizer import (
    CLS_ID,
    PAD_ID,
    SPECIAL_TOKENS,
    UNK_ID,
    build_word_tokenizer,
)

CAPTIONS = [
    "A red circle left of a blue star.",
    "a blue star",
    "Two shapes: a red heart and a red circle",
]


def test_vocabulary_is_ranked_by_frequency_then_spelling() -> None:
    built = build_word_tokenizer(CAPTIONS, max_tokens=16)
    batch = built.tokenizer.encode(["a red blue"])
    # "a" (5 uses) < "red" (3) < "blue" (2): the most frequent words get the smallest ids.
    ids = batch.input_ids[0].tolist()
    assert ids[0] == CLS_ID
    assert ids[1] < ids[2] < ids[3]
    # 3 specials + 13 distinct words and punctuation marks ("." and ":" are tokens).
    assert built.vocab_size == len(SPECIAL_TOKENS) + 13


def test_dynamic_padding_and_truncation() -> None:
    tokenizer = build_word_tokenizer(CAPTIONS, max_tokens=6).tokenizer
    batch = tokenizer.encode(["a star", "A RED CIRCLE LEFT OF A BLUE STAR", ""])
    # Padded to the longest row after truncation at 6 tokens ([CLS] included), not to a fixed size.
    assert batch.input_ids.shape == (3, 6)
    assert batch.input_ids.dtype == np.int64
    assert batch.lengths.tolist() == [3, 6, 1]
    assert batch.input_ids[0, 3:].tolist() == [PAD_ID] * 3
    assert batch.attention_mask[0].tolist() == [1, 1, 1, 0, 0, 0]
    # Case-insensitive: the shouted caption has the same ids as the lower-case one.
    assert (
        batch.input_ids[1].tolist()
        == tokenizer.encode(["a red circle left of a"]).input_ids[0].tolist()
    )
    short = tokenizer.encode(["a", "star"])
    assert short.input_ids.shape == (2, 2)


def test_unknown_words_and_literal_specials_map_to_unk() -> None:
    tokenizer = build_word_tokenizer(CAPTIONS, max_tokens=8).tokenizer
    ids = tokenizer.encode(["zebra [PAD]"]).input_ids[0].tolist()
    assert ids[0] == CLS_ID
    assert PAD_ID not in ids
    assert ids[1:] == [UNK_ID] * 4  # "zebra", "[", "pad", "]"


def test_round_trip_through_tokenizer_json(tmp_path: Path) -> None:
    tokenizer = build_word_tokenizer(CAPTIONS, max_tokens=5).tokenizer
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["model"]["type"] == "WordLevel"
    assert saved["truncation"]["max_length"] == 5
    assert saved["padding"]["strategy"] == "BatchLongest"
    reloaded = TextTokenizer.from_file(path, 5)
    texts = ["A red circle left of a blue star.", "a", "", "unknown words here"]
    before, after = tokenizer.encode(texts), reloaded.encode(texts)
    assert np.array_equal(before.input_ids, after.input_ids)
    assert np.array_equal(before.attention_mask, after.attention_mask)


def test_min_frequency_drops_rare_words() -> None:
    built = build_word_tokenizer(CAPTIONS, max_tokens=8, min_frequency=2)
    ids = built.tokenizer.encode(["heart star"]).input_ids[0].tolist()
    assert ids == [CLS_ID, UNK_ID, ids[2]]
    assert ids[2] != UNK_ID
