"""The text tower of a variant, run with onnxruntime."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from encoders.providers import ProviderRequest
from encoders.tokenizer import TextTokenizer, TokenBatch
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
    ) -> None:
        """Load and verify the variant in ``variant_dir`` and start an onnxruntime session.

        ``providers``: "auto" (CUDA when the build offers it, else CPU), "cpu", or "cuda" (raises
        ``ProviderError`` when the session cannot really run on CUDA). ``intra_op_threads``: 0 lets
        onnxruntime use one thread per core. ``batch_size``: texts per session run.
        """
        super().__init__(variant_dir, batch_size)
        self._text = _text_tower(self._manifest, self._variant_dir)
        self._tokenizer = TextTokenizer.from_file(
            self._variant_dir / self._text.tokenizer_file, self._text.max_tokens
        )

        self._open_session(self._text.onnx_file, providers, intra_op_threads)
        self._input_names = _text_input_names(self._session, self._text.onnx_file)
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

    def encode_texts(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: float32 ``[len(texts), dim]``, L2-normalised rows, C-contiguous.

        Row ``i`` embeds ``texts[i]``. Texts longer than ``max_tokens`` are truncated. Internally
        texts are sorted by token count and run in batches of similar length, so short texts
        are not padded up to a long neighbour; the order is restored on output.
        """
        if isinstance(texts, str):
            # A bare string is a Sequence[str] of characters; embedding each letter is never meant.
            raise TypeError("encode_texts takes a sequence of texts, not a single str")
        texts = list(texts)
        embeddings = np.empty((len(texts), self.dim), dtype=np.float32)
        for window_start in range(0, len(texts), SORT_WINDOW):
            tokens = self._tokenizer.encode(texts[window_start : window_start + SORT_WINDOW])
            by_length = np.argsort(tokens.lengths, kind="stable")
            for batch_start in range(0, len(by_length), self._batch_size):
                rows = by_length[batch_start : batch_start + self._batch_size]
                embeddings[window_start + rows] = self._run(tokens.take(rows))
        return embeddings

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
