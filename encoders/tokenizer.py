"""Text → token id tensors with the variant's truncation and dynamic padding.

A Hugging Face ``tokenizer.json`` carries its own padding and truncation settings, and exported
models often ship unsuitable ones: the all-MiniLM-L6-v2 file pads every input to a fixed 128
tokens and truncates at 128 although the model was trained with 256. ``TextTokenizer`` therefore
always overrides both: truncation to ``max_tokens`` (longest_first, from the right) and padding to
the longest row of each batch. ``save`` writes a tokenizer.json that carries these settings itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

TokenIds = npt.NDArray[np.int64]


@dataclass(frozen=True)
class TokenBatch:
    """Right-padded token tensors for ``n`` texts, each int64 of shape ``[n, L]``.

    ``L`` is the longest row's token count (special tokens included); padding positions have
    ``attention_mask == 0``.
    """

    input_ids: TokenIds
    attention_mask: TokenIds
    token_type_ids: TokenIds

    @property
    def lengths(self) -> TokenIds:
        """Tokens per row without padding, int64 ``[n]``."""
        lengths: TokenIds = self.attention_mask.sum(axis=1, dtype=np.int64)
        return lengths

    def take(self, rows: npt.NDArray[np.intp]) -> TokenBatch:
        """The given rows, in that order, with padding columns no row needs cut off.

        Exact because padding is on the right: a row's tokens all lie before column
        ``lengths[row]``.
        """
        width = int(self.lengths[rows].max()) if len(rows) else 0
        return TokenBatch(
            input_ids=np.ascontiguousarray(self.input_ids[rows, :width]),
            attention_mask=np.ascontiguousarray(self.attention_mask[rows, :width]),
            token_type_ids=np.ascontiguousarray(self.token_type_ids[rows, :width]),
        )

    def as_feed(self, input_names: Sequence[str]) -> dict[str, TokenIds]:
        """The onnxruntime feed for a graph whose inputs are ``input_names``.

        Raises ``KeyError`` for an input name this batch cannot provide.
        """
        tensors = {
            "input_ids": self.input_ids,
            "attention_mask": self.attention_mask,
            "token_type_ids": self.token_type_ids,
        }
        unknown = [name for name in input_names if name not in tensors]
        if unknown:
            raise KeyError(
                f"text graph expects inputs {unknown}; a tokenizer provides {list(tensors)}"
            )
        return {name: tensors[name] for name in input_names}


class TextTokenizer:
    """A ``tokenizers.Tokenizer`` forced to truncate at ``max_tokens`` and pad dynamically."""

    def __init__(self, tokenizer: Tokenizer, max_tokens: int) -> None:
        """Take ownership of ``tokenizer`` and reconfigure its truncation and padding in place.

        ``max_tokens`` counts special tokens too ([CLS] and [SEP] for BERT). The pad token is kept
        from the tokenizer's own padding settings, else looked up as ``[PAD]``; raises
        ``ValueError`` when there is none or ``max_tokens`` is not positive.
        """
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be positive, got {max_tokens}")
        pad_id, pad_type_id, pad_token = _pad_settings(tokenizer)
        tokenizer.enable_truncation(
            max_tokens, stride=0, strategy="longest_first", direction="right"
        )
        # No `length`: pad to the longest row of each batch, not to a fixed size.
        tokenizer.enable_padding(
            direction="right", pad_id=pad_id, pad_type_id=pad_type_id, pad_token=pad_token
        )
        self._tokenizer = tokenizer
        self._max_tokens = max_tokens

    @classmethod
    def from_file(cls, path: Path, max_tokens: int) -> TextTokenizer:
        """Load a Hugging Face ``tokenizer.json`` and apply ``max_tokens`` and dynamic padding."""
        return cls(Tokenizer.from_file(str(path)), max_tokens)

    @property
    def max_tokens(self) -> int:
        """Truncation length in tokens, special tokens included."""
        return self._max_tokens

    def encode(self, texts: Sequence[str]) -> TokenBatch:
        """Tokenize ``texts`` into int64 ``[n, L]`` tensors, ``L`` ≤ ``max_tokens``.

        ``L`` is the longest row after truncation; an empty ``texts`` gives shape ``[0, 0]``.
        """
        if not texts:
            empty = np.zeros((0, 0), dtype=np.int64)
            return TokenBatch(empty, empty.copy(), empty.copy())
        # encode_batch_fast skips character offsets, which are never needed here.
        encodings = self._tokenizer.encode_batch_fast(list(texts))
        return TokenBatch(
            input_ids=np.array([row.ids for row in encodings], dtype=np.int64),
            attention_mask=np.array([row.attention_mask for row in encodings], dtype=np.int64),
            token_type_ids=np.array([row.type_ids for row in encodings], dtype=np.int64),
        )

    def save(self, path: Path) -> None:
        """Write the tokenizer, with its truncation and dynamic padding, as ``tokenizer.json``."""
        self._tokenizer.save(str(path), pretty=True)


def _pad_settings(tokenizer: Tokenizer) -> tuple[int, int, str]:
    """(pad_id, pad_type_id, pad_token) from the tokenizer's padding config or its ``[PAD]``."""
    padding = tokenizer.padding
    if padding is not None:
        return int(padding["pad_id"]), int(padding["pad_type_id"]), str(padding["pad_token"])
    pad_id = tokenizer.token_to_id("[PAD]")
    if pad_id is None:
        raise ValueError("tokenizer has no padding settings and no [PAD] token to pad with")
    return pad_id, 0, "[PAD]"
