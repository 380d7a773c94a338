"""The text tower of a variant: texts → token id tensors (:class:`TextTokenizer`), then the
tower's ONNX session (:class:`OnnxTextEncoder`).

Tokenizing: a Hugging Face ``tokenizer.json`` carries its own padding and truncation settings,
and exported models often ship unsuitable ones: the all-MiniLM-L6-v2 file pads every input to a
fixed 128 tokens and truncates at 128 although the model was trained with 256. ``TextTokenizer``
therefore always overrides both: truncation to ``max_tokens`` (longest_first, from the right)
and padding to the longest row of each batch. ``save`` writes a tokenizer.json that carries
these settings itself.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt
from tokenizers import Tokenizer

from encoders.length_runs import RunCost, plan_runs, run_cost_for
from encoders.providers import ProviderRequest
from encoders.tower_session import TowerSession, VariantTower
from encoders.variant import (
    TextTower,
    VariantError,
    VariantManifest,
)

DEFAULT_BATCH_SIZE: Final = 64
# Texts are tokenized and length-sorted this many at a time, which bounds the padded token tensors
# to SORT_WINDOW x max_tokens while keeping sort quality for large inputs (index builds).
SORT_WINDOW: Final = 4096
TEXT_INPUT_NAMES: Final = frozenset({"input_ids", "attention_mask", "token_type_ids"})

logger = logging.getLogger(__name__)


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


class OnnxTextEncoder(VariantTower):
    """Embeds texts with a variant's ``text.onnx`` and tokenizer; implements TextEncoderProtocol.

    Loading verifies the SHA-256 of every variant file against ``variant.json`` (``VariantError``
    on a mismatch). Safe to call from several threads: onnxruntime sessions and tokenizers are
    thread-safe once configured.
    """

    def __init__(
        self,
        variant_dir: Path,
        providers: ProviderRequest = "auto",
        intra_op_threads: int = 0,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        run_cost: RunCost | None = None,
    ) -> None:
        """Load and verify the variant in ``variant_dir`` and start an onnxruntime session.

        ``providers``: "auto" (CUDA when the build offers it, else CPU), "cpu", or "cuda" (raises
        ``ProviderError`` when the session cannot really run on CUDA). ``intra_op_threads``: 0 lets
        onnxruntime use one thread per core. ``batch_size``: most texts per session run.
        ``run_cost``: how texts are cut into runs by length (:mod:`encoders.length_runs`); by
        default a CPU's or a GPU's, after the providers the session really runs on.
        """
        super().__init__(variant_dir, batch_size)
        self._text = _text_tower(self._manifest, self._variant_dir)
        self._tokenizer = TextTokenizer.from_file(
            self._variant_dir / self._text.tokenizer_file, self._text.max_tokens
        )

        self._open_session(self._text.onnx_file, providers, intra_op_threads)
        self._input_names = _text_input_names(self._session, self._text.onnx_file)
        self._run_cost = run_cost or run_cost_for(self.providers)
        logger.info(
            "text encoder %s ready: dim %d, max_tokens %d, %s, providers %s",
            self.name,
            self.dim,
            self.max_tokens,
            self.precision,
            self.providers,
        )

    @property
    def max_tokens(self) -> int:
        """Truncation length in tokens, special tokens included."""
        return self._text.max_tokens

    @property
    def tokenizer(self) -> TextTokenizer:
        """The variant's tokenizer, truncating at ``max_tokens`` and padding dynamically: what
        :meth:`encode_texts` tokenizes with."""
        return self._tokenizer

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: float32 ``[len(texts), dim]``, L2-normalised rows, C-contiguous.

        Row ``i`` embeds ``texts[i]``. Texts longer than ``max_tokens`` are truncated. Internally
        texts are sorted by token count and cut into runs of similar length
        (:func:`encoders.length_runs.plan_runs`), so short texts are not padded up to a long
        neighbour; the order is restored on output.
        """
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of characters; embedding each letter is never meant.
            raise TypeError("encode_texts takes a sequence of texts, not a single str")
        texts = list(texts)
        embeddings = np.empty((len(texts), self.dim), dtype=np.float32)
        for window_start in range(0, len(texts), SORT_WINDOW):
            tokens = self._tokenizer.encode(texts[window_start : window_start + SORT_WINDOW])
            for rows in plan_runs(tokens.lengths, self._batch_size, self._run_cost):
                embeddings[window_start + rows] = self._run(tokens.take(rows))
        return embeddings

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Tokens fed to the model for each of ``texts``: after truncation at ``max_tokens``,
        special tokens included (what ``usage`` of ``/v1/embeddings`` counts)."""
        if isinstance(texts, str):
            raise TypeError("count_tokens takes a sequence of texts, not a single str")
        return [int(length) for length in self._tokenizer.encode(list(texts)).lengths]

    def _run(self, batch: TokenBatch) -> npt.NDArray[np.float32]:
        """One session run: ``[b, L]`` token tensors → float32 ``[b, dim]`` L2-normalised rows."""
        return self._session.run(batch.as_feed(self._input_names), len(batch.input_ids))


def _text_tower(manifest: VariantManifest, variant_dir: Path) -> TextTower:
    """The manifest's text section; ``VariantError`` for a variant without a text tower."""
    if manifest.text is None:
        raise VariantError(f"variant {manifest.name!r} at {variant_dir} has no text tower")
    return manifest.text


def _text_input_names(session: TowerSession, onnx_file: str) -> list[str]:
    """The graph's input names; ``VariantError`` unless they are token tensors with input_ids."""
    names = session.input_names
    if "input_ids" not in names or not set(names) <= TEXT_INPUT_NAMES:
        raise VariantError(
            f"{onnx_file} inputs {names} are not a text tower's: it must take input_ids "
            f"and may take only {sorted(TEXT_INPUT_NAMES)}"
        )
    return names
