"""A word-level Hugging Face tokenizer built from training captions.

The scenes captions use about 130 distinct words, so a word vocabulary is exact and tiny; no
sub-word model is needed. The tokenizer (saved as the variant's ``tokenizer.json``):

- normaliser: NFKC then lower-casing, so "Red", "RED" and full-width letters map to "red";
- pre-tokenizer: ``Whitespace`` (runs of word characters, and runs of punctuation, are tokens);
- model: ``WordLevel`` over ``[PAD]`` (id 0), ``[UNK]`` (id 1), ``[CLS]`` (id 2), then every word
  seen at least ``min_frequency`` times, most frequent first, ties in code-point order (so the
  same captions always give the same ids);
- post-processor: ``[CLS] $A``. The leading ``[CLS]`` makes every text at least one token long:
  an empty or punctuation-free string still has something to attend to and mean-pool over,
  instead of a 0/0 average.

Truncation (at ``max_tokens``, ``[CLS]`` included) and dynamic padding come from
``encoders.text_encoder.TextTokenizer``, the class serving uses, which also writes them into the
saved file.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Final, NamedTuple

from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.models import WordLevel

from encoders.text_encoder import TextTokenizer

PAD_TOKEN: Final = "[PAD]"
UNK_TOKEN: Final = "[UNK]"
CLS_TOKEN: Final = "[CLS]"
SPECIAL_TOKENS: Final = (PAD_TOKEN, UNK_TOKEN, CLS_TOKEN)
PAD_ID: Final = 0
UNK_ID: Final = 1
CLS_ID: Final = 2


def _normalizer() -> normalizers.Normalizer:
    return normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])


def _pre_tokenizer() -> pre_tokenizers.PreTokenizer:
    return pre_tokenizers.Whitespace()


class WordTokenizer(NamedTuple):
    """A built tokenizer and the size of its vocabulary (ids are ``0 .. vocab_size - 1``)."""

    tokenizer: TextTokenizer
    vocab_size: int


def build_word_tokenizer(
    texts: Iterable[str], *, max_tokens: int, min_frequency: int = 1
) -> WordTokenizer:
    """A ``TextTokenizer`` whose word vocabulary is built from ``texts``, and its vocabulary size.

    ``max_tokens``: truncation length, ``[CLS]`` included. Words seen fewer than
    ``min_frequency`` times map to ``[UNK]``. Deterministic: ids depend only on the word counts.
    Raises ``ValueError`` for ``min_frequency`` < 1.
    """
    if min_frequency < 1:
        raise ValueError(f"min_frequency must be >= 1, got {min_frequency}")
    normalizer = _normalizer()
    pre_tokenizer = _pre_tokenizer()
    counts: Counter[str] = Counter()
    for text in texts:
        pieces = pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text))
        counts.update(piece for piece, _offsets in pieces)
    ranked = sorted(
        (word for word, count in counts.items() if count >= min_frequency),
        key=lambda word: (-counts[word], word),
    )
    vocabulary = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
    for word in ranked:
        vocabulary[word] = len(vocabulary)

    tokenizer = Tokenizer(WordLevel(vocabulary, unk_token=UNK_TOKEN))
    tokenizer.normalizer = normalizer
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{CLS_TOKEN} $A", special_tokens=[(CLS_TOKEN, CLS_ID)]
    )
    # The special tokens are deliberately not registered as "added tokens": a caption that
    # literally contains "[PAD]" is then split into "[", "pad", "]" like any text, and can never
    # smuggle a padding id into an attended position.
    return WordTokenizer(TextTokenizer(tokenizer, max_tokens), len(vocabulary))
