"""A dual encoder's towers applied to whole splits in eval mode, and its in-memory retrieval
metrics (see :mod:`training.trainer.retrieval`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt
import torch

from encoders.image_preprocess import PixelBatch
from encoders.text_encoder import TokenBatch
from training.trainer.corpus import CaptionedImages
from training.trainer.models import DualEncoder
from training.trainer.retrieval import Metrics, retrieval_metrics

_EMBED_BATCH: Final = 512


def embed_tokens(model: DualEncoder, batch: TokenBatch) -> torch.Tensor:
    """The text tower on a token batch: float32 ``[n, dim]``."""
    embeddings: torch.Tensor = model.text(
        torch.from_numpy(batch.input_ids), torch.from_numpy(batch.attention_mask)
    )
    return embeddings


def embed_captions(
    model: DualEncoder, tokens: TokenBatch, *, batch_size: int = _EMBED_BATCH
) -> npt.NDArray[np.float32]:
    """float32 ``[n, dim]`` text embeddings of every row of ``tokens`` (model in eval mode)."""
    model.eval()
    rows = np.arange(len(tokens.input_ids))
    parts: list[npt.NDArray[np.float32]] = []
    with torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            parts.append(embed_tokens(model, tokens.take(rows[start : start + batch_size])).numpy())
    return _stack(parts, model.architecture.dim)


def embed_pixels(
    model: DualEncoder, pixels: PixelBatch, *, batch_size: int = _EMBED_BATCH
) -> npt.NDArray[np.float32]:
    """float32 ``[n, dim]`` image embeddings of preprocessed ``pixels`` (model in eval mode)."""
    model.eval()
    parts: list[npt.NDArray[np.float32]] = []
    with torch.inference_mode():
        for start in range(0, len(pixels), batch_size):
            parts.append(model.image(torch.from_numpy(pixels[start : start + batch_size])).numpy())
    return _stack(parts, model.architecture.dim)


def evaluate(
    model: DualEncoder,
    split: CaptionedImages,
    pixels: PixelBatch,
    tokens: TokenBatch,
    *,
    include_t2t: bool = True,
) -> dict[str, Metrics]:
    """In-memory i2t / t2i (/ t2t) metrics of ``model`` on ``split`` (see ``retrieval``)."""
    return retrieval_metrics(
        embed_pixels(model, pixels),
        embed_captions(model, tokens),
        split.caption_image,
        include_t2t=include_t2t,
    )


def _stack(parts: Sequence[npt.NDArray[np.float32]], dim: int) -> npt.NDArray[np.float32]:
    if not parts:
        return np.zeros((0, dim), dtype=np.float32)
    stacked: npt.NDArray[np.float32] = np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)
    return stacked
